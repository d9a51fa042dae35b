"""KIP-848's group coordinator as a pure state machine: group epoch, target assignment, member reconciliation.

The consumer group protocol of Kafka 4.x (``group.protocol=consumer``), without
I/O: :class:`ConsumerGroupCoordinator` takes heartbeats and clock ticks and
answers with member epochs and assignments. The store shell
(:mod:`brokerlb.kafka.group.reconciliation`) carries the heartbeats; tests drive
it directly with explicit times.

Epochs:

* the **group epoch** rises when a member joins, leaves, is fenced or changes its
  subscription, and when a subscribed topic's partition count changes;
* the **target assignment epoch** is the group epoch the target was computed
  for: when the group epoch is ahead, the next heartbeat recomputes the target
  with the server-side assignor (``uniform`` by default), whose ``owned`` input is
  the previous target;
* each member's **member epoch** is the target epoch it has reconciled to.

Reconciliation (Kafka's ``CurrentAssignmentBuilder``), on each heartbeat of a
member whose epoch is behind, or which is waiting:

* ``assigned = current & target``, ``pending_revocation = current - target``,
  ``pending_assignment = target - assigned - unreleased`` where *unreleased* are
  partitions another member still holds (assigned to it or pending its revocation);
* something to revoke -> ``UNREVOKED_PARTITIONS``, the epoch stays; the heartbeat
  response's assignment leaves those partitions out, which tells the member to
  revoke them, and the rebalance timeout starts; once a heartbeat reports them
  gone, reconcile again;
* else, something to assign -> the new partitions join the assignment, epoch =
  target epoch, ``UNRELEASED_PARTITIONS`` if some target partitions are still
  held elsewhere, else ``STABLE``;
* else ``UNRELEASED_PARTITIONS`` (waiting) or ``STABLE``, epoch = target epoch.

So a partition is given to a member only when no other member holds it.

Timeouts (:meth:`ConsumerGroupCoordinator.tick`): a member not heard from for
``session_timeout_s`` (``group.consumer.session.timeout.ms``, 45 s) is fenced; a
member that has not revoked within its ``rebalance_timeout_s`` (the consumer's
``max.poll.interval.ms``, 300 s) of being asked is fenced. Fencing removes the
member and frees its partitions at once (Kafka's behaviour). A member's own
lease (:class:`MemberLease`) makes that safe: it stops using its partitions by
the same deadlines counted from when it *sent* the heartbeat, which is no later
than when the coordinator received it.

Heartbeat errors (Kafka's): ``UNKNOWN_MEMBER_ID`` (not a member: rejoin with
epoch 0), ``FENCED_MEMBER_EPOCH`` (the epoch is neither the member's current one
nor its previous one with a consistent owned set: drop everything, rejoin).
``member_epoch`` 0 joins, -1 leaves.

Worked example: A owns t0-0..3 at epoch 1; B joins (group epoch 2). A's next
heartbeat: target A [0,1], B [2,3] -> A is UNREVOKED_PARTITIONS (keeps [0,1],
must revoke [2,3]); B's: UNRELEASED_PARTITIONS at epoch 2 with nothing. A reports
[0,1]: STABLE at epoch 2. B's next heartbeat: [2,3], STABLE at epoch 2.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from brokerlb.errors import InvalidConfigError
from brokerlb.kafka.assignors import (
    GroupSnapshot,
    Member,
    PartitionAssignor,
    TopicPartition,
    get_assignor,
)

__all__ = [
    "JOIN_EPOCH",
    "LEAVE_EPOCH",
    "ConsumerGroupCoordinator",
    "Fenced",
    "HeartbeatError",
    "HeartbeatRequest",
    "HeartbeatResponse",
    "MemberLease",
    "MemberRecord",
    "MemberState",
    "next_member_state",
]

#: ``ConsumerGroupHeartbeatRequest.memberEpoch`` values with a meaning of their own.
JOIN_EPOCH = 0
LEAVE_EPOCH = -1


class MemberState(enum.Enum):
    """``MemberState`` of Kafka's group coordinator (consumer groups)."""

    STABLE = "STABLE"
    UNREVOKED_PARTITIONS = "UNREVOKED_PARTITIONS"
    UNRELEASED_PARTITIONS = "UNRELEASED_PARTITIONS"


class HeartbeatError(enum.Enum):
    UNKNOWN_MEMBER_ID = "UNKNOWN_MEMBER_ID"
    FENCED_MEMBER_EPOCH = "FENCED_MEMBER_EPOCH"


@dataclass(frozen=True)
class MemberRecord:
    """The coordinator's view of one member."""

    member_id: str
    member_epoch: int
    previous_member_epoch: int
    state: MemberState
    subscription: tuple[str, ...]
    assigned: frozenset[TopicPartition] = frozenset()
    pending_revocation: frozenset[TopicPartition] = frozenset()
    rebalance_timeout_s: float = 300.0

    def holds(self) -> frozenset[TopicPartition]:
        """Partitions this member may still be using: assigned or not yet revoked."""
        return self.assigned | self.pending_revocation


def next_member_state(
    member: MemberRecord,
    target_epoch: int,
    target: frozenset[TopicPartition],
    held_by_others: Mapping[TopicPartition, str],
    owned: frozenset[TopicPartition] | None,
) -> MemberRecord:
    """``CurrentAssignmentBuilder.build``: the member's next state towards ``target``.

    ``owned`` is what the member reported in this heartbeat (``None``: not reported).
    """
    if member.state is MemberState.STABLE and member.member_epoch == target_epoch:
        return member
    if member.state is MemberState.UNREVOKED_PARTITIONS:
        if owned is None or owned & member.pending_revocation:
            return member  # still holds some of what it must revoke
    assigned = member.assigned & target
    revoke = member.assigned - assigned
    wanted = target - assigned
    unreleased = frozenset(
        tp for tp in wanted if held_by_others.get(tp, member.member_id) != member.member_id
    )
    give = wanted - unreleased
    if revoke:
        return replace(
            member,
            state=MemberState.UNREVOKED_PARTITIONS,
            assigned=assigned,
            pending_revocation=revoke,
        )
    epoch = member.member_epoch if member.member_epoch == target_epoch else target_epoch
    return replace(
        member,
        member_epoch=epoch,
        previous_member_epoch=member.member_epoch
        if epoch != member.member_epoch
        else member.previous_member_epoch,
        state=MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE,
        assigned=assigned | give,
        pending_revocation=frozenset(),
    )


@dataclass(frozen=True)
class HeartbeatRequest:
    """``ConsumerGroupHeartbeatRequest`` (the fields the protocol needs)."""

    member_id: str
    member_epoch: int
    subscription: tuple[str, ...] | None = None  # None: unchanged
    owned: frozenset[TopicPartition] | None = None  # None: not reported
    rebalance_timeout_s: float | None = None  # None: unchanged (300 s on joining)


@dataclass(frozen=True)
class HeartbeatResponse:
    member_id: str
    member_epoch: int
    error: HeartbeatError | None = None
    assignment: frozenset[TopicPartition] | None = None
    heartbeat_interval_s: float = 5.0
    #: not in Kafka's response: the member's state, for measurement and tests
    state: MemberState | None = None


@dataclass(frozen=True)
class Fenced:
    member_id: str
    reason: str
    partitions: frozenset[TopicPartition]


@dataclass
class ConsumerGroupCoordinator:
    """One consumer group's coordinator state (pure; times are explicit seconds)."""

    group_id: str
    assignor: PartitionAssignor = field(default_factory=lambda: get_assignor("uniform"))
    session_timeout_s: float = 45.0
    heartbeat_interval_s: float = 5.0
    partitions: dict[str, int] = field(default_factory=dict)
    group_epoch: int = 0
    target_epoch: int = 0
    target: dict[str, frozenset[TopicPartition]] = field(default_factory=dict)
    members: dict[str, MemberRecord] = field(default_factory=dict)
    last_seen: dict[str, float] = field(default_factory=dict)
    revocation_deadline: dict[str, float] = field(default_factory=dict)
    #: partition -> member holding it (assigned or pending revocation)
    holder: dict[TopicPartition, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.session_timeout_s <= 0 or self.heartbeat_interval_s <= 0:
            raise InvalidConfigError(
                "group.consumer.session.timeout.ms",
                self.session_timeout_s,
                "session timeout and heartbeat interval must be > 0",
            )
        if self.heartbeat_interval_s >= self.session_timeout_s:
            raise InvalidConfigError(
                "group.consumer.heartbeat.interval.ms",
                self.heartbeat_interval_s,
                "must be lower than the session timeout",
            )

    # ------------------------------------------------------------------ inputs

    def set_partitions(self, counts: Mapping[str, int]) -> None:
        """Topic metadata changed (partitions added, topics created or deleted)."""
        subscribed = {t for m in self.members.values() for t in m.subscription}
        if any(self.partitions.get(t) != counts.get(t) for t in subscribed):
            self.group_epoch += 1
        self.partitions = dict(counts)

    def heartbeat(self, request: HeartbeatRequest, now: float) -> HeartbeatResponse:
        mid = request.member_id
        if request.member_epoch == LEAVE_EPOCH:
            if mid in self.members:
                self._remove(mid)
            return HeartbeatResponse(mid, LEAVE_EPOCH, heartbeat_interval_s=self.heartbeat_interval_s)
        member = self.members.get(mid)
        if request.member_epoch == JOIN_EPOCH:
            if member is not None:  # rejoining under the same id: it has dropped everything
                self._remove(mid)
            member = MemberRecord(
                mid,
                0,
                0,
                MemberState.STABLE,
                tuple(sorted(set(request.subscription or ()))),
                rebalance_timeout_s=request.rebalance_timeout_s or 300.0,
            )
            self.members[mid] = member
            self.group_epoch += 1
        elif member is None:
            return self._error(mid, request.member_epoch, HeartbeatError.UNKNOWN_MEMBER_ID)
        elif request.member_epoch != member.member_epoch and not (
            request.member_epoch == member.previous_member_epoch
            and request.owned is not None
            and request.owned <= member.holds()
        ):
            self._remove(mid)  # a zombie: its epoch is stale
            return self._error(mid, request.member_epoch, HeartbeatError.FENCED_MEMBER_EPOCH)
        self.last_seen[mid] = now
        if request.subscription is not None:
            subscription = tuple(sorted(set(request.subscription)))
            if subscription != member.subscription:
                member = replace(member, subscription=subscription)
                self.members[mid] = member
                self.group_epoch += 1
        if (
            request.rebalance_timeout_s is not None
            and member.rebalance_timeout_s != request.rebalance_timeout_s
        ):
            member = replace(member, rebalance_timeout_s=request.rebalance_timeout_s)
            self.members[mid] = member
        self._maybe_compute_target()
        member = self._reconcile(mid, request.owned, now)
        return HeartbeatResponse(
            mid,
            member.member_epoch,
            assignment=member.assigned,
            heartbeat_interval_s=self.heartbeat_interval_s,
            state=member.state,
        )

    def tick(self, now: float) -> list[Fenced]:
        """Fence members past their session timeout or their rebalance (revocation) timeout."""
        fenced = []
        for mid in sorted(self.members):
            reason = None
            if now - self.last_seen.get(mid, now) > self.session_timeout_s:
                reason = f"session timeout ({self.session_timeout_s:g} s without a heartbeat)"
            elif mid in self.revocation_deadline and now > self.revocation_deadline[mid]:
                reason = (
                    f"rebalance timeout ({self.members[mid].rebalance_timeout_s:g} s "
                    "without revoking its partitions)"
                )
            if reason is not None:
                fenced.append(Fenced(mid, reason, self.members[mid].holds()))
                self._remove(mid)
        return fenced

    # ------------------------------------------------------------------ views

    def snapshot(self) -> GroupSnapshot:
        """The assignor's input: subscriptions and the previous target as ``owned``."""
        members = {
            mid: Member(mid, m.subscription, tuple(sorted(self.target.get(mid, ()))), self.target_epoch)
            for mid, m in self.members.items()
        }
        return GroupSnapshot(members, dict(self.partitions))

    def is_stable(self) -> bool:
        """Every member STABLE at the target epoch, and the target is current (an empty group is stable)."""
        if not self.members:
            return True
        return self.target_epoch == self.group_epoch and all(
            m.state is MemberState.STABLE and m.member_epoch == self.target_epoch
            for m in self.members.values()
        )

    def holdings(self) -> dict[str, frozenset[TopicPartition]]:
        return {mid: m.holds() for mid, m in self.members.items()}

    # ------------------------------------------------------------------ internals

    def _error(self, mid: str, epoch: int, error: HeartbeatError) -> HeartbeatResponse:
        return HeartbeatResponse(mid, epoch, error=error, heartbeat_interval_s=self.heartbeat_interval_s)

    def _remove(self, mid: str) -> None:
        member = self.members.pop(mid)
        for tp in member.holds():
            if self.holder.get(tp) == mid:
                del self.holder[tp]
        self.last_seen.pop(mid, None)
        self.revocation_deadline.pop(mid, None)
        self.group_epoch += 1

    def _maybe_compute_target(self) -> None:
        if self.target_epoch >= self.group_epoch:
            return
        result = self.assignor.assign(self.snapshot())
        self.target = {mid: frozenset(tps) for mid, tps in result.target().items()}
        self.target_epoch = self.group_epoch

    def _reconcile(self, mid: str, owned: frozenset[TopicPartition] | None, now: float) -> MemberRecord:
        before = self.members[mid]
        after = next_member_state(
            before, self.target_epoch, self.target.get(mid, frozenset()), self.holder, owned
        )
        if after is before:
            return before
        for tp in before.holds() - after.holds():
            if self.holder.get(tp) == mid:
                del self.holder[tp]
        for tp in after.holds():
            self.holder[tp] = mid
        if after.state is MemberState.UNREVOKED_PARTITIONS:
            if (
                before.state is not MemberState.UNREVOKED_PARTITIONS
                or before.pending_revocation != after.pending_revocation
            ):
                self.revocation_deadline[mid] = now + after.rebalance_timeout_s
        else:
            self.revocation_deadline.pop(mid, None)
        self.members[mid] = after
        return after


@dataclass
class MemberLease:
    """The member's side of fencing: until when it may use its partitions, by its own clock.

    The coordinator fences a member -- and hands *all* its partitions to others at
    once -- ``session_timeout_s`` after the last heartbeat it *received*, or
    ``rebalance_timeout_s`` after *processing* the heartbeat that asked it to revoke.
    The member counts the same timeouts from when it *sent* those heartbeats, never
    later than the coordinator's times (one machine's monotonic clock, or clocks whose
    skew is below the margin the timeouts leave), so it has stopped by then. It may
    use its partitions until the earliest of:

    * ``sent + session_timeout_s`` of the last answered heartbeat;
    * while a revocation is pending -- from the answer that asked for it until an
      answer to a heartbeat that no longer reported the revoked partitions --
      ``sent + rebalance_timeout_s`` of the earliest heartbeat that first answer
      covers (any of them may have started the coordinator's timer);
    * while a heartbeat is unanswered, ``sent + rebalance_timeout_s`` of the oldest
      unanswered one (its processing may have started a timer it has not heard of).
    """

    session_timeout_s: float
    rebalance_timeout_s: float
    session_ends_at: float = float("-inf")
    revocation_ends_at: float = float("inf")
    #: heartbeat sequence number -> (send time, partitions reported owned), not answered yet
    unanswered: dict[int, tuple[float, frozenset[TopicPartition]]] = field(default_factory=dict)

    def sending(self, seq: int, now: float, owned: Iterable[TopicPartition]) -> None:
        self.unanswered[seq] = (now, frozenset(owned))

    def answered(self, seq: int, assignment: Iterable[TopicPartition]) -> None:
        """The answer to heartbeat ``seq`` (and to every earlier one) arrived with ``assignment``."""
        covered = sorted(s for s in self.unanswered if s <= seq)
        if not covered:
            return  # an older answer than one already handled
        first_sent = self.unanswered[covered[0]][0]
        last_sent, reported = self.unanswered[covered[-1]]
        for s in covered:
            del self.unanswered[s]
        self.session_ends_at = max(self.session_ends_at, last_sent + self.session_timeout_s)
        if reported - frozenset(assignment):  # asked to revoke: the coordinator's timer runs
            self.revocation_ends_at = min(self.revocation_ends_at, first_sent + self.rebalance_timeout_s)
        else:  # it saw us without the revoked partitions and asked for nothing more
            self.revocation_ends_at = float("inf")

    def deadline(self) -> float:
        oldest = min((sent for sent, _ in self.unanswered.values()), default=float("inf"))
        return min(self.session_ends_at, self.revocation_ends_at, oldest + self.rebalance_timeout_s)

    def expired(self, now: float) -> bool:
        return now >= self.deadline()

    def reset(self) -> None:
        """A new membership (after fencing or leaving): nothing is leased."""
        self.session_ends_at = float("-inf")
        self.revocation_ends_at = float("inf")
        self.unanswered.clear()
