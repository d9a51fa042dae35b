"""A broker's coordination stack in one object, and a program that runs it and reports on stdout.

:class:`Member` registers a broker and runs for leader (doing guarded "leader work"
while it leads), and creates a namespace with its bundles if asked, emitting one event
dict per thing that happens. (Bundle ownership is not a member's: it is the ownership
table's, reduced by each broker's ownership machine -- :mod:`brokerlb.broker.ownership.ownership_channel`.) Process-level tests run it as a child process and
kill or freeze it::

    python -m brokerlb.coordination.tools.member --store zk:127.0.0.1:2181 \\
        --broker-id b1:8080 --session-timeout 2 --namespace t/ns --bundles 16

Each event is one JSON line on stdout, flushed at once, e.g.
``{"event": "leader", "epoch": 1, "t": 1234.5}`` (``t`` is the member's clock's
``monotonic()`` -- in the program, ``time.monotonic()``, which is one system-wide clock
on Linux, so times from several processes compare).
Leader work is ``{"event": "leader-work", "epoch": 1, "seq": 7, "t_checked": ...}``:
emitted only after :meth:`LeaderLease.check` passed at ``t_checked``.

SIGTERM (or end of stdin) stops the member gracefully: node deleted, leadership handed over.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import signal
import sys
import time
from collections.abc import Callable
from typing import Any

from brokerlb.clock import Clock
from brokerlb.coordination.bundle_metadata import BundleMetadata
from brokerlb.coordination.election import LeaderElection, LeaderLease, LeadershipChange
from brokerlb.coordination.factory import open_store
from brokerlb.coordination.records import LeaderBroker
from brokerlb.coordination.registry import BrokerRegistry, RegistryEvent
from brokerlb.coordination.store import MetadataStore, SessionEvent
from brokerlb.errors import ConflictError, LeadershipLostError

__all__ = ["Member", "main"]

Emit = Callable[[dict[str, Any]], None]


class Member:
    """Registry + election + ownership for one broker id on one store session."""

    def __init__(
        self,
        store: MetadataStore,
        broker_id: str,
        emit: Emit,
        *,
        namespace: str | None = None,
        bundles: int = 0,
        leader_work_interval: float = 0.1,
        clock: Clock | None = None,
    ) -> None:
        self.store = store
        self.broker_id = broker_id
        self.emit = emit
        self.namespace = namespace
        self.num_bundles = bundles
        self.leader_work_interval = leader_work_interval
        #: The store's clock unless given: leader-work pauses and ``t_checked`` stamps.
        self.clock = clock if clock is not None else store.clock
        self.web_url = f"http://{broker_id}"
        self.registry = BrokerRegistry(store)
        self.election = LeaderElection(store, LeaderBroker(broker_id, self.web_url), clock=self.clock)
        self._removers: list[Callable[[], None]] = []

    async def start(self) -> None:
        self._removers += [
            self.store.add_session_listener(self._on_session),
            self.election.add_listener(self._on_leadership),
        ]
        await self.registry.start()
        self._removers.append(self.registry.add_listener(self._on_registry))
        await self.registry.register(
            self.broker_id,
            {
                "webServiceUrl": self.web_url,
                "pulsarServiceUrl": f"pulsar://{self.broker_id}",
                "startTimestamp": self.clock.now_ms(),
                "loadReportType": "LocalBrokerData",
            },
        )
        self._removers.append(self.election.run_while_leader(self._leader_work, "member leader work"))
        await self.election.start()
        if self.namespace and self.num_bundles:
            await self._own_namespace()
        self.emit({"event": "ready", "session": self.store.session_id, "leader": self.election.is_leader})

    async def _own_namespace(self) -> None:
        assert self.namespace is not None
        metadata = BundleMetadata(self.store)
        try:
            await metadata.create_namespace(self.namespace, num_bundles=self.num_bundles)
        except ConflictError:
            pass
        bundles = await metadata.get_bundles(self.namespace)
        self.emit({"event": "namespace", "bundles": [str(b) for b in bundles]})

    async def _leader_work(self, lease: LeaderLease) -> None:
        seq = 0
        while True:
            lease.check()  # raises LeadershipLostError once the lease ended: no action after that
            checked = self.clock.monotonic()
            self.emit({"event": "leader-work", "epoch": lease.epoch, "seq": seq, "t_checked": checked})
            seq += 1
            await self.clock.sleep(self.leader_work_interval)

    async def stop(self) -> None:
        """Graceful shutdown: leave the election, unregister."""
        await self.election.close()
        await self.registry.close(unregister=True)
        self._remove_listeners()
        self.emit({"event": "stopped"})

    def abandon(self) -> None:
        """Stop everything without touching the store (the process is dying)."""
        self.election.abandon()
        self._remove_listeners()

    def _remove_listeners(self) -> None:
        for remove in self._removers:
            remove()
        self._removers.clear()

    # ------------------------------------------------------------------ reports
    def _on_session(self, event: SessionEvent) -> None:
        self.emit({"event": "session", "state": event.state.value, "session": event.session_id})

    def _on_leadership(self, change: LeadershipChange) -> None:
        kind = "leader" if change.leading else "lost-leadership"
        self.emit({"event": kind, "epoch": change.epoch, "reason": change.reason})

    def _on_registry(self, event: RegistryEvent) -> None:
        self.emit({"event": f"registry-{event.kind.value}", "broker": event.broker_id})


def _print_event(event: dict[str, Any]) -> None:
    event.setdefault("t", time.monotonic())
    sys.stdout.write(json.dumps(event, sort_keys=True) + "\n")
    sys.stdout.flush()


async def _run(args: argparse.Namespace) -> int:
    store = open_store(
        args.store, session_timeout=args.session_timeout, operation_timeout=args.operation_timeout
    )
    await store.start()
    member = Member(
        store,
        args.broker_id,
        _print_event,
        namespace=args.namespace,
        bundles=args.bundles,
        leader_work_interval=args.leader_work_interval,
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    loop.add_signal_handler(signal.SIGINT, stop.set)
    loop.add_reader(sys.stdin.fileno(), lambda: stop.set() if not sys.stdin.readline() else None)
    try:
        await member.start()
        await stop.wait()
        await member.stop()
    except LeadershipLostError:
        pass
    finally:
        await store.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m brokerlb.coordination.tools.member",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--store", required=True, help="metadata store URL (zk:host:port, memory:name)")
    parser.add_argument("--broker-id", required=True, help="broker id, host:port")
    parser.add_argument("--session-timeout", type=float, default=2.0, help="seconds")
    parser.add_argument("--operation-timeout", type=float, default=10.0, help="seconds")
    parser.add_argument("--namespace", default=None, help="tenant/namespace to create")
    parser.add_argument(
        "--bundles", type=int, default=0, help="bundles of the namespace (created if missing)"
    )
    parser.add_argument(
        "--leader-work-interval", type=float, default=0.1, help="seconds between leader actions"
    )
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    logging.getLogger("brokerlb.coordination.kazoo").setLevel(logging.WARNING)
    return asyncio.run(_run(args))


if __name__ == "__main__":
    sys.exit(main())
