"""Bounded waiting for asynchronous tests: poll a condition until it holds or time runs out.

:func:`eventually` waits in real time, for code on the system clock; its timeout only guards
against hanging. Code on a :class:`~brokerlb.clock.ManualClock` is driven instead:
``await clock.run_until(condition)`` moves the clock from timer to timer until the condition
holds, and ``await clock.advance_and_settle(seconds)`` moves it by a given amount. Neither
sleeps, and no test asserts how long something took on the wall clock.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

__all__ = ["eventually"]

T = TypeVar("T")


async def eventually(
    condition: Callable[[], T | Awaitable[T]],
    timeout: float = 10.0,
    interval: float = 0.02,
    message: str = "condition",
) -> T:
    """Return the first truthy value of ``condition()`` (sync or async) within ``timeout`` s.

    Raises ``AssertionError`` naming ``message`` and the last value seen otherwise.
    """
    deadline = time.monotonic() + timeout
    last: object = None
    while True:
        value = condition()
        if inspect.isawaitable(value):
            value = await value
        if value:
            return value
        last = value
        if time.monotonic() >= deadline:
            raise AssertionError(f"{message} did not hold within {timeout} s (last value: {last!r})")
        await asyncio.sleep(interval)
