"""Time as an injected dependency.

Nothing in brokerlb reads the wall clock or waits on its own: strategies, the
ownership state machine, the simulator and the asyncio shells (metadata-store
sessions, leader election, load reporter, data path) receive a :class:`Clock`.
``SystemClock`` is the real one; ``ManualClock`` moves only when told to (tests,
the simulator, the offline planner with a snapshot's ``now``).

Times are milliseconds since the epoch (``int``), as in Pulsar's load data
(``lastUpdate``, ``updatedAt``), and monotonic seconds (``float``) for timeouts.

A clock also waits: :meth:`Clock.sleep`, :meth:`Clock.call_later` (a timer, as
``loop.call_later``) and :meth:`Clock.wait_for` (an awaitable with a timeout, as
``asyncio.wait_for``). On a ``SystemClock`` they are the event loop's; on a
``ManualClock`` they are due when the clock is moved past their deadline, so a
test drives sessions, leases and heartbeats step by step, without sleeping::

    clock = ManualClock()
    server = MemoryServer("t", clock=clock)          # sessions expire on this clock
    ...
    store.crash()
    await clock.advance_and_settle(timeout - 0.001)   # just before: still alive
    await clock.advance_and_settle(0.001)             # the timeout: expired

This module imports no I/O library (``asyncio`` only inside the methods that wait),
so the pure core may depend on it.
"""

from __future__ import annotations

import heapq
import inspect
import itertools
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypeVar, runtime_checkable

__all__ = ["Clock", "TimerHandle", "SystemClock", "ManualClock", "SYSTEM_CLOCK"]

logger = logging.getLogger(__name__)

T = TypeVar("T")


class TimerHandle(Protocol):
    """What :meth:`Clock.call_later` returns (``asyncio.TimerHandle`` is one)."""

    def cancel(self) -> None: ...

    def cancelled(self) -> bool: ...


@runtime_checkable
class Clock(Protocol):
    def now_ms(self) -> int:
        """Milliseconds since the epoch."""

    def monotonic(self) -> float:
        """Seconds on a clock that never goes back."""

    async def sleep(self, seconds: float) -> None:
        """Wait ``seconds`` on this clock (``<= 0``: just let other tasks run)."""

    def call_later(self, delay: float, callback: Callable[..., object], *args: Any) -> TimerHandle:
        """Call ``callback(*args)`` once ``delay`` seconds have passed on this clock (from the event loop)."""

    async def wait_for(self, awaitable: Awaitable[T], timeout: float | None) -> T:
        """``await awaitable``; cancel it and raise ``TimeoutError`` after ``timeout`` s on this clock."""


class SystemClock:
    """The real clock; its waits are the running event loop's."""

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000

    def monotonic(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        import asyncio  # only the shells wait; the pure core never imports asyncio

        await asyncio.sleep(max(0.0, seconds))

    def call_later(self, delay: float, callback: Callable[..., object], *args: Any) -> TimerHandle:
        import asyncio

        return asyncio.get_running_loop().call_later(max(0.0, delay), callback, *args)

    async def wait_for(self, awaitable: Awaitable[T], timeout: float | None) -> T:
        import asyncio

        # asyncio.timeout, not asyncio.wait_for: Python 3.11's wait_for swallows a cancellation that
        # arrives as the awaited future completes (a broker's stop then waited forever for its load
        # reporter, woken by a forced update at the moment it was cancelled)
        async with asyncio.timeout(timeout):
            return await awaitable

    def __repr__(self) -> str:
        return "SystemClock()"


class _ManualTimer:
    """A timer of a :class:`ManualClock` (deadline in the clock's nanoseconds)."""

    __slots__ = ("when_ns", "seq", "callback", "args", "_cancelled")

    def __init__(
        self, when_ns: int, seq: int, callback: Callable[..., object], args: tuple[Any, ...]
    ) -> None:
        self.when_ns = when_ns
        self.seq = seq
        self.callback = callback
        self.args = args
        self._cancelled = False

    def __lt__(self, other: _ManualTimer) -> bool:
        return (self.when_ns, self.seq) < (other.when_ns, other.seq)

    def cancel(self) -> None:
        self._cancelled = True

    def cancelled(self) -> bool:
        return self._cancelled

    def when(self) -> float:
        """The deadline, in the clock's monotonic seconds."""
        return self.when_ns / 1e9

    def __repr__(self) -> str:
        state = " cancelled" if self._cancelled else ""
        return f"<ManualTimer at {self.when():.6f} s {self.callback!r}{state}>"


def _ns(seconds: float) -> int:
    return int(round(seconds * 1e9))


#: Rounds of "let every ready task run" before :meth:`ManualClock.settle` gives up (a task that never waits).
_SETTLE_ROUNDS = 10_000


class ManualClock:
    """A clock that moves only when told to, with timers that fire when it moves past them.

    Time is kept in integer nanoseconds, so deadlines compare exactly (three sleeps of
    0.1 s are due after ``advance(0.3)``). ``now_ms`` is ``start_ms`` plus the
    milliseconds passed (floored).

    * :meth:`sleep`, :meth:`call_later` and :meth:`wait_for` register timers; a timer is
      due once the clock reaches its deadline; due timers fire in deadline order, ties in
      the order they were set.
    * :meth:`advance` / :meth:`set_ms` move the clock and fire the due timers at once,
      each with the clock at its own deadline. Tasks a timer wakes (sleepers) run after
      the call returns, at the new time.
    * ``await`` :meth:`advance_and_settle` moves the clock one due timer at a time and lets
      the woken tasks run in between (:meth:`settle`), so a task that sleeps again within
      the step is woken again -- this is how a test drives asyncio shells.
    * ``await`` :meth:`run_until` steps from timer to timer until a condition holds.

    Nothing moves the clock by itself: ``await clock.sleep(5)`` waits until something
    advances the clock by 5 s (the simulator and tests do; nothing relies on a sleep
    advancing the clock).

    >>> c = ManualClock(1_000)
    >>> c.advance(2.5); c.now_ms()
    3500
    >>> fired = []
    >>> _ = c.call_later(1.0, fired.append, "a"); _ = c.call_later(0.5, fired.append, "b")
    >>> c.advance(1.0); fired
    ['b', 'a']
    """

    def __init__(self, start_ms: int = 0) -> None:
        self._start_ms = int(start_ms)
        self._ns = 0
        self._timers: list[_ManualTimer] = []
        self._seq = itertools.count()

    # ------------------------------------------------------------------ reading
    def now_ms(self) -> int:
        return self._start_ms + self._ns // 1_000_000

    def monotonic(self) -> float:
        return self._ns / 1e9

    def pending(self) -> int:
        """Timers set and not yet fired or cancelled."""
        return sum(1 for t in self._timers if not t.cancelled())

    def next_deadline(self) -> float | None:
        """The monotonic time of the earliest pending timer, or ``None``."""
        self._drop_cancelled()
        return self._timers[0].when() if self._timers else None

    # ------------------------------------------------------------------ moving (synchronous)
    def advance(self, seconds: float) -> None:
        """Move forward ``seconds``, firing the timers due on the way (in order, each at its deadline)."""
        if seconds < 0:
            raise ValueError(f"cannot move a clock backwards ({seconds} s)")
        self._move_to(self._ns + _ns(seconds))

    def set_ms(self, now_ms: int) -> None:
        """Move to epoch time ``now_ms``, firing the timers due on the way."""
        if now_ms < self.now_ms():
            raise ValueError(f"cannot move a clock backwards ({self.now_ms()} -> {now_ms})")
        self._move_to(max(self._ns, (int(now_ms) - self._start_ms) * 1_000_000))

    def _move_to(self, target_ns: int) -> None:
        while (timer := self._pop_due(target_ns)) is not None:
            self._ns = max(self._ns, timer.when_ns)
            self._fire(timer)
        self._ns = target_ns

    # ------------------------------------------------------------------ waiting
    def call_later(self, delay: float, callback: Callable[..., object], *args: Any) -> _ManualTimer:
        """A timer due ``delay`` s from now; a delay ``<= 0`` is due at once (fired when the clock next
        moves or settles, or -- inside a running loop -- at the loop's next turn)."""
        timer = _ManualTimer(self._ns + max(0, _ns(delay)), next(self._seq), callback, args)
        heapq.heappush(self._timers, timer)
        if timer.when_ns <= self._ns:
            self._fire_due_soon()
        return timer

    async def sleep(self, seconds: float) -> None:
        """Wait until the clock has moved ``seconds`` past now (``<= 0``: just let other tasks run)."""
        import asyncio

        if seconds <= 0:
            await asyncio.sleep(0)
            return
        woken = asyncio.get_running_loop().create_future()
        timer = self.call_later(seconds, _resolve, woken)
        try:
            await woken
        finally:
            timer.cancel()

    async def wait_for(self, awaitable: Awaitable[T], timeout: float | None) -> T:
        """``asyncio.wait_for`` with the timeout on this clock."""
        import asyncio

        task = asyncio.ensure_future(awaitable)
        if timeout is None:
            return await task
        if timeout <= 0 and not task.done():
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                raise TimeoutError from None
        expired = False

        def expire() -> None:
            nonlocal expired
            if not task.done():
                expired = True
                task.cancel()

        timer = self.call_later(timeout, expire)
        try:
            return await task
        except asyncio.CancelledError:
            if expired:
                raise TimeoutError from None
            raise
        finally:
            timer.cancel()

    # ------------------------------------------------------------------ moving (with the event loop)
    async def settle(self) -> None:
        """Let every task that can run, run: return when the event loop has nothing ready.

        Timers due meanwhile (set with a delay of 0) fire too. Work waiting on real I/O or
        on the loop's own timers is not waited for -- a shell driven by this clock waits on
        this clock only.
        """
        import asyncio

        loop = asyncio.get_running_loop()
        for _ in range(_SETTLE_ROUNDS):
            await asyncio.sleep(0)
            fired = self._fire_due_now()
            ready = getattr(loop, "_ready", None)
            if ready is None:  # an event loop without CPython's ready queue: a fixed number of turns
                for _ in range(50):
                    await asyncio.sleep(0)
                return
            if not ready and not fired:
                return
        raise RuntimeError(
            f"the event loop did not settle after {_SETTLE_ROUNDS} turns (a task never waits?)"
        )

    async def advance_and_settle(self, seconds: float) -> None:
        """Move forward ``seconds`` one due timer at a time, letting woken tasks run after each."""
        if seconds < 0:
            raise ValueError(f"cannot move a clock backwards ({seconds} s)")
        target = self._ns + _ns(seconds)
        await self.settle()
        while (timer := self._pop_due(target)) is not None:
            self._ns = max(self._ns, timer.when_ns)
            self._fire(timer)
            await self.settle()
        self._ns = target
        await self.settle()

    async def run_until(
        self,
        condition: Callable[[], T | Awaitable[T]],
        within: float = 3600.0,
        message: str = "condition",
    ) -> T:
        """Step from timer to timer (settling after each) until ``condition()`` is truthy; return it.

        ``condition`` may be async. Raises ``TimeoutError`` when it still does not hold once no
        timer is due within ``within`` s of clock time -- at once if nothing is scheduled at all,
        so a test never hangs waiting for time that nothing will make pass.
        """
        limit = self._ns + _ns(within)
        started = self.monotonic()
        while True:
            await self.settle()
            value = condition()
            if inspect.isawaitable(value):
                value = await value
            if value:
                return value
            timer = self._pop_due(limit)
            if timer is None:
                raise TimeoutError(
                    f"{message} did not hold within {within} s of clock time "
                    f"(now {self.monotonic() - started:.3f} s in; last value {value!r}; "
                    f"{self.pending()} timers pending, next at {self.next_deadline()})"
                )
            self._ns = max(self._ns, timer.when_ns)
            self._fire(timer)

    # ------------------------------------------------------------------ internals
    def _drop_cancelled(self) -> None:
        while self._timers and self._timers[0].cancelled():
            heapq.heappop(self._timers)

    def _pop_due(self, limit_ns: int) -> _ManualTimer | None:
        self._drop_cancelled()
        if self._timers and self._timers[0].when_ns <= limit_ns:
            return heapq.heappop(self._timers)
        return None

    def _fire(self, timer: _ManualTimer) -> None:
        timer.cancel()  # fired: no longer pending
        try:
            timer.callback(*timer.args)
        except Exception:  # as the event loop does: a timer's failure is logged, time goes on
            logger.exception("ManualClock timer %r failed", timer)

    def _fire_due_now(self) -> bool:
        fired = False
        while (timer := self._pop_due(self._ns)) is not None:
            self._fire(timer)
            fired = True
        return fired

    def _fire_due_soon(self) -> None:
        import asyncio

        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # no loop: fired when the clock next moves
        loop.call_soon(self._fire_due_now)

    def __repr__(self) -> str:
        return f"ManualClock(now_ms={self.now_ms()}, pending={self.pending()})"


def _resolve(future: Any) -> None:
    if not future.done():
        future.set_result(None)


SYSTEM_CLOCK = SystemClock()
