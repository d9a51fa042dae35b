"""Errors as Pulsar's REST answers: ``{"reason": "..."}`` with the error's HTTP status.

* a :class:`~brokerlb.errors.BrokerLBError` answers its ``http_status`` (Pulsar's codes,
  see :mod:`brokerlb.errors`) with ``Retry-After: 1`` when it is retriable;
* an unknown route is 404 "Route not found", a wrong method 405;
* anything else is a bug: 500 with the exception's class, logged with its traceback.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from brokerlb.errors import BrokerLBError

__all__ = ["error_body", "error_status", "error_headers", "json_bytes"]

logger = logging.getLogger(__name__)


def json_bytes(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


def error_status(exc: BaseException) -> int:
    if isinstance(exc, BrokerLBError):
        return int(exc.http_status)
    return 500


def error_body(exc: BaseException) -> bytes:
    if isinstance(exc, BrokerLBError):
        return json_bytes(exc.to_json())
    logger.error("Unexpected error while serving a request", exc_info=exc)
    return json_bytes({"reason": f"Internal error: {type(exc).__name__}: {exc}"})


def error_headers(exc: BaseException) -> list[tuple[bytes, bytes]]:
    if isinstance(exc, BrokerLBError) and exc.retriable:
        return [(b"retry-after", b"1")]
    return []
