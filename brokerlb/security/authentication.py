"""Who is calling: Pulsar's ``AuthenticationService`` with its token provider.

Configured with Pulsar's keys:

* ``authenticationEnabled=true`` turns it on; ``authenticationProviders`` must then be
  ``org.apache.pulsar.broker.authentication.AuthenticationProviderToken`` (the only provider
  brokerlb implements -- any other refuses start-up, :mod:`brokerlb.security.startup`);
* ``tokenSecretKey`` (HS256/384/512) or ``tokenPublicKey`` (with ``tokenPublicAlg``, RS256
  by default), read as Pulsar reads them (:func:`~brokerlb.security.tokens.read_key_setting`);
* ``tokenAuthClaim`` (the claim holding the role; ``sub`` by default), ``tokenAudienceClaim``
  and ``tokenAudience``;
* ``anonymousUserRole``: the role of a request without credentials (none = 401).

Credentials are an HTTP ``Authorization: Bearer <token>`` header, the ``token`` query
parameter on WebSocket upgrades (Pulsar's WebSocket service reads it there, because browsers
cannot set headers on a WebSocket), or -- for the binary protocol -- the CONNECT command's
``auth_method_name`` ``token`` and ``auth_data`` (:meth:`AuthenticationService.authenticate`).

Every failure is :class:`~brokerlb.errors.AuthenticationError` (HTTP 401) with Pulsar's words.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from brokerlb.errors import AuthenticationError, InvalidConfigError
from brokerlb.security.tokens import (
    HMAC_ALGORITHMS,
    TokenVerifier,
    public_key,
    read_key_setting,
    secret_key,
)

__all__ = ["AuthenticationService", "Credentials", "TOKEN_PROVIDER", "TOKEN_AUTH_METHOD", "bearer_token"]

#: Pulsar's class name of the token provider: the value of ``authenticationProviders``.
TOKEN_PROVIDER = "org.apache.pulsar.broker.authentication.AuthenticationProviderToken"
#: The auth method name the token provider answers to (CONNECT's ``auth_method_name``).
TOKEN_AUTH_METHOD = "token"
_BEARER = "Bearer "


@dataclass(frozen=True)
class Credentials:
    """Who authenticated, and until when: a token's ``exp`` (seconds since the epoch), ``None`` for
    credentials that do not expire (no ``exp``, ``anonymousUserRole``, authentication off)."""

    role: str | None
    expires_at: float | None = None

    def expired(self, now: float) -> bool:
        return self.expires_at is not None and now >= self.expires_at


def bearer_token(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header; ``None`` without a header.

    A header of another scheme is Pulsar's "Invalid HTTP Authorization header" (401).
    """
    if authorization is None:
        return None
    if not authorization.startswith(_BEARER):
        raise AuthenticationError("Authentication required: Invalid HTTP Authorization header")
    return authorization[len(_BEARER) :]


def token_verifier(conf: Any) -> TokenVerifier:
    """The verifier the token provider builds from the broker's config (Pulsar's ``initialize``)."""
    secret, public = conf.tokenSecretKey, conf.tokenPublicKey
    if secret:
        key: Any = secret_key(read_key_setting(secret, "tokenSecretKey"), HMAC_ALGORITHMS[0])
    elif public:
        key = public_key(read_key_setting(public, "tokenPublicKey"), conf.tokenPublicAlg or "RS256")
    else:
        raise InvalidConfigError(
            "tokenSecretKey", None, "token authentication needs tokenSecretKey or tokenPublicKey"
        )
    if conf.tokenAudienceClaim and not conf.tokenAudience:
        raise InvalidConfigError(
            "tokenAudience",
            None,
            f"tokenAudienceClaim is {conf.tokenAudienceClaim!r} but tokenAudience (this broker's audience) is unset",
        )
    return TokenVerifier(
        key,
        role_claim=conf.tokenAuthClaim or "sub",
        audience_claim=conf.tokenAudienceClaim or None,
        audience=conf.tokenAudience or None,
    )


@dataclass(frozen=True)
class AuthenticationService:
    """Turns credentials into a role. ``enabled`` false: everyone is anonymous and allowed."""

    enabled: bool
    verifier: TokenVerifier | None = None
    anonymous_role: str | None = None

    @classmethod
    def from_config(cls, conf: Any) -> AuthenticationService:
        if not conf.authenticationEnabled:
            return cls(False)
        providers = tuple(conf.authenticationProviders)
        if providers != (TOKEN_PROVIDER,):
            raise InvalidConfigError(
                "authenticationProviders",
                ",".join(providers),
                f"brokerlb implements only {TOKEN_PROVIDER}",
            )
        return cls(True, token_verifier(conf), conf.anonymousUserRole or None)

    @classmethod
    def disabled(cls) -> AuthenticationService:
        return cls(False)

    def authenticate(self, auth_method: str | None, auth_data: str | bytes | None) -> str | None:
        """The role of a binary-protocol CONNECT (``auth_method_name``, ``auth_data``).

        Returns ``None`` when authentication is off; raises :class:`AuthenticationError` for a
        missing method or data (unless ``anonymousUserRole`` is set), an unknown method, or a
        token that does not verify.
        """
        return self.credentials(auth_method, auth_data).role

    def credentials(self, auth_method: str | None, auth_data: str | bytes | None) -> Credentials:
        """:meth:`authenticate` with the credentials' expiry (what a long-lived connection re-checks)."""
        if not self.enabled:
            return Credentials(None)
        if not auth_method and not auth_data:
            return Credentials(self._anonymous())
        if auth_method != TOKEN_AUTH_METHOD:
            raise AuthenticationError(
                f"Unsupported authentication method: {auth_method!r} (brokerlb supports token)"
            )
        token = auth_data.decode("utf-8", "replace") if isinstance(auth_data, bytes) else (auth_data or "")
        return self._verify(token)

    def authenticate_http(self, authorization: str | None, query_token: str | None = None) -> str | None:
        """The role of an HTTP request from its ``Authorization`` header or its ``token`` query parameter
        (WebSocket upgrades); ``None`` when authentication is off."""
        return self.credentials_http(authorization, query_token).role

    def credentials_http(self, authorization: str | None, query_token: str | None = None) -> Credentials:
        """:meth:`authenticate_http` with the credentials' expiry (a WebSocket session re-checks it)."""
        if not self.enabled:
            return Credentials(None)
        token = bearer_token(authorization)
        if token is None:
            token = query_token
        if token is None:
            return Credentials(self._anonymous())
        return self._verify(token)

    def _verify(self, token: str) -> Credentials:
        assert self.verifier is not None
        role, expires_at = self.verifier.identity(token)
        return Credentials(role, expires_at)

    def _anonymous(self) -> str:
        if self.anonymous_role:
            return self.anonymous_role
        raise AuthenticationError("Authentication required: no credentials (Authorization: Bearer <token>)")


def first_header(headers: Iterable[tuple[bytes, bytes]], name: bytes) -> str | None:
    for key, value in headers:
        if key == name:
            return bytes(value).decode("latin-1")
    return None
