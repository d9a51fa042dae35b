"""Client credentials as Pulsar's clients take them: an auth plugin and its parameters.

``pulsar-admin --auth-plugin org.apache.pulsar.client.impl.auth.AuthenticationToken --auth-params
token:<token>``, a broker's ``brokerClientAuthenticationPlugin`` / ``brokerClientAuthenticationParameters``
and ``client.conf``'s ``authPlugin`` / ``authParams`` all mean the same thing. The token plugin's
parameters are ``token:<token>``, ``file:///path`` (the file holds the token), a JSON object
``{"token": "<token>"}`` or ``{"file": "file:///path"}``, or the bare token (Pulsar's
``AuthenticationToken.configure``).

>>> client_token(TOKEN_CLIENT_PLUGIN, "token:abc")
'abc'
>>> client_token(TOKEN_CLIENT_PLUGIN, '{"token": "abc"}')
'abc'
>>> client_token(None, None) is None
True
"""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import unquote, urlparse

from brokerlb.errors import InvalidConfigError

__all__ = ["TOKEN_CLIENT_PLUGIN", "AUTHENTICATION_DISABLED", "client_token", "broker_client_token"]

TOKEN_CLIENT_PLUGIN = "org.apache.pulsar.client.impl.auth.AuthenticationToken"
AUTHENTICATION_DISABLED = "org.apache.pulsar.client.impl.auth.AuthenticationDisabled"
_PLUGIN_KEY = "brokerClientAuthenticationPlugin"


def _read_token_file(url: str, key: str) -> str:
    path = unquote(urlparse(url).path) if url.startswith("file:") else url
    try:
        return Path(path).read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise InvalidConfigError(key, url, f"cannot read the token file: {exc.strerror}") from None


def client_token(plugin: str | None, params: str | None, key: str = "--auth-params") -> str | None:
    """The token to send, or ``None`` for no authentication (no plugin, or AuthenticationDisabled)."""
    if not plugin or plugin == AUTHENTICATION_DISABLED:
        if plugin is None and params:  # parameters alone: the token plugin is meant
            plugin = TOKEN_CLIENT_PLUGIN
        else:
            return None
    if plugin != TOKEN_CLIENT_PLUGIN:
        raise InvalidConfigError(
            _PLUGIN_KEY if key != "--auth-params" else "--auth-plugin",
            plugin,
            f"brokerlb clients implement {TOKEN_CLIENT_PLUGIN} only",
        )
    text = (params or "").strip()
    if not text:
        raise InvalidConfigError(
            key, params, 'the token plugin needs token:<token>, file:///path or {"token": ...}'
        )
    if text.startswith("token:"):
        return text[len("token:") :]
    if text.startswith("file:"):
        return _read_token_file(text, key)
    if text.startswith("{"):
        try:
            obj = json.loads(text)
        except ValueError:
            raise InvalidConfigError(key, "{...}", "not valid JSON") from None
        if isinstance(obj, dict) and isinstance(obj.get("token"), str):
            return str(obj["token"])
        if isinstance(obj, dict) and isinstance(obj.get("file"), str):
            return _read_token_file(obj["file"], key)
        raise InvalidConfigError(key, "{...}", 'expected {"token": ...} or {"file": ...}')
    return text


def broker_client_token(conf: object) -> str | None:
    """The token a broker sends to other brokers (``brokerClientAuthentication*``)."""
    return client_token(
        getattr(conf, "brokerClientAuthenticationPlugin", None),
        getattr(conf, "brokerClientAuthenticationParameters", None) or None,
        "brokerClientAuthenticationParameters",
    )
