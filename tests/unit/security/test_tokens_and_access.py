"""Tokens as Pulsar makes and checks them; every route declares its access; refused security keys."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any
from unittest.mock import MagicMock

import jwt
import pytest

from brokerlb.config import ServiceConfig, load_broker_conf
from brokerlb.errors import AuthenticationError, InvalidConfigError
from brokerlb.security.authentication import TOKEN_PROVIDER, AuthenticationService
from brokerlb.security.authorization import role_matches
from brokerlb.security.client_auth import TOKEN_CLIENT_PLUGIN, client_token
from brokerlb.security.tokens import (
    TokenVerifier,
    create_key_pair,
    create_secret_key,
    create_token,
    private_key,
    public_key,
    read_key_setting,
    secret_key,
)


def test_secret_key_settings_in_every_pulsar_form(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    key = create_secret_key()
    b64 = base64.b64encode(key).decode()
    (tmp_path / "s.key").write_bytes(key)
    monkeypatch.setenv("I19_KEY", b64)
    for setting in (
        f"data:;base64,{b64}",
        f"file://{tmp_path}/s.key",
        str(tmp_path / "s.key"),
        "env:I19_KEY",
        b64,
    ):
        assert read_key_setting(setting) == key, setting
    with pytest.raises(InvalidConfigError, match="cannot read the key"):
        read_key_setting("file:///no/such/key")


def test_tokens_verify_only_with_their_key_and_family() -> None:
    key = secret_key(create_secret_key())
    good = create_token(key, "app")
    verifier = TokenVerifier(key)
    assert verifier.role(good) == "app"
    other = TokenVerifier(secret_key(create_secret_key()))
    for bad in (create_token(secret_key(create_secret_key()), "app"), "garbage", "", good + "x"):
        with pytest.raises(AuthenticationError):
            verifier.role(bad)
    unsigned = jwt.encode({"sub": "admin"}, key=None, algorithm="none")
    with pytest.raises(AuthenticationError):
        verifier.role(unsigned)
    with pytest.raises(AuthenticationError):
        other.role(good)
    expired = create_token(key, "app", expires_in=10, now=0)
    with pytest.raises(AuthenticationError, match="expired"):
        verifier.role(expired)


def test_key_pairs_rs256_and_es256() -> None:
    for alg in ("RS256", "ES256"):
        private, public = create_key_pair(alg)
        token = create_token(private_key(private, alg), "app")
        assert TokenVerifier(public_key(public, alg)).role(token) == "app"
    rs_private, rs_public = create_key_pair("RS256")
    with pytest.raises(InvalidConfigError):
        public_key(rs_public, "ES256")
    # an HS256 token made with the RSA public key as secret (algorithm confusion) does not verify
    forged = jwt.encode({"sub": "admin"}, rs_public * 2, algorithm="HS256")
    with pytest.raises(AuthenticationError):
        TokenVerifier(public_key(rs_public)).role(forged)
    assert rs_private


def test_role_claim_audience_and_anonymous() -> None:
    raw = create_secret_key()
    conf = ServiceConfig(
        authenticationEnabled=True,
        authenticationProviders=TOKEN_PROVIDER,
        tokenSecretKey="data:;base64," + base64.b64encode(raw).decode(),
        tokenAuthClaim="roles",
        tokenAudienceClaim="aud",
        tokenAudience="cluster-a",
        anonymousUserRole="anon",
    )
    service = AuthenticationService.from_config(conf)
    token = create_token(secret_key(raw), "x", claims={"roles": ["r1", "r2"], "aud": ["cluster-a"]})
    assert service.authenticate_http(f"Bearer {token}") == "r1"
    assert service.authenticate("token", token) == "r1"
    assert service.authenticate_http(None) == "anon"
    wrong_aud = create_token(secret_key(raw), "x", claims={"roles": "r1", "aud": "cluster-b"})
    with pytest.raises(AuthenticationError, match="not contains this broker"):
        service.authenticate_http(f"Bearer {wrong_aud}")
    with pytest.raises(AuthenticationError, match="Invalid HTTP Authorization header"):
        service.authenticate_http(f"Basic {token}")
    with pytest.raises(AuthenticationError, match="Unsupported authentication method"):
        service.authenticate("tls", b"")


def test_wildcard_roles_only_at_either_end() -> None:
    assert role_matches("my.role.*", "my.role.1", True) and not role_matches("my.role.*", "my.role.1", False)
    assert role_matches("*.role.my", "1.role.my", True)
    assert not role_matches("my.*.role", "my.1.role", True)


def test_client_auth_params_as_pulsar_admin(tmp_path: Path) -> None:
    (tmp_path / "t").write_text("abc\n")
    assert client_token(TOKEN_CLIENT_PLUGIN, f"file://{tmp_path}/t") == "abc"
    assert client_token(TOKEN_CLIENT_PLUGIN, "abc") == "abc"
    assert client_token(None, "token:abc") == "abc"
    with pytest.raises(InvalidConfigError, match="implement"):
        client_token("org.apache.pulsar.client.impl.auth.AuthenticationTls", "x")


@pytest.mark.parametrize(
    "setting",
    [
        "authenticationProviders=org.apache.pulsar.broker.authentication.AuthenticationProviderTls",
        "authorizationProvider=com.example.MyProvider",
        "authenticateOriginalAuthData=true",
        "proxyRoles=proxy",
        "tokenSettingPrefix=x_",
        "tlsEnabledWithKeyStore=true",
        "tlsAllowInsecureConnection=true",
        "brokerClientTlsEnabled=true",
        "authorizationEnabled=true",
        "brokerClientAuthenticationPlugin=org.apache.pulsar.client.impl.auth.AuthenticationTls",
    ],
)
def test_unimplemented_security_settings_refuse_to_load(setting: str) -> None:
    with pytest.raises(InvalidConfigError) as info:
        load_broker_conf(None, [setting])
    assert info.value.key == setting.split("=")[0]


def test_every_route_declares_its_access() -> None:
    """Every operation of the app (routes added by any module) carries an ``x-brokerlb-access``
    declaration; an undeclared route is allowed to super-users only, and fails here."""
    from fastapi.routing import APIRoute

    from brokerlb.broker.http.access import ACCESS_KEY, Access, route_access
    from brokerlb.broker.http.app import create_app

    service = MagicMock()  # building the routes touches only attributes; no request is served
    service.conf = ServiceConfig(clusterName="c")
    service.data_path = None
    app = create_app(service).fastapi  # type: ignore[arg-type]
    spec = app.openapi()
    operations = [(m.upper(), p, op) for p, ms in spec["paths"].items() for m, op in ms.items()]
    assert len(operations) >= 78
    missing = [f"{m} {p}" for m, p, op in operations if ACCESS_KEY not in op]
    assert not missing, f"declare openapi_extra=access(Access....) on: {missing}"
    assert {Access(op[ACCESS_KEY]) for _m, _p, op in operations} <= set(Access)
    # routes left out of the document (include_in_schema=False, e.g. the dashboard) declare theirs too

    def api_routes(routes: list[Any]) -> list[APIRoute]:  # included routers may be kept as wrappers
        found: list[APIRoute] = []
        for route in routes:
            if isinstance(route, APIRoute):
                found.append(route)
            inner = getattr(route, "original_router", None)
            if inner is not None:
                found += api_routes(list(inner.routes))
        return found

    hidden = [r for r in api_routes(list(app.routes)) if not r.include_in_schema]
    assert hidden
    assert not [r.path for r in hidden if route_access(r) is None], "declare access on hidden routes too"


@pytest.mark.parametrize("authenticate_metrics", [False, True])
def test_metrics_need_credentials_only_with_authenticate_metrics_endpoint(authenticate_metrics: bool) -> None:
    """Pulsar serves /metrics without credentials unless ``authenticateMetricsEndpoint=true``; then
    any authenticated role may scrape (no permission is checked)."""
    import asyncio

    from brokerlb.broker.http.access import Access, Security
    from brokerlb.security.authorization import AuthorizationService

    raw = create_secret_key()
    conf = ServiceConfig(
        authenticationEnabled=True,
        authenticationProviders=TOKEN_PROVIDER,
        tokenSecretKey="data:;base64," + base64.b64encode(raw).decode(),
        authenticateMetricsEndpoint=authenticate_metrics,
    )
    security = Security(
        AuthenticationService.from_config(conf),
        AuthorizationService(True, frozenset({"admin"})),
        authenticate_metrics,
    )
    scraper = f"Bearer {create_token(secret_key(raw), 'prometheus')}"
    assert asyncio.run(security.check(Access.METRICS, {}, scraper)) == (
        "prometheus" if authenticate_metrics else None
    )
    if authenticate_metrics:
        with pytest.raises(AuthenticationError):
            asyncio.run(security.check(Access.METRICS, {}, None))
    else:
        assert asyncio.run(security.check(Access.METRICS, {}, None)) is None
