"""Helpers shared by the admin routes: bodies, booleans, 204s and redirects."""

from __future__ import annotations

import json
from typing import Any

from fastapi import Request, Response

from brokerlb.broker.http.redirects import redirect_location
from brokerlb.broker.redirect import Redirect
from brokerlb.errors import InvalidInputError

__all__ = ["json_body", "raw_body", "no_content", "json_response", "maybe_redirect"]


async def raw_body(request: Request) -> bytes:
    return await request.body()


async def json_body(request: Request) -> Any:
    """The request body as JSON (``None`` when empty); 400 when it is not JSON."""
    data = await request.body()
    if not data.strip():
        return None
    try:
        return json.loads(data)
    except ValueError as exc:
        raise InvalidInputError(f"The request body is not valid JSON: {exc}") from exc


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
        return Response(status_code=307, headers={"location": location})
    return None
