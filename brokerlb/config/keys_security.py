"""Authentication, authorization and TLS keys (Pulsar's names and defaults).

``tokenSecretKey`` and the other ``token*`` keys are not fields of Pulsar's
``ServiceConfiguration`` but properties its ``AuthenticationProviderToken`` reads from
broker.conf; they are declared here so a typo is caught like any other key.
"""

from __future__ import annotations

from brokerlb.config.kinds import BOOL, LONG, OPTIONAL_STRING, STRING, STRING_SET
from brokerlb.config.registry import KeyGroup, key

__all__ = ["SecurityKeys", "TlsKeys", "PULSAR_AUTHORIZATION_PROVIDER", "TOKEN_CLIENT_PLUGIN"]

PULSAR_AUTHORIZATION_PROVIDER = "org.apache.pulsar.broker.authorization.PulsarAuthorizationProvider"
#: The client-side token plugin (``brokerClientAuthenticationPlugin``, pulsar-admin's ``--auth-plugin``).
TOKEN_CLIENT_PLUGIN = "org.apache.pulsar.client.impl.auth.AuthenticationToken"
AUTHENTICATION_DISABLED = "org.apache.pulsar.client.impl.auth.AuthenticationDisabled"
TOKEN_PROVIDER = "org.apache.pulsar.broker.authentication.AuthenticationProviderToken"

_NO_PROXIES = "brokerlb does not support Pulsar proxies' original-principal checks; refusing to start"


def _only(values: tuple[str, ...], supported: tuple[str, ...], what: str) -> str | None:
    unknown = [v for v in values if v not in supported]
    if not unknown:
        return None
    return (
        f"brokerlb does not implement the {what} {', '.join(unknown)} (only {', '.join(supported)}); "
        "refusing to start rather than run without it"
    )


class SecurityKeys(KeyGroup):
    __slots__ = ()
    CATEGORY = "Authentication and authorization"
    INTRO = (
        "Token authentication (Pulsar's AuthenticationProviderToken) and Pulsar's authorization "
        "(super-users, tenant admins, namespace permissions) on REST, WebSocket and broker-to-broker "
        "calls. A security key brokerlb does not implement refuses start-up (see docs/security.md)."
    )

    authenticationEnabled: bool = key(BOOL, False, "Require credentials on every request (401 without).")
    authenticationProviders: frozenset[str] = key(
        STRING_SET,
        (),
        "Authentication providers; brokerlb implements "
        "org.apache.pulsar.broker.authentication.AuthenticationProviderToken only.",
        check=lambda v: _only(v, (TOKEN_PROVIDER,), "authentication provider"),
    )
    authenticationRefreshCheckSeconds: int = key(
        LONG,
        60,
        "How often an open binary connection and a WebSocket session check their credentials: once "
        "the token has expired, a binary client that supports it is sent AUTH_CHALLENGE for fresh "
        "credentials (no AUTH_RESPONSE by the next check, or a bad one: the connection is closed); "
        "one that does not, and a WebSocket session, are closed.",
        ge=1,
        unit="seconds",
    )
    authorizationEnabled: bool = key(
        BOOL, False, "Check the role's permissions (403 without); needs authenticationEnabled."
    )
    authorizationProvider: str = key(
        STRING,
        PULSAR_AUTHORIZATION_PROVIDER,
        "Authorization provider; brokerlb implements PulsarAuthorizationProvider's rules only.",
        check=lambda v: _only((v,), (PULSAR_AUTHORIZATION_PROVIDER,), "authorization provider"),
    )
    superUserRoles: frozenset[str] = key(
        STRING_SET, (), "Roles allowed everything (brokers' own role belongs here)."
    )
    anonymousUserRole: str | None = key(
        OPTIONAL_STRING, None, "Role given to requests without credentials; unset = they are refused (401)."
    )
    authorizationAllowWildcardsMatching: bool = key(
        BOOL,
        False,
        "Granted roles may start or end with `*` (`my.role.*`, `*.role.my`), matching any prefix/suffix.",
    )
    authenticateOriginalAuthData: bool = key(
        BOOL,
        False,
        "Proxies only; brokerlb has no proxy role support, so true refuses start-up.",
        check=lambda v: _NO_PROXIES if v else None,
    )
    proxyRoles: frozenset[str] = key(
        STRING_SET,
        (),
        "Roles of Pulsar proxies; brokerlb has no proxy support, so any value refuses start-up.",
        check=lambda v: _NO_PROXIES if v else None,
    )
    tokenSecretKey: str | None = key(
        OPTIONAL_STRING,
        None,
        "HS256 secret for tokens: `data:;base64,...`, `file:///path`, `env:VAR`, a file path or base64.",
    )
    tokenPublicKey: str | None = key(
        OPTIONAL_STRING, None, "Public key for RS256/ES256 tokens (same forms as tokenSecretKey; DER or PEM)."
    )
    tokenPublicAlg: str | None = key(
        OPTIONAL_STRING,
        None,
        "Algorithm of tokenPublicKey (RS256, RS384, RS512, PS*, ES256 ...); unset = RS256.",
    )
    tokenAuthClaim: str | None = key(
        OPTIONAL_STRING, None, "Claim holding the role; unset = `sub` (the subject)."
    )
    tokenAudienceClaim: str | None = key(
        OPTIONAL_STRING, None, "Claim holding the token's audiences; set = tokenAudience must be among them."
    )
    tokenAudience: str | None = key(
        OPTIONAL_STRING, None, "This broker's audience (with tokenAudienceClaim)."
    )
    tokenSettingPrefix: str | None = key(
        OPTIONAL_STRING,
        None,
        "Prefix of the token keys; brokerlb reads unprefixed keys only, so a value refuses start-up.",
        check=lambda v: "brokerlb reads the unprefixed token keys only (tokenSecretKey, ...)" if v else None,
    )
    authenticateMetricsEndpoint: bool = key(
        BOOL,
        False,
        "Require credentials on /metrics too (any authenticated role); false = Prometheus scrapes without.",
    )
    brokerClientAuthenticationPlugin: str = key(
        STRING,
        AUTHENTICATION_DISABLED,
        "How a broker authenticates to other brokers: "
        "org.apache.pulsar.client.impl.auth.AuthenticationToken or AuthenticationDisabled.",
        check=lambda v: _only(
            (v,), (TOKEN_CLIENT_PLUGIN, AUTHENTICATION_DISABLED), "client authentication plugin"
        ),
    )
    brokerClientAuthenticationParameters: str = key(
        STRING,
        "",
        'The plugin\'s parameters: `token:<token>`, `file:///path/to/token` or `{"token":"<token>"}`.',
    )


class TlsKeys(KeyGroup):
    __slots__ = ()
    CATEGORY = "TLS"
    INTRO = (
        "TLS on the web port (`webServicePortTls`): certificate and key in PEM files; clients "
        "that connect with TLS are redirected to the brokers' TLS URLs."
    )

    tlsCertificateFilePath: str | None = key(OPTIONAL_STRING, None, "The broker's certificate (PEM).")
    tlsKeyFilePath: str | None = key(OPTIONAL_STRING, None, "The broker's private key (PEM).")
    tlsTrustCertsFilePath: str | None = key(
        OPTIONAL_STRING, None, "CA certificates (PEM) trusted for client certificates."
    )
    tlsRequireTrustedClientCertOnConnect: bool = key(
        BOOL, False, "Refuse TLS clients without a certificate signed by tlsTrustCertsFilePath."
    )
