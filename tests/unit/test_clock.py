"""The injected clock: ManualClock's timers, sleepers and settling; SystemClock's loop-backed waits."""

from __future__ import annotations

import asyncio

import pytest

from brokerlb.clock import SYSTEM_CLOCK, Clock, ManualClock, SystemClock


def test_both_clocks_satisfy_the_protocol():
    assert isinstance(ManualClock(), Clock) and isinstance(SystemClock(), Clock)


def test_time_moves_only_forward_and_milliseconds_follow_seconds():
    clock = ManualClock(1_000)
    assert (clock.now_ms(), clock.monotonic()) == (1_000, 0.0)
    clock.advance(2.5)
    assert (clock.now_ms(), clock.monotonic()) == (3_500, 2.5)
    clock.set_ms(4_000)
    assert (clock.now_ms(), clock.monotonic()) == (4_000, 3.0)
    for _ in range(3):
        clock.advance(0.0004)  # sub-millisecond steps add up instead of rounding away
    assert clock.now_ms() == 4_001
    with pytest.raises(ValueError, match="backwards"):
        clock.advance(-1)
    with pytest.raises(ValueError, match="backwards"):
        clock.set_ms(3_999)


def test_timers_fire_in_deadline_order_ties_in_arrival_order_each_at_its_deadline():
    clock = ManualClock()
    fired: list[tuple[str, float]] = []
    record = lambda name: fired.append((name, clock.monotonic()))  # noqa: E731
    clock.call_later(2.0, record, "late")
    clock.call_later(1.0, record, "first tie")
    clock.call_later(1.0, record, "second tie")
    cancelled = clock.call_later(0.5, record, "cancelled")
    cancelled.cancel()
    assert clock.pending() == 3 and clock.next_deadline() == 1.0
    clock.advance(0.999)
    assert fired == []
    clock.advance(0.001)
    assert fired == [("first tie", 1.0), ("second tie", 1.0)]
    clock.advance(5)
    assert fired[-1] == ("late", 2.0) and clock.monotonic() == 6.0 and clock.pending() == 0


def test_deadlines_compare_exactly():
    clock = ManualClock()
    fired = []
    for _ in range(3):
        clock.advance(0.1)
    clock.call_later(0.3, fired.append, "x")
    clock.advance(0.1)
    clock.advance(0.1)
    clock.advance(0.1)
    assert fired == ["x"]


def test_a_timer_set_by_a_timer_within_the_step_fires_in_the_same_advance():
    clock = ManualClock()
    ticks: list[float] = []

    def tick() -> None:
        ticks.append(clock.monotonic())
        clock.call_later(1.0, tick)

    clock.call_later(1.0, tick)
    clock.advance(3.5)
    assert ticks == [1.0, 2.0, 3.0]


def test_a_failing_timer_is_logged_and_time_goes_on(caplog):
    clock = ManualClock()
    fired = []
    clock.call_later(1, lambda: 1 / 0)
    clock.call_later(2, fired.append, "after")
    clock.advance(3)
    assert fired == ["after"] and "ManualClock timer" in caplog.text


async def test_sleep_waits_until_the_clock_passes_its_deadline():
    clock = ManualClock()
    sleeper = asyncio.create_task(clock.sleep(5))
    await clock.settle()
    assert not sleeper.done() and clock.pending() == 1
    await clock.advance_and_settle(4.999)
    assert not sleeper.done()
    await clock.advance_and_settle(0.001)
    assert sleeper.done()
    await clock.sleep(0)  # no timer: just a turn of the loop
    assert clock.pending() == 0


async def test_a_cancelled_sleeper_leaves_no_timer():
    clock = ManualClock()
    sleeper = asyncio.create_task(clock.sleep(5))
    await clock.settle()
    sleeper.cancel()
    await clock.settle()
    assert sleeper.cancelled() and clock.pending() == 0


async def test_advance_and_settle_wakes_a_periodic_task_at_each_of_its_instants():
    clock = ManualClock()
    seen: list[float] = []

    async def every_second() -> None:
        while True:
            await clock.sleep(1.0)
            seen.append(clock.monotonic())

    task = asyncio.create_task(every_second())
    await clock.advance_and_settle(3.5)
    assert seen == [1.0, 2.0, 3.0]
    clock.advance(2)  # the synchronous step wakes the sleeper once; it runs later, at the new time
    await clock.settle()
    assert seen == [1.0, 2.0, 3.0, 5.5]
    task.cancel()


async def test_wait_for_times_out_on_the_clock():
    clock = ManualClock()
    never = asyncio.Event()
    waiting = asyncio.create_task(clock.wait_for(never.wait(), 2.0))
    await clock.advance_and_settle(1.999)
    assert not waiting.done()
    await clock.advance_and_settle(0.001)
    with pytest.raises(TimeoutError):
        await waiting
    assert clock.pending() == 0


async def test_wait_for_returns_the_result_and_cancels_its_timer():
    clock = ManualClock()
    done = asyncio.Event()
    waiting = asyncio.create_task(clock.wait_for(done.wait(), 2.0))
    await clock.settle()
    done.set()
    assert await waiting is True and clock.pending() == 0
    assert await clock.wait_for(asyncio.sleep(0, "now"), None) == "now"
    with pytest.raises(TimeoutError):
        await clock.wait_for(never_done(), 0)


async def never_done() -> None:
    await asyncio.Event().wait()


async def test_cancelling_the_waiter_cancels_the_awaited_work():
    clock = ManualClock()
    inner = asyncio.create_task(never_done())
    waiting = asyncio.create_task(clock.wait_for(inner, 10))
    await clock.settle()
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert inner.cancelled() and clock.pending() == 0


async def test_a_zero_delay_timer_fires_at_the_next_turn_of_the_loop():
    clock = ManualClock()
    fired = []
    clock.call_later(0, fired.append, "now")
    await asyncio.sleep(0)
    assert fired == ["now"] and clock.monotonic() == 0.0


async def test_run_until_steps_from_timer_to_timer():
    clock = ManualClock()
    state = {"n": 0}

    async def count() -> None:
        while True:
            await clock.sleep(0.25)
            state["n"] += 1

    task = asyncio.create_task(count())
    assert await clock.run_until(lambda: state["n"] >= 6, message="six counts") is True
    assert clock.monotonic() == 1.5

    async def async_condition() -> bool:
        return state["n"] >= 8

    await clock.run_until(async_condition)
    assert clock.monotonic() == 2.0
    with pytest.raises(TimeoutError, match="never"):
        await clock.run_until(lambda: False, within=1.0, message="never")
    task.cancel()
    await clock.settle()
    with pytest.raises(TimeoutError, match="0 timers pending"):  # nothing scheduled: fails at once
        await clock.run_until(lambda: False, message="nothing")


async def test_settle_refuses_a_task_that_never_waits():
    clock = ManualClock()

    async def spin() -> None:
        while True:
            await asyncio.sleep(0)

    task = asyncio.create_task(spin())
    with pytest.raises(RuntimeError, match="did not settle"):
        await clock.settle()
    task.cancel()


async def test_system_clock_waits_on_the_event_loop():
    fired = asyncio.Event()
    handle = SYSTEM_CLOCK.call_later(0, fired.set)
    await asyncio.wait_for(fired.wait(), 10)
    assert not handle.cancelled()
    with pytest.raises(TimeoutError):
        await SYSTEM_CLOCK.wait_for(never_done(), 0)
    assert await SYSTEM_CLOCK.wait_for(asyncio.sleep(0, "x"), 10) == "x"
    await SYSTEM_CLOCK.sleep(0)
