"""Helpers shared by the admin routes: bodies, booleans, 204s and redirects."""

from __future__ import annotations

import json
from typing import Any

from fastapi import Request, Response

from brokerlb.broker.http.redirects import location_for_scheme, redirect_location
from brokerlb.broker.ownership.redirect import Redirect
from brokerlb.errors import InvalidInputError
from brokerlb.limits import InputLimits, parse_json

__all__ = [
    "request_limits",
    "json_body",
    "json_or_text_body",
    "raw_body",
    "no_content",
    "json_response",
    "maybe_redirect",
]


async def raw_body(request: Request) -> bytes:
    return await request.body()


def request_limits(request: Request) -> InputLimits:
    """The broker's input bounds (set on the app by ``create_app``; defaults for a bare app)."""
    limits = getattr(request.app.state, "limits", None)
    return limits if isinstance(limits, InputLimits) else InputLimits()


async def json_body(request: Request) -> Any:
    """The request body as JSON (``None`` when empty); 400 when it is not JSON or nests too deep.

    The size was bounded while the body was read (:mod:`~brokerlb.broker.http.guard`).
    """
    data = await request.body()
    if not data.strip():
        return None
    limits = request_limits(request)
    try:
        value = parse_json(data)
    except RecursionError:
        raise InvalidInputError(limits.json_too_deep()) from None
    except ValueError as exc:
        raise InvalidInputError(f"The request body is not valid JSON: {exc}") from exc
    limits.check_json_depth(value)
    return value


async def json_or_text_body(request: Request) -> Any:
    """The body as JSON when it is JSON, else its text (stripped): what pulsar-admin sends for a bare
    string (Jersey writes a ``String`` entity unquoted even as ``application/json``)."""
    data = await request.body()
    limits = request_limits(request)
    text = data.decode("utf-8", "replace").strip()
    try:
        value = parse_json(text)
    except RecursionError:
        raise InvalidInputError(limits.json_too_deep()) from None
    except ValueError:
        return text
    limits.check_json_depth(value)
    return value


def no_content() -> Response:
    return Response(status_code=204)


def json_response(value: Any, status: int = 200) -> Response:
    return Response(
        json.dumps(value, separators=(",", ":")), status_code=status, media_type="application/json"
    )


def maybe_redirect(request: Request, result: object) -> Response | None:
    """A 307 when ``result`` is a :class:`Redirect`, else ``None``."""
    if isinstance(result, Redirect):
        location = redirect_location(
            result, request.scope.get("raw_path") or request.url.path, request.scope.get("query_string", b"")
        )
        tls_urls = getattr(request.app.state, "tls_urls", None)  # an https request goes to https
        location = location_for_scheme(location, request.scope.get("scheme", "http"), tls_urls)
        return Response(status_code=307, headers={"location": location})
    return None
