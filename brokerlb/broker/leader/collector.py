"""The garbage collector around the leader's long-lived state.

CPython's cyclic collector walks every tracked object of a generation when it collects it. The
leader's load data at 1,000 brokers x 100,000 bundles is millions of objects that live for
hours; each full collection walked them all (about 300-400 ms, roughly one cycle in ten in
``benchmarks/bench_leader_cycle.py``), and the young collections walked what the last refresh
had just promoted. The broker process therefore takes its long-lived objects out of the
collector's view (``gc.freeze``) once they are built:

* **after each leader refresh** (:meth:`LoadManager.refresh
  <brokerlb.broker.leader.load_manager.LoadManager.refresh>`): the young generations are collected
  (what the refresh allocated and already dropped), then ``gc.freeze()`` moves every object
  alive into the permanent generation, which no collection walks. The first time, after the
  cold start, a full collection comes first (its garbage is already old). A refresh that
  placements wait for (a new leader's clean-up of a dead broker's bundles) leaves this to the
  next refresh, once, so they do not wait for the pause. Objects frozen
  earlier are still freed by reference counting when the leader drops them (a replaced report,
  a gone bundle): freezing never keeps alive what has no reference left;
* what freezing cannot reclaim is *cyclic* garbage that was frozen (a cycle promoted to the
  old generation between two refreshes and dropped before the next freeze; about one object
  per broker per cycle at 1,000 brokers: a placement context and its view refer to each other)
  or that forms among frozen objects later. To bound it, every ``check_every`` (64) refreshes
  the frozen population is counted (``gc.get_freeze_count`` walks the list, ~50 ms at a million
  objects: not at every refresh); when it has grown to ``regrow`` (2) times what it was after
  the last full collection, everything is unfrozen, collected once and frozen again -- one
  full pause, at most once per doubling of the leader's state.

The policy is the process's, not a library's: only the process that owns its collector (the
``brokerlb broker`` / ``standalone`` commands, :func:`brokerlb.cli.serve.run_until_signalled`,
and the benchmarks that measure them) turns it on with :func:`own_collector`; brokers started
inside another program (tests, embedders) leave the collector alone.
"""

from __future__ import annotations

import gc

__all__ = ["LongLivedFreezer", "own_collector", "after_leader_refresh", "FREEZER"]


class LongLivedFreezer:
    """Freeze the objects alive after a leader refresh (module docstring)."""

    def __init__(self, *, regrow: float = 2.0, check_every: int = 64) -> None:
        if not regrow > 1.0:
            raise ValueError(f"regrow must be above 1, got {regrow!r}")
        self.enabled = False
        self.regrow = regrow
        self.check_every = check_every
        #: frozen objects right after the last full reclaim
        self.floor = 1
        self.freezes = 0
        self.reclaims = 0

    def after_refresh(self) -> None:
        if not self.enabled:
            return
        if self.freezes == 0:
            self.reclaim()  # the cold start's garbage is in the old generation: collect it all once
            return
        gc.collect(1)  # the young generations: what the refresh allocated and dropped
        gc.freeze()
        self.freezes += 1
        if self.freezes % self.check_every == 0:
            # gc.get_freeze_count() walks the frozen list (~50 ns an object): not at every refresh
            if gc.get_freeze_count() > self.regrow * self.floor:
                self.reclaim()

    def reclaim(self) -> None:
        """Unfreeze, collect everything once (frozen cyclic garbage included), freeze again."""
        gc.unfreeze()
        gc.collect()
        gc.freeze()
        self.freezes += 1
        self.reclaims += 1
        self.floor = max(1, gc.get_freeze_count())


#: the process's one policy
FREEZER = LongLivedFreezer()


def own_collector() -> None:
    """This process owns its collector: freeze the long-lived state after each leader refresh."""
    FREEZER.enabled = True


def after_leader_refresh() -> None:
    """Called by the leader's refresh; does nothing unless :func:`own_collector` was called."""
    FREEZER.after_refresh()
