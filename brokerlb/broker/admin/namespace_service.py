"""Namespace and bundle administration: Pulsar's ``NamespacesBase`` flows on one broker.

Every bundle operation first decides *who* must do it (Pulsar's
``validateNamespaceBundleOwnership``): the owner; for an unowned bundle, an
operation that changes it (split) first gets it assigned (a lookup), a read-only
one answers 412 "Failed to find ownership". When the owner is another broker the
answer is a :class:`~brokerlb.broker.ownership.redirect.Redirect` (307, ``authoritative`` =
"this broker is the leader"). Unload with ``destinationBroker`` and merge are
decided by the leader first (307 to it from the others). An operator's unload, split and merge
(a request that is not ``authoritative`` and carries no leader epoch) is told to the leader
first (:meth:`NamespaceService.operator_acted`): its balancer holds back on the bundle for the
grace period (docs/balancer.md, "Calm").

=========================  ======================================================================
operation                  rules
=========================  ======================================================================
create namespace           ``bundles.boundaries`` or ``bundles.numBundles`` or the default count;
                           400 bad bundles, 409 exists, 412 bad name
unload bundle              unowned → no-op; owned → one transition of its record (Releasing),
                           the owner closes it; waits until the move settled;
                           ``destinationBroker``: must be active (412 "Not allowed unload
                           namespace bundle to inactive destination broker"); a transfer
                           (:func:`~brokerlb.loadbalance.leader.is_transfer`) names it in the
                           record (an unowned bundle is assigned there); otherwise the leader
                           keeps the destination as a one-shot affinity (307 to the leader)
unload namespace           one bundle unload per bundle
split bundle               ``LARGEST`` / ``HOT`` resolved from the load reports (404 if none);
                           412 unsupported algorithm, empty boundaries for
                           ``specified_positions_divide``, boundaries outside the bundle
merge bundles (brokerlb)   leader only: the parts moved to the broker placement chooses for the
                           merged bundle, then the parts, the merged bundle and the ring in one
                           transaction; 412 not adjacent, 404 unknown bundle
delete bundle              owner: 409 when it has topics (unless ``force``), else release and
                           forget its bundle data; unowned → forget its bundle data
topic hash positions       the owner answers for the topics given (or all it serves)
anti-affinity group        set / get / remove in local policies (compare-and-set)
=========================  ======================================================================
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from brokerlb.admin.client import AsyncAdminClient
from brokerlb.broker.data.topics import TopicRegistry
from brokerlb.broker.identity import BrokerIdentity
from brokerlb.broker.leader.leader_fence import LeaderFence
from brokerlb.broker.ownership.bundles_cache import NamespaceBundlesCache
from brokerlb.broker.ownership.lookup import LookupService
from brokerlb.broker.ownership.owner_actions import OwnerActions, SplitOutcome, parse_split_boundaries
from brokerlb.broker.ownership.ownership_channel import OwnershipChannel
from brokerlb.broker.ownership.redirect import Redirect
from brokerlb.config import ServiceConfig
from brokerlb.coordination import BrokerRegistry, BundleMetadata, LeaderElection, LoadDataStore
from brokerlb.coordination.paths import POLICIES_ROOT
from brokerlb.errors import (
    BrokerLBError,
    BundleNotFoundError,
    ConflictError,
    InvalidBundlesError,
    InvalidInputError,
    InvalidSplitError,
    NamespaceNotFoundError,
    NoBrokerAvailableError,
    NoNodeError,
    PreconditionFailedError,
)
from brokerlb.loadbalance.leader import is_transfer
from brokerlb.loadbalance.operator_actions import OperatorActionKind
from brokerlb.model import NamespaceBundleStats
from brokerlb.naming import NamespaceName, TopicName
from brokerlb.ring import SPECIFIED_POSITIONS_DIVIDE, NamespaceBundle, NamespaceBundles, topic_hash

__all__ = ["NamespaceService", "PlacementControl", "MergeOutcome", "LARGEST", "HOT"]

logger = logging.getLogger(__name__)

LARGEST = "LARGEST"
HOT = "HOT"


class PlacementControl(Protocol):
    """The leader-side placement controls the admin flows need (the broker's load manager)."""

    async def place(self, bundle: NamespaceBundle) -> str: ...

    def set_affinity(self, bundle: str, broker: str) -> None: ...

    def bundles_merged(self, parts: Sequence[str]) -> None: ...

    def block(self, bundles: Sequence[str], why: str) -> None: ...

    def unblock(self, bundles: Sequence[str]) -> None: ...

    def operator_action(
        self, kind: OperatorActionKind, bundle: str, *, source: str | None, destination: str | None
    ) -> None: ...


@dataclass(frozen=True, slots=True)
class MergeOutcome:
    namespace: str
    bundle: str
    broker: str | None

    def to_json(self) -> dict[str, Any]:
        return {"namespace": self.namespace, "bundle": self.bundle, "broker": self.broker}


def parse_policies_body(body: object) -> tuple[int | None, list[Any] | None, dict[str, Any]]:
    """The create-namespace body (Pulsar's ``Policies``): ``(numBundles, boundaries, other fields)``."""
    if body is None:
        return None, None, {}
    if not isinstance(body, dict):
        raise InvalidBundlesError(f"Invalid namespace policies: expected a JSON object, got {body!r}")
    bundles = body.get("bundles")
    if bundles is None:
        return None, None, dict(body)
    if not isinstance(bundles, dict):
        raise InvalidBundlesError(f"Invalid namespace policies: 'bundles' must be an object, got {bundles!r}")
    boundaries = bundles.get("boundaries")
    if boundaries is not None and not isinstance(boundaries, list):
        raise InvalidBundlesError(f"Invalid bundles: 'boundaries' must be a list, got {boundaries!r}")
    num = bundles.get("numBundles")
    if num is not None and (isinstance(num, bool) or not isinstance(num, int)):
        raise InvalidBundlesError(f"Invalid bundles: 'numBundles' must be an integer, got {num!r}")
    if not boundaries:
        boundaries = None
        if num is not None and num <= 0:
            num = None  # Pulsar: numBundles <= 0 and no boundaries -> the default count
    return num, boundaries, {k: v for k, v in body.items() if k != "bundles"}


class NamespaceService:
    """The namespace/bundle admin operations of one broker."""

    def __init__(
        self,
        identity: BrokerIdentity,
        conf: ServiceConfig,
        *,
        metadata: BundleMetadata,
        bundles: NamespaceBundlesCache,
        channel: OwnershipChannel,
        lookup: LookupService,
        actions: OwnerActions,
        registry: BrokerRegistry,
        election: LeaderElection,
        placement: PlacementControl,
        topics: TopicRegistry,
        load_data: LoadDataStore,
        admin: AsyncAdminClient,
        leader_fence: LeaderFence,
    ) -> None:
        self.identity = identity
        #: the seam of the leader's writes (a leader's command admitted; an operator's merge fenced)
        self.leader_fence = leader_fence
        self.conf = conf
        self.metadata = metadata
        self.bundles = bundles
        self.channel = channel
        self.lookup = lookup
        self.actions = actions
        self.registry = registry
        self.election = election
        self.placement = placement
        self.topics = topics
        self.load_data = load_data
        self.admin = admin

    # ------------------------------------------------------------------ namespaces
    async def create_namespace(self, namespace: str, body: object = None) -> NamespaceBundles:
        ns = NamespaceName.parse(namespace)
        num, boundaries, extra = parse_policies_body(body)
        return await self.metadata.create_namespace(
            ns, num_bundles=num, boundaries=boundaries, policies=extra
        )

    async def list_namespaces(self, tenant: str) -> list[str]:
        try:
            names = await self.metadata.store.children(f"{POLICIES_ROOT}/{tenant}")
        except NoNodeError:
            return []
        return [f"{tenant}/{name}" for name in sorted(names)]

    async def get_bundles(self, namespace: str) -> dict[str, Any]:
        """The bundles as the store has them now (404 unknown namespace).

        Read through, not from the watch-fed cache: after a split or merge done by another
        broker, the admin who asked for it reads it back at once (the cache may be a watch
        notification behind). The cache is refreshed on the way.
        """
        await self.bundles.get(namespace)
        return (await self.bundles.refresh(namespace)).to_json()

    async def unload_namespace(self, namespace: str) -> None:
        """One bundle unload per bundle, each through its owner (Pulsar issues them via its admin client)."""
        bundles = await self.bundles.get(namespace)
        for bundle in bundles:
            await self.operator_acted(OperatorActionKind.UNLOAD, bundle)
        await asyncio.gather(*(self._unload_anywhere(b) for b in bundles))

    # ------------------------------------------------------------------ bundles
    async def bundle(self, namespace: str, bundle_range: str) -> NamespaceBundle:
        """A current bundle of the namespace (404 unknown namespace or range, 412 malformed range)."""
        return (await self.bundles.get(namespace)).get_bundle(bundle_range)

    async def unload_bundle(
        self,
        namespace: str,
        bundle_range: str,
        *,
        authoritative: bool = False,
        destination: str | None = None,
        leader_epoch: int | None = None,
    ) -> Redirect | None:
        bundle = await self.bundle(namespace, bundle_range)
        destination = _strip_scheme(destination)
        transfer = is_transfer(self.conf, destination)
        operator = not authoritative and leader_epoch is None
        if destination:
            if destination not in self.registry.available_brokers():
                raise PreconditionFailedError(
                    "Not allowed unload namespace bundle to inactive destination broker"
                )
            if not transfer and not authoritative:
                redirect = self._leader_redirect()
                if redirect is not None:
                    return redirect
                self.placement.set_affinity(str(bundle), destination)
        owner = self.channel.owner(bundle).broker
        if operator:
            kind = OperatorActionKind.TRANSFER if destination else OperatorActionKind.UNLOAD
            await self.operator_acted(kind, bundle, source=owner, destination=destination)
        if owner is None:
            logger.info("Namespace bundle is not owned by any broker %s", bundle)
            if transfer and destination:
                written = await self.channel.assign(
                    str(bundle),
                    destination,
                    by=self.identity.broker_id,
                    reason="admin: assigned to the destination",
                )
                await self.channel.seen(str(bundle), written.version)
                await self.channel.settled(bundle)
            return None
        if destination == owner and transfer:
            raise PreconditionFailedError(
                f"Bundle {bundle} is already owned by the destination broker {destination}"
            )
        await self._admit(str(bundle), leader_epoch, "unload")
        await self.actions.unload(
            bundle,
            destination if transfer else None,
            leader_epoch=leader_epoch,
            by="leader" if leader_epoch is not None else "admin",
            reason="admin unload" + (f" to {destination}" if destination else ""),
        )
        return None

    async def _admit(self, bundle: str, leader_epoch: int | None, what: str) -> None:
        await self.leader_fence.admit(bundle, leader_epoch, what)

    async def split_bundle(
        self,
        namespace: str,
        bundle_name: str,
        *,
        authoritative: bool = False,
        unload: bool = False,
        algorithm: str | None = None,
        body: object = None,
        leader_epoch: int | None = None,
    ) -> Redirect | SplitOutcome:
        self._check_split_request(algorithm, body)
        positions = parse_split_boundaries(body)
        bundles = await self.bundles.get(namespace)
        bundle = bundles.get_bundle(self._named_bundle(bundles, bundle_name))
        if not authoritative and leader_epoch is None:
            source = self.channel.owner(bundle).broker
            await self.operator_acted(OperatorActionKind.SPLIT, bundle, source=source)
        redirect = await self._owner_or_redirect(bundle, authoritative, read_only=False)
        if redirect is not None:
            return redirect
        await self._admit(str(bundle), leader_epoch, "split")
        return await self.actions.split(
            bundle, algorithm=algorithm, positions=positions, unload=unload, leader_epoch=leader_epoch
        )

    async def merge_bundles(
        self, namespace: str, body: object, *, authoritative: bool = False
    ) -> Redirect | MergeOutcome:
        """brokerlb extension: merge adjacent bundles (decided and driven by the leader)."""
        ranges = _merge_ranges(body)
        parts = await self._merge_parts_of(namespace, ranges)
        redirect = self._leader_redirect()
        if redirect is not None:
            return redirect
        merged = (await self.bundles.get(namespace)).merged_bundle(parts)
        await self.operator_acted(OperatorActionKind.MERGE, merged)
        return await self._merge(namespace, parts, self.leader_fence.epoch())

    async def operator_acted(
        self,
        kind: OperatorActionKind,
        bundle: NamespaceBundle,
        *,
        source: str | None = None,
        destination: str | None = None,
    ) -> None:
        """Tell the leader an operator is about to act on ``bundle`` (its balancer respects it for
        the grace period): recorded here when this broker leads (or none is known), else sent to
        the leader (best effort: the action goes ahead if the leader cannot be told)."""
        leader = self.election.leader
        if self.election.is_leader or leader is None or leader.broker_id == self.identity.broker_id:
            self.placement.operator_action(kind, str(bundle), source=source, destination=destination)
            return
        try:
            await self.admin.at(_base(leader.service_url)).record_operator_action(
                str(bundle.namespace), bundle.range, kind.value, source=source, destination=destination
            )
        except BrokerLBError as exc:
            logger.warning(
                "Could not tell the leader of the operator's %s of %s: %s", kind.value, bundle, exc
            )

    async def record_operator_action(
        self, namespace: str, bundle_range: str, body: object
    ) -> Redirect | None:
        """brokerlb extension (broker to broker): the leader records an operator's action on a
        bundle another broker received (``{"kind", "source", "destination"}``)."""
        if not isinstance(body, dict):
            raise InvalidInputError(f"an operator action must be a JSON object, got {body!r}")
        raw_kind = body.get("kind")
        try:
            kind = OperatorActionKind(str(raw_kind))
        except ValueError:
            known = ", ".join(k.value for k in OperatorActionKind)
            raise InvalidInputError(f"unknown operator action kind {raw_kind!r} (one of {known})") from None
        names = {}
        for key in ("source", "destination"):
            value = body.get(key)
            if value is not None and not isinstance(value, str):
                raise InvalidInputError(f"operator action {key!r} must be a broker id, got {value!r}")
            names[key] = value
        bundle = NamespaceBundle.parse(f"{NamespaceName.parse(namespace)}/{bundle_range}")
        redirect = self._leader_redirect()
        if redirect is not None:
            return redirect
        self.placement.operator_action(
            kind, str(bundle), source=names["source"], destination=names["destination"]
        )
        return None

    async def merge_parts(
        self, namespace: str, ranges: list[str], *, leader_epoch: int | None
    ) -> MergeOutcome:
        """The leader's own merge of adjacent ``ranges`` (a balancing strategy's decision), every
        write conditional on ``leader_epoch``, the epoch it was decided under."""
        return await self._merge(namespace, await self._merge_parts_of(namespace, ranges), leader_epoch)

    async def _merge_parts_of(self, namespace: str, ranges: list[str]) -> list[NamespaceBundle]:
        bundles = await self.bundles.get(namespace)
        parts = [bundles.get_bundle(r) for r in ranges]
        bundles.merged_bundle(parts)  # validates adjacency before anything is unloaded
        return parts

    async def _merge(
        self, namespace: str, parts: list[NamespaceBundle], leader_epoch: int | None
    ) -> MergeOutcome:
        """Choose the merged bundle's broker, move the parts there (placements of the parts are
        refused meanwhile), commit the merge (parts, merged bundle and ring in one transaction),
        forget the parts' histories -- each write conditional on ``leader_epoch``."""
        names = [str(p) for p in parts]
        merged = (await self.bundles.get(namespace)).merged_bundle(parts)
        broker = await self.placement.place(merged)
        self.placement.block(names, "being merged")
        try:
            await self.actions.merge(parts, merged, broker, leader_epoch=leader_epoch)
            self.placement.bundles_merged(names)
            for part in parts:
                await self.load_data.delete_bundle_data(part, leader_epoch=leader_epoch)
        finally:
            self.placement.unblock(names)
        logger.info("Merged %s into %s (on %s)", ", ".join(p.range for p in parts), merged, broker)
        return MergeOutcome(str(merged.namespace), merged.range, broker)

    async def delete_bundle(
        self, namespace: str, bundle_range: str, *, force: bool = False, authoritative: bool = False
    ) -> Redirect | None:
        bundle = await self.bundle(namespace, bundle_range)
        owner = self.channel.owner(bundle).broker
        if owner is not None and owner != self.identity.broker_id:
            return Redirect(self.lookup.web_url(owner), authoritative=self.election.is_leader)
        if owner is not None:
            topics = self.topics.topics_in(str(bundle))
            if topics and not force:
                raise ConflictError(f"Cannot delete non empty bundle {bundle} ({len(topics)} topics)")
            await self.actions.unload(bundle, reason="bundle deleted")
        await self.load_data.delete_bundle_data(bundle)
        return None

    async def topic_hash_positions(
        self, namespace: str, bundle_range: str, topics: Sequence[str]
    ) -> Redirect | dict[str, Any]:
        bundle = await self.bundle(namespace, bundle_range)
        redirect = await self._owner_or_redirect(bundle, False, read_only=True)
        if redirect is not None:
            return redirect
        served = self.topics.topics_in(str(bundle))
        positions: dict[str, int] = {}
        if not topics:
            positions = {t: topic_hash(t) for t in served}
        for given in topics:
            name = TopicName.parse(given)
            if name.namespace != bundle.namespace:
                continue
            if name.is_partitioned or not any(
                TopicName.parse(t).partitioned_topic_name == name for t in served
            ):
                if bundle.includes(name):
                    positions[str(name)] = topic_hash(str(name))
            else:
                for t in served:
                    if TopicName.parse(t).partitioned_topic_name == name:
                        positions[t] = topic_hash(t)
        return {"namespace": str(bundle.namespace), "bundle": bundle.range, "topicHashPositions": positions}

    # ------------------------------------------------------------------ anti-affinity
    async def set_anti_affinity_group(self, namespace: str, body: object) -> None:
        group = _group_name(body)
        await self.metadata.set_anti_affinity_group(namespace, group)

    async def get_anti_affinity_group(self, namespace: str) -> str | None:
        ns = NamespaceName.parse(namespace)
        if not await self.metadata.namespace_exists(ns):
            raise NamespaceNotFoundError(f"Namespace {ns} does not exist")
        return await self.metadata.get_anti_affinity_group(ns)

    async def remove_anti_affinity_group(self, namespace: str) -> None:
        await self.metadata.set_anti_affinity_group(namespace, None)

    async def anti_affinity_namespaces(self, cluster: str, group: str) -> list[str]:
        if cluster != self.identity.cluster:
            raise PreconditionFailedError(f"Cluster {cluster} does not exist")
        if not group:
            raise PreconditionFailedError("anti-affinity group can't be empty")
        found = []
        store = self.metadata.store
        try:
            tenants = await store.children(POLICIES_ROOT)
        except NoNodeError:
            return []
        for tenant in tenants:
            for ns in await self.list_namespaces(tenant):
                local = await self.metadata.read_local_policies(ns)
                if (
                    local is not None
                    and (local[0].namespace_anti_affinity_group or "").lower() == group.lower()
                ):
                    found.append(ns)
        return found

    # ------------------------------------------------------------------ internals
    def _leader_redirect(self) -> Redirect | None:
        """``None`` if this broker leads; else a redirect to the leader (412 if there is none)."""
        if self.election.is_leader:
            return None
        leader = self.election.leader
        if leader is None:
            raise PreconditionFailedError("The current leader is empty.")
        if leader.broker_id == self.identity.broker_id:
            raise NoBrokerAvailableError("This broker's leadership is in doubt; try again")
        return Redirect(_base(leader.service_url), authoritative=False)

    async def _owner_or_redirect(
        self, bundle: NamespaceBundle, authoritative: bool, read_only: bool
    ) -> Redirect | None:
        owner = self.channel.owner(bundle).broker
        if owner is None:
            if read_only:
                raise PreconditionFailedError(f"Failed to find ownership for ServiceUnit:{bundle}")
            result = await self.lookup.resolve(bundle, authoritative=authoritative)
            if result.redirect:
                return Redirect(self.lookup.web_url(result.broker), result.authoritative)
            owner = result.broker
        if owner == self.identity.broker_id:
            return None
        return Redirect(self.lookup.web_url(owner), authoritative=self.election.is_leader)

    def _named_bundle(self, bundles: NamespaceBundles, name: str) -> str:
        if name not in (LARGEST, HOT):
            return name
        found = self._largest(bundles) if name == LARGEST else self._hottest(bundles)
        if found is None:
            raise BundleNotFoundError(f"Bundle range {name} not found")
        return found

    def _bundle_stats(self, bundles: NamespaceBundles) -> dict[str, NamespaceBundleStats]:
        """Latest reported stats of the namespace's bundles, across all brokers' load reports."""
        current = {str(b) for b in bundles}
        stats: dict[str, NamespaceBundleStats] = {}
        for broker in self.registry.available_brokers():
            report = self.registry.report(broker)
            if report is None:
                continue
            for name in current.intersection(report.last_stats):
                stats[name] = report.last_stats[name]
        return stats

    def _largest(self, bundles: NamespaceBundles) -> str | None:
        """Most topics; ties go to the first in ring order (Pulsar: strictly greater wins)."""
        stats = self._bundle_stats(bundles)
        best, most = None, 0
        for b in bundles:
            found = stats.get(str(b))
            count = 0 if found is None else found.topics
            if count > most:
                best, most = b.range, count
        return best

    def _hottest(self, bundles: NamespaceBundles) -> str | None:
        """Highest msgThroughputIn + msgThroughputOut (Pulsar's getBundleWithHighestThroughput)."""
        stats = self._bundle_stats(bundles)
        best, top = None, 0.0
        for b in bundles:
            found = stats.get(str(b))
            throughput = 0.0 if found is None else found.msg_throughput_in + found.msg_throughput_out
            if throughput > top:
                best, top = b.range, throughput
        return best

    def _check_split_request(self, algorithm: str | None, body: object) -> None:
        supported = list(self.conf.supportedNamespaceBundleSplitAlgorithms)
        if algorithm:
            if algorithm not in supported:
                raise InvalidSplitError(
                    f"Unsupported namespace bundle split algorithm, supported algorithms are {supported}"
                )
            if algorithm.lower() == SPECIFIED_POSITIONS_DIVIDE and not body:
                raise InvalidSplitError(
                    "With specified_positions_divide split algorithm, splitBoundaries must not be empty"
                )

    async def _unload_anywhere(self, bundle: NamespaceBundle) -> None:
        await self.actions.unload(bundle, reason="namespace unloaded")


def _base(url: str | None) -> str:
    if not url:
        raise NoBrokerAvailableError("The owner's web service URL is not configured")
    return url.rstrip("/")


def _strip_scheme(broker: str | None) -> str | None:
    if not broker:
        return None
    for prefix in ("http://", "https://"):
        if broker.startswith(prefix):
            return broker[len(prefix) :].rstrip("/")
    return broker.strip()


def _merge_ranges(body: object) -> list[str]:
    if isinstance(body, dict):
        body = body.get("bundles")
    if not isinstance(body, list) or not all(isinstance(r, str) for r in body):
        raise InvalidInputError(
            'Merge needs a JSON list of bundle ranges, e.g. ["0x00000000_0x40000000", '
            '"0x40000000_0x80000000"]'
        )
    return list(body)


def _group_name(body: object) -> str:
    if isinstance(body, bytes):
        text = body.decode("utf-8", "replace").strip()
        try:
            decoded = json.loads(text)
        except ValueError:
            decoded = text
        body = decoded
    if not isinstance(body, str) or not body.strip():
        raise PreconditionFailedError("Invalid antiAffinityGroup: expected a non-empty group name")
    return body.strip()
