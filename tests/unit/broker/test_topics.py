"""The topic registry: roll-up per bundle, Pulsar's topics report, close callbacks on unload."""

from __future__ import annotations

import asyncio

import pytest

from brokerlb.broker.data.topics import CloseCause, TopicRegistry, TopicStats
from brokerlb.clock import ManualClock
from brokerlb.errors import InvalidLoadDataError
from brokerlb.naming import TopicName
from brokerlb.ring import NamespaceBundles

BUNDLES = NamespaceBundles.create("t/ns", 4)


def registry(bundles: NamespaceBundles = BUNDLES) -> TopicRegistry:
    holder = {"b": bundles}
    reg = TopicRegistry(lambda topic: str(holder["b"].find_bundle(topic)))
    reg._holder = holder  # type: ignore[attr-defined]  # lets a test swap the ring (a split)
    return reg


_BY_BUNDLE: dict[int, list[str]] = {}
for _i in range(200):
    _name = f"persistent://t/ns/t-{_i}"
    _BY_BUNDLE.setdefault(BUNDLES.bundles.index(BUNDLES.find_bundle(_name)), []).append(_name)


def topic_in(bundle_index: int, n: int = 0) -> str:
    """The n-th topic name t-<i> that falls into bundle ``bundle_index``."""
    return _BY_BUNDLE[bundle_index][n]


def test_roll_up_sums_topics_of_a_bundle_and_lists_idle_owned_bundles() -> None:
    reg = registry()
    a, b, c = topic_in(0, 0), topic_in(0, 1), topic_in(2, 0)
    reg.attach(a, stats=TopicStats(msg_rate_in=10, msg_throughput_in=1000, producer_count=1))
    reg.attach(b, stats=TopicStats(msg_rate_in=5, msg_rate_out=7, consumer_count=2))
    reg.attach(c)
    idle = str(BUNDLES.bundles[3])
    stats = reg.bundle_stats(owned=[idle])
    first = stats[str(BUNDLES.bundles[0])]
    assert (first.msg_rate_in, first.msg_rate_out, first.msg_throughput_in) == (15, 7, 1000)
    assert (first.topics, first.producer_count, first.consumer_count) == (2, 1, 2)
    assert stats[str(BUNDLES.bundles[2])].topics == 1
    assert stats[idle].topics == 0 and stats[idle].msg_rate_in == 0
    assert set(stats) == {str(BUNDLES.bundles[i]) for i in (0, 2, 3)}


def test_topics_report_has_pulsars_shape() -> None:
    reg = registry()
    t = topic_in(1)
    reg.attach(t, stats=TopicStats(msg_rate_in=3))
    report = reg.topics_report()
    assert report == {
        "t/ns": {
            BUNDLES.bundles[1].range: {
                "persistent": {
                    t: {
                        "msgRateIn": 3,
                        "msgThroughputIn": 0.0,
                        "msgRateOut": 0.0,
                        "msgThroughputOut": 0.0,
                        "producerCount": 0,
                        "consumerCount": 0,
                    }
                }
            }
        }
    }


def test_a_split_regroups_topics_without_rekeying() -> None:
    reg = registry()
    topics = [topic_in(0, i) for i in range(6)]
    for t in topics:
        reg.attach(t)
    split = BUNDLES.split(BUNDLES.bundles[0], [0x20000000])
    reg._holder["b"] = split  # type: ignore[attr-defined]
    groups = reg.by_bundle()
    assert set(groups) <= {str(split.bundles[0]), str(split.bundles[1])}
    assert sorted(sum(groups.values(), [])) == sorted(topics)


async def test_close_bundle_runs_callbacks_and_hooks_and_forgets_topics() -> None:
    reg = registry()
    closed: list[tuple[str, CloseCause]] = []
    t0, t1, other = topic_in(0, 0), topic_in(0, 1), topic_in(1, 0)

    def closer(name: str):
        async def close(cause: CloseCause) -> None:
            closed.append((name, cause))

        return close

    reg.attach(t0, closer(t0))
    reg.attach(t1, closer(t1))
    reg.attach(other, closer(other))
    cause = CloseCause.transfer("broker-2:8080")
    assert await reg.close_bundle(str(BUNDLES.bundles[0]), timeout=30, cause=cause) == 2
    assert sorted(closed) == sorted([(t0, cause), (t1, cause)])
    assert t0 not in reg and other in reg


async def test_close_bundle_tells_an_unload_by_default() -> None:
    reg = registry()
    causes: list[CloseCause] = []

    async def close(cause: CloseCause) -> None:
        causes.append(cause)

    reg.attach(topic_in(0), close)
    await reg.close_bundle(str(BUNDLES.bundles[0]), timeout=30)
    assert causes == [CloseCause("unload")] and causes[0].destination is None


def test_fence_bundle_fences_only_that_bundles_topics_and_keeps_them() -> None:
    reg = registry()
    fenced: list[str] = []
    t0, t1, other = topic_in(0, 0), topic_in(0, 1), topic_in(1, 0)
    for t in (t0, t1, other):
        reg.attach(t, fence=lambda t=t: fenced.append(t))
    reg.attach(topic_in(0, 2))  # no fence callback: counted, nothing to call

    def broken() -> None:
        raise RuntimeError("broken session")

    reg.attach(topic_in(0, 3), fence=broken)  # a failing callback does not stop the others
    assert reg.fence_bundle(str(BUNDLES.bundles[0])) == 4
    assert sorted(fenced) == sorted([t0, t1])
    assert t0 in reg and t1 in reg


async def test_close_bundle_timeout_is_not_an_error() -> None:
    clock = ManualClock()
    reg = TopicRegistry(lambda topic: str(BUNDLES.find_bundle(topic)), clock=clock)
    t = topic_in(0)
    cancelled = asyncio.Event()

    async def stuck(_cause: CloseCause) -> None:
        try:
            await asyncio.Event().wait()  # a client that never answers
        except asyncio.CancelledError:
            cancelled.set()
            raise

    reg.attach(t, stuck)
    closing = asyncio.create_task(reg.close_bundle(str(BUNDLES.bundles[0]), timeout=0.05))
    await clock.advance_and_settle(0.049)
    assert not closing.done() and t not in reg
    await clock.advance_and_settle(0.001)
    assert await closing == 1 and cancelled.is_set()


async def test_a_failing_callback_does_not_stop_the_others() -> None:
    reg = registry()
    done: list[str] = []

    async def boom(_cause: CloseCause) -> None:
        raise RuntimeError("broken client")

    async def fine(_cause: CloseCause) -> None:
        done.append("ok")

    reg.attach(topic_in(0, 0), boom)
    reg.attach(topic_in(0, 1), fine)
    await reg.close_bundle(str(BUNDLES.bundles[0]), timeout=30)
    assert done == ["ok"]


def test_bad_stats_are_refused() -> None:
    with pytest.raises(InvalidLoadDataError):
        TopicStats(msg_rate_in=float("nan"))
    with pytest.raises(InvalidLoadDataError):
        TopicStats(producer_count=-1)
    reg = registry()
    with pytest.raises(InvalidLoadDataError, match="not served"):
        reg.update_stats("persistent://t/ns/unknown", TopicStats())
    reg.attach(TopicName.parse("persistent://t/ns/x"))
    reg.update_stats("persistent://t/ns/x", TopicStats(msg_rate_in=1))
    assert reg.stats_of("persistent://t/ns/x") == TopicStats(msg_rate_in=1)
