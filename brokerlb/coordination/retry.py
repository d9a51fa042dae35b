"""Retrying metadata operations, with injected sleep (and so injected time).

Pulsar retries a bundle-metadata update that lost its compare-and-set
(``BadVersion``) up to ``BUNDLE_SPLIT_RETRY_LIMIT = 7`` times, 100 ms apart
(``NamespaceService.splitAndOwnBundle``); :data:`BUNDLE_UPDATE_RETRY` is that
policy. Which errors are retried is the caller's choice: a lost CAS means
"re-read and decide again", a connection loss means "try the same again".

>>> import asyncio
>>> calls = []
>>> async def flaky():
...     calls.append(1)
...     if len(calls) < 3:
...         raise BadVersionError("lost the race", "/p")
...     return "done"
>>> async def no_sleep(_s): pass
>>> asyncio.run(retry_async(flaky, retry_on=(BadVersionError,), sleep=no_sleep))
'done'
>>> len(calls)
3
"""

from __future__ import annotations

import logging
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from brokerlb.clock import SYSTEM_CLOCK
from brokerlb.errors import BadVersionError, BrokerLBError, InvalidConfigError

__all__ = ["RetryPolicy", "BUNDLE_UPDATE_RETRY", "retry_async", "is_retriable"]

logger = logging.getLogger(__name__)

T = TypeVar("T")

Sleep = Callable[[float], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How often and how far apart to retry."""

    #: Retries after the first attempt (so ``max_retries + 1`` attempts in all).
    max_retries: int = 7
    #: Wait before the first retry, seconds.
    delay_s: float = 0.1
    #: Each further wait is multiplied by this (1.0 = fixed delay, as Pulsar's split retry).
    backoff: float = 1.0
    max_delay_s: float = 10.0
    #: Up to this fraction of each wait is added at random (needs ``rng``); 0 = none.
    jitter: float = 0.0

    def __post_init__(self) -> None:
        if self.max_retries < 0:
            raise InvalidConfigError("max_retries", self.max_retries, "must be >= 0")
        if self.delay_s < 0 or self.max_delay_s < 0:
            raise InvalidConfigError("delay_s", self.delay_s, "must be >= 0")
        if self.backoff < 1.0:
            raise InvalidConfigError("backoff", self.backoff, "must be >= 1")
        if not 0.0 <= self.jitter <= 1.0:
            raise InvalidConfigError("jitter", self.jitter, "must be within [0, 1]")

    def delay(self, retry: int, rng: random.Random | None = None) -> float:
        """Wait before retry number ``retry`` (1-based)."""
        base = min(self.max_delay_s, self.delay_s * self.backoff ** (retry - 1))
        if self.jitter and rng is not None:
            base += base * self.jitter * rng.random()
        return base


#: Pulsar's bundle-metadata update retry: 7 retries, 100 ms apart, on BadVersion.
BUNDLE_UPDATE_RETRY = RetryPolicy(max_retries=7, delay_s=0.1)


def is_retriable(exc: BaseException) -> bool:
    """The error's own ``retriable`` flag (connection loss, timeouts, ...)."""
    return isinstance(exc, BrokerLBError) and exc.retriable


async def retry_async(
    attempt: Callable[[], Awaitable[T]],
    *,
    policy: RetryPolicy = BUNDLE_UPDATE_RETRY,
    retry_on: tuple[type[BaseException], ...] | Callable[[BaseException], bool] = (BadVersionError,),
    sleep: Sleep | None = None,
    rng: random.Random | None = None,
    what: str = "metadata update",
) -> T:
    """Run ``attempt()`` until it succeeds, retrying errors ``retry_on`` accepts.

    After ``policy.max_retries`` retries the last error is raised, with a note
    saying how many attempts were made. Other errors propagate at once. The waits
    between attempts are ``sleep(seconds)`` (default: the system clock's; the recipes
    pass their store's ``clock.sleep``).
    """
    pause = sleep if sleep is not None else SYSTEM_CLOCK.sleep
    should_retry: Callable[[BaseException], bool]
    if isinstance(retry_on, tuple):
        kinds = retry_on
        should_retry = lambda exc: isinstance(exc, kinds)  # noqa: E731
    else:
        should_retry = retry_on
    retry = 0
    while True:
        try:
            return await attempt()
        except Exception as exc:
            if not should_retry(exc):
                raise
            if retry >= policy.max_retries:
                exc.add_note(f"{what}: gave up after {retry + 1} attempts")
                logger.warning("%s failed after %d attempts: %s", what, retry + 1, exc)
                raise
            retry += 1
            wait = policy.delay(retry, rng)
            logger.debug("%s: %s; retry %d/%d in %.3f s", what, exc, retry, policy.max_retries, wait)
            await pause(wait)
