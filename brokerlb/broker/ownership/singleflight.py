"""Share one in-flight computation among concurrent callers with the same key."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Hashable
from typing import Generic, TypeVar

__all__ = ["SingleFlight"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class SingleFlight(Generic[K, V]):
    """``await flights.run(key, work)``: the first caller runs ``work()``, the others await its result.

    The entry is dropped when the work ends, so a later call runs it again. A failure is
    delivered to every waiter.
    """

    def __init__(self) -> None:
        self._inflight: dict[K, asyncio.Future[V]] = {}

    def __len__(self) -> int:
        return len(self._inflight)

    async def run(self, key: K, work: Callable[[], Awaitable[V]]) -> V:
        pending = self._inflight.get(key)
        if pending is not None:
            return await asyncio.shield(pending)
        future: asyncio.Future[V] = asyncio.get_running_loop().create_future()
        self._inflight[key] = future
        try:
            result = await work()
        except asyncio.CancelledError:
            future.cancel()
            raise
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # retrieved: no "never retrieved" warning when nobody else waits
            raise
        else:
            future.set_result(result)
            return result
        finally:
            del self._inflight[key]
