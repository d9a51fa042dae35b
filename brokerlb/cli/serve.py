"""Running brokers from the command line: ``brokerlb broker`` and ``brokerlb standalone``.

Both run until SIGINT (Ctrl-C) or SIGTERM, then stop gracefully: bundles are released
and the brokers deregister before the process exits. uvloop is used when installed.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import signal
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path

import typer

from brokerlb.broker.leader.collector import own_collector
from brokerlb.cli.common import cli_errors, console

__all__ = ["broker", "standalone", "run_until_signalled"]

_CONFIG = typer.Option(None, "--config", "-f", help="broker.conf file (Pulsar's keys)")
_SET = typer.Option([], "--set", help="key=value, overrides the file (repeatable)")
_LOG = typer.Option("warning", "--log-level", help="debug, info, warning or error")


def _logging(level: str) -> None:
    logging.basicConfig(level=level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")


def run_until_signalled(
    start: Callable[[], Awaitable[object]],
    stop: Callable[[], Awaitable[object]],
    *,
    exit_within: float,
) -> bool:
    """Run ``start()``, wait for SIGINT/SIGTERM, then ``stop()`` (on uvloop when available).
    Returns ``False`` when ``stop()`` answered ``False`` (its graceful part was cut short).

    The process exits within ``exit_within`` seconds of the signal whatever happens (a metadata
    store that never answers, a thread that never returns): a guard then logs what happened and
    ends it (exit code 1), as Pulsar's broker halts after ``brokerShutdownTimeoutMs``. A second
    signal ends it at once.

    After start-up every object then alive is moved out of the garbage collector's view
    (``gc.freeze``): full collections no longer walk the imported modules and caches, which
    otherwise shows as multi-millisecond pauses in the lookup latency tail. The process owns its
    collector from then on: the leader's refresh freezes its long-lived state too
    (:mod:`brokerlb.broker.leader.collector`).
    """
    guard: threading.Timer | None = None

    async def main() -> bool:
        nonlocal guard
        done = asyncio.Event()
        loop = asyncio.get_running_loop()

        def on_signal() -> None:
            nonlocal guard
            if done.is_set():
                _exit_now("a second signal")
            done.set()
            guard = threading.Timer(
                exit_within, _exit_now, args=(f"the shutdown still running after {exit_within:.0f} s",)
            )
            guard.daemon = True
            guard.start()

        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, on_signal)
        try:
            await start()
            gc.collect()
            gc.freeze()
            own_collector()
            await done.wait()
        finally:
            graceful = await stop()
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(sig)
        return graceful is not False

    try:
        import uvloop

        runner = asyncio.Runner(loop_factory=uvloop.new_event_loop)
    except ImportError:  # pragma: no cover - the server extra installs uvloop
        runner = asyncio.Runner()
    try:
        with runner:
            return runner.run(main())
    finally:
        if guard is not None:
            guard.cancel()


def _exit_now(why: str) -> None:
    """End the process now (from the guard's thread or a signal handler), saying why."""
    logging.getLogger("brokerlb.cli").error("Exiting without a complete shutdown: %s", why)
    logging.shutdown()
    os._exit(1)


def broker(config: Path | None = _CONFIG, overrides: list[str] = _SET, log_level: str = _LOG) -> None:
    """Run one broker: joins the metadata store named by metadataStoreUrl, serves lookup and admin REST."""
    import asyncio
    import signal

    from brokerlb.broker.offset_clock import OffsetClock, clock_from_file
    from brokerlb.broker.service import CLOSE_WAIT, BrokerService
    from brokerlb.broker.wiring import build_broker
    from brokerlb.config import load_broker_conf

    _logging(log_level)
    with cli_errors():
        conf = load_broker_conf(config, overrides)
        clock = clock_from_file(conf.brokerlbClockOffsetFile)
        built: list[BrokerService] = []

        async def start() -> None:
            if isinstance(clock, OffsetClock):
                asyncio.get_running_loop().add_signal_handler(signal.SIGUSR1, clock.reload)
            built.append(service := await build_broker(conf, clock=clock))
            await service.start()
            tls = service.identity.web_service_url_tls
            binary = service.identity.pulsar_service_url or "no binary protocol"
            console.print(
                f"broker {service.broker_id} ready at {service.url} {binary} "
                f"{f'and {tls} ' if tls else ''}"
                f"(cluster {service.identity.cluster}, store {conf.metadataStoreUrl})",
                highlight=False,
            )

        bound = conf.brokerShutdownTimeoutMs / 1000

        async def stop() -> bool:
            return await built[0].stop() if built else True

        if not run_until_signalled(start, stop, exit_within=bound + 2 * CLOSE_WAIT + 5):
            raise typer.Exit(1)


#: ``brokerlb standalone``'s data directory unless ``--data-dir`` names one (under the current one)
DEFAULT_DATA_DIR = Path("brokerlb-data")
_DATA_DIR = typer.Option(
    DEFAULT_DATA_DIR,
    "--data-dir",
    help="where the cluster keeps its metadata (tenants, namespaces, policies, bundles) and its "
    "topics (messages, subscriptions): a stopped standalone started again on it has them all",
)


def standalone(
    brokers: int = typer.Option(3, "--brokers", "-n", help="number of brokers"),
    data_dir: Path = _DATA_DIR,
    metadata_store: str | None = typer.Option(
        None,
        "--metadata-store",
        help="sqlite:DIR (default: the data directory), memory:[name] (kept in memory only) or "
        "zk:host:port[,...]",
    ),
    web_port: int = typer.Option(8080, "--web-port", help="web port of the first broker (0 = free ports)"),
    broker_port: int = typer.Option(
        None,
        "--broker-port",
        help="binary-protocol (pulsar://) port of the first broker; 0 = free ports "
        "(default: 6650, or free ports with --web-port 0)",
    ),
    config: Path | None = _CONFIG,
    overrides: list[str] = _SET,
    log_level: str = _LOG,
) -> None:
    """Run N brokers in this process on consecutive 127.0.0.1 ports; Ctrl-C stops them cleanly."""
    from brokerlb.broker.service import CLOSE_WAIT
    from brokerlb.broker.standalone import StandaloneCluster
    from brokerlb.config import load_broker_conf

    _logging(log_level)
    with cli_errors():
        base = load_broker_conf(config, overrides)
        data = data_dir.resolve()
        metadata_store = metadata_store or f"sqlite:{data}"
        if "brokerlbStorageUrl" not in base.explicit_keys:
            base = base.with_overrides({"brokerlbStorageUrl": f"sqlite:{data}"})
        cluster = StandaloneCluster(
            brokers, metadata_store=metadata_store, web_port=web_port, broker_port=broker_port, config=base
        )

        async def start() -> None:
            await cluster.start()
            leader = await cluster.wait_for_leader()
            for b in cluster.brokers:
                mark = " (leader)" if b is leader else ""
                binary = b.identity.pulsar_service_url or "no binary protocol"
                console.print(f"broker {b.broker_id} ready at {b.url} {binary}{mark}", highlight=False)
            console.print(
                f"standalone cluster '{b.identity.cluster}' of {len(cluster.brokers)} brokers on "
                f"{metadata_store}, topics on {b.conf.brokerlbStorageUrl}; Ctrl-C to stop",
                highlight=False,
            )

        bound = base.brokerShutdownTimeoutMs / 1000
        if not run_until_signalled(start, cluster.stop, exit_within=bound + (brokers + 1) * CLOSE_WAIT + 5):
            raise typer.Exit(1)
