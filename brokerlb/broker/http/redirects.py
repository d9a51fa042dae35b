"""307 answers: the same request, sent to another broker (Pulsar's redirect rule)."""

from __future__ import annotations

from urllib.parse import parse_qsl, urlencode

from brokerlb.broker.redirect import Redirect

__all__ = ["redirect_location"]


def redirect_location(redirect: Redirect, raw_path: bytes | str, query_string: bytes | str) -> str:
    """``redirect.url`` + the original (still encoded) path + the query with ``authoritative`` replaced."""
    path = raw_path.decode("latin-1") if isinstance(raw_path, bytes) else raw_path
    query = query_string.decode("latin-1") if isinstance(query_string, bytes) else query_string
    params = [(k, v) for k, v in parse_qsl(query, keep_blank_values=True) if k != "authoritative"]
    params.append(("authoritative", "true" if redirect.authoritative else "false"))
    return f"{redirect.url.rstrip('/')}{path}?{urlencode(params)}"
