"""Request-shape rules applied to every HTTP request before any route: body size and media type.

* **Size** (``httpMaxRequestSize``): a declared ``Content-Length`` above the bound is answered
  413 at once; a body sent without a length (chunked) is counted while it is read, and the
  read fails with the same 413 as soon as it passes the bound -- nothing larger is buffered.
* **Media type**: a state-changing request (POST, PUT, DELETE, PATCH) that carries a body,
  and every POST, must declare a JSON body (``Content-Type: application/json`` or ``...+json``);
  anything else is answered 415. A web page can send a cross-origin POST without asking
  the server first only as ``text/plain``, a form or multipart, so no page can make a
  broker change state behind a user's back.
* **Path**: an encoded ``/`` (``%2F``) in a path segment is refused (400), because routes are
  matched on the decoded path (the lookup fast path parses raw segments itself); a segment
  longer than ``brokerlbMaxNameLength`` characters is refused (412) before any route parses it
  (the lookup fast path and the WebSocket endpoint check the same, before authenticating).
* A client that disconnects while sending its body is not an error of the broker: the
  request is dropped with a DEBUG log line (see :func:`is_client_disconnect`).

JSON depth is bounded where bodies are decoded (:func:`brokerlb.broker.http.common.json_body`).
Every bound is :class:`brokerlb.limits.InputLimits`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from brokerlb.broker.http.errors import error_body, error_headers, error_status
from brokerlb.errors import BrokerLBError, InvalidInputError, UnsupportedMediaTypeError
from brokerlb.limits import InputLimits

__all__ = ["RequestGuard", "send_error", "is_json_media_type", "is_client_disconnect"]

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

#: Methods that change state; their bodies must be JSON.
STATE_CHANGING = frozenset({"POST", "PUT", "DELETE", "PATCH"})


def is_json_media_type(content_type: str) -> bool:
    """``application/json`` or a ``+json`` suffix type, parameters (``; charset=...``) ignored."""
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json" or (media.startswith("application/") and media.endswith("+json"))


def is_client_disconnect(exc: BaseException) -> bool:
    """Whether ``exc`` says the client went away (Starlette's ``ClientDisconnect``, a reset socket)."""
    return type(exc).__name__ == "ClientDisconnect" or isinstance(exc, ConnectionResetError)


async def send_error(send: Send, exc: BaseException) -> None:
    """Answer ``exc`` as Pulsar's ``{"reason": ...}`` with its status (for raw ASGI handlers)."""
    body = error_body(exc)
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        *error_headers(exc),
    ]
    await send({"type": "http.response.start", "status": error_status(exc), "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return bytes(value).decode("latin-1")
    return None


def _check_path(scope: Scope) -> None:
    """An encoded ``/`` (``%2F``) inside a path segment is refused (400): the router matches decoded
    paths, so ``/namespaces/public/a%2Fb`` would otherwise be taken for another route's three
    segments (as Jetty refuses an ambiguous path separator)."""
    raw = scope.get("raw_path") or b""
    if b"%2f" in raw.lower():
        raise InvalidInputError(
            f"Invalid path {raw.decode('latin-1')!r}: an encoded '/' (%2F) is not allowed in a path segment"
        )


class RequestGuard:
    """ASGI wrapper applying the module's rules, then calling ``app``."""

    def __init__(self, app: Callable[..., Awaitable[None]], limits: InputLimits) -> None:
        self.app = app
        self.limits = limits

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        try:
            _check_path(scope)
            self.limits.check_path(scope.get("raw_path") or scope["path"].encode())
            if scope["method"] in STATE_CHANGING:
                self._check_headers(scope)
        except BrokerLBError as exc:
            await send_error(send, exc)
            return
        if scope["method"] not in STATE_CHANGING:
            await self.app(scope, receive, send)
            return
        await self.app(scope, self._counting(receive), send)

    def _check_headers(self, scope: Scope) -> None:
        length_text = _header(scope, b"content-length")
        chunked = "chunked" in (_header(scope, b"transfer-encoding") or "").lower()
        try:
            length = int(length_text) if length_text is not None else None
        except ValueError:
            length = None
        has_body = chunked or (length is not None and length > 0)
        if length is not None:
            self.limits.check_body_size(length)
        if has_body or scope["method"] == "POST":
            content_type = _header(scope, b"content-type")
            if content_type is None or not is_json_media_type(content_type):
                raise UnsupportedMediaTypeError(
                    f"{scope['method']} requests must send a JSON body (Content-Type: application/json); "
                    f"got {content_type or 'no Content-Type'}"
                )

    def _counting(self, receive: Receive) -> Receive:
        limits = self.limits
        seen = 0

        async def counted() -> dict[str, Any]:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                limits.check_body_size(seen)
            return message

        return counted
