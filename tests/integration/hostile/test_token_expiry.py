"""Expired tokens stop working on open connections, with Pulsar's refresh.

The probe of issue 30: an expired token kept working on an open binary connection (accepted 82 s
after expiry). Pulsar re-checks every ``authenticationRefreshCheckSeconds`` and asks a client that
supports it for fresh credentials (AUTH_CHALLENGE / AUTH_RESPONSE); the official client answers with
what its authentication gives now (a token supplier's new token). Here the check runs every second.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from brokerlb.messaging import producer_path
from brokerlb.messaging.wire import (
    AuthData,
    CommandAuthChallenge,
    CommandAuthResponse,
    CommandConnect,
    CommandConnected,
    CommandError,
    CommandPing,
    CommandPong,
    FeatureFlags,
    ServerError,
)
from brokerlb.security.tokens import create_secret_key, create_token, secret_key
from brokerlb.testing.hostile import RawConnection, token_auth_settings
from brokerlb.testing.official_client import quiet_logger
from brokerlb.testing.standalone_process import StandaloneProcess

pytestmark = [pytest.mark.slow, pytest.mark.asyncio(loop_scope="module")]

SECRET = create_secret_key()
GUARD = 60.0


def token(role: str, expires_in: float | None = None) -> str:
    return create_token(secret_key(SECRET), role, expires_in=expires_in)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def broker() -> AsyncIterator[StandaloneProcess]:
    settings = token_auth_settings(SECRET, authenticationRefreshCheckSeconds=1)
    async with StandaloneProcess(1, settings) as process:
        yield process


async def _connect(url: str, credentials: str, refresh: bool) -> RawConnection:
    raw = await RawConnection.open(url, connect=False)
    flags = FeatureFlags(supports_auth_refresh=True) if refresh else None
    raw.send(
        CommandConnect(
            "hostile-test",
            protocol_version=21,
            auth_method_name="token",
            auth_data=credentials.encode(),
            feature_flags=flags,
        )
    )
    assert isinstance(await raw.next(), CommandConnected)
    return raw


async def test_a_client_that_supports_refresh_is_challenged_and_keeps_its_connection(
    broker: StandaloneProcess,
) -> None:
    raw = await _connect(broker.binary_urls[0], token("app", expires_in=2), refresh=True)
    for _ in range(2):  # twice: each fresh token expires in turn
        challenge = await raw.next(GUARD)
        assert isinstance(challenge, CommandAuthChallenge), challenge
        assert challenge.challenge is not None and challenge.challenge.auth_data == b"PulsarAuthRefresh"
        raw.send(
            CommandAuthResponse("hostile-test", AuthData("token", token("app", expires_in=2).encode()), 21)
        )
    raw.send(CommandPing())
    assert isinstance(await raw.next(), (CommandPong, CommandAuthChallenge))  # still served
    raw.close()


async def test_a_refresh_with_bad_credentials_or_another_role_closes_the_connection(
    broker: StandaloneProcess,
) -> None:
    for answer in (token("app", expires_in=-10), "not-a-token", token("someone-else", expires_in=30)):
        raw = await _connect(broker.binary_urls[0], token("app", expires_in=2), refresh=True)
        assert isinstance(await raw.next(GUARD), CommandAuthChallenge)
        raw.send(CommandAuthResponse("hostile-test", AuthData("token", answer.encode()), 21))
        error = await raw.next(GUARD)
        assert isinstance(error, CommandError) and error.error == ServerError.AuthenticationError, error
        assert await raw.next(GUARD) is None  # closed


async def test_a_client_that_cannot_refresh_is_closed_once_its_token_expired(
    broker: StandaloneProcess,
) -> None:
    raw = await _connect(broker.binary_urls[0], token("app", expires_in=2), refresh=False)
    began = time.monotonic()
    assert await raw.next(GUARD) is None, "the connection outlived its token"
    print(f"closed {time.monotonic() - began:.1f} s after CONNECT (token valid 2 s, checked every 1 s)")


async def test_a_challenged_client_that_does_not_answer_is_closed(broker: StandaloneProcess) -> None:
    raw = await _connect(broker.binary_urls[0], token("app", expires_in=2), refresh=True)
    assert isinstance(await raw.next(GUARD), CommandAuthChallenge)
    assert await raw.next(GUARD) is None  # no AUTH_RESPONSE by the next check


async def test_the_official_client_refreshes_through_its_token_supplier(broker: StandaloneProcess) -> None:
    import pulsar

    issued: list[float] = []

    def supplier() -> str:
        issued.append(time.monotonic())
        return token("app", expires_in=3)

    def produce_across_expiries() -> int:
        client = pulsar.Client(
            broker.binary_urls[0],
            authentication=pulsar.AuthenticationToken(supplier),
            operation_timeout_seconds=30,
            logger=quiet_logger(),
        )
        try:
            producer = client.create_producer(
                "persistent://public/default/refreshed", send_timeout_millis=10_000
            )
            sent = 0
            deadline = time.monotonic() + GUARD  # against a hang only
            while len(issued) < 3 and time.monotonic() < deadline:  # three tokens: two refreshes
                producer.send(b"fresh")  # each acknowledged, across the expiries
                sent += 1
                time.sleep(0.05)
            producer.send(b"after the refreshes")
            return sent
        finally:
            client.close()

    sent = await asyncio.wait_for(asyncio.to_thread(produce_across_expiries), 2 * GUARD)
    assert sent > 0
    assert len(issued) >= 3, f"the client was asked for fresh credentials {len(issued) - 1} times"


async def test_an_official_client_with_a_token_that_expired_is_stopped(broker: StandaloneProcess) -> None:
    import pulsar

    def send_after_expiry() -> str:
        client = pulsar.Client(
            broker.binary_urls[0],
            authentication=pulsar.AuthenticationToken(token("app", expires_in=5)),
            operation_timeout_seconds=5,
            logger=quiet_logger(),
        )
        try:
            producer = client.create_producer("persistent://public/default/expired", send_timeout_millis=4000)
            producer.send(b"while valid")
            deadline = time.monotonic() + GUARD  # against a hang only
            while producer.is_connected():  # until the broker's check closes the expired connection
                if time.monotonic() > deadline:
                    return "still connected"
                time.sleep(0.05)
            try:
                producer.send(b"after expiry")
            except pulsar.PulsarException as exc:
                return type(exc).__name__
            return "accepted"
        finally:
            client.close()

    outcome = await asyncio.wait_for(asyncio.to_thread(send_after_expiry), 2 * GUARD)
    assert outcome not in ("accepted", "still connected"), outcome


async def test_a_websocket_session_is_closed_once_its_token_expired(broker: StandaloneProcess) -> None:
    import httpx
    import websockets

    async with httpx.AsyncClient(timeout=GUARD) as http:  # the topic's bundle gets an owner
        looked_up = await http.get(
            f"{broker.urls[0]}/lookup/v2/topic/persistent/public/default/ws-expiry",
            headers={"authorization": f"Bearer {token('app')}"},
        )
        assert looked_up.status_code == 200, looked_up.text
    url = broker.urls[0].replace("http://", "ws://") + producer_path("persistent://public/default/ws-expiry")
    async with websockets.connect(f"{url}?token={token('app', expires_in=2)}") as ws:
        began = time.monotonic()
        with pytest.raises(websockets.ConnectionClosed) as closed:
            async with asyncio.timeout(GUARD):
                while True:
                    await ws.recv()
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1008
    print(f"WebSocket session closed {time.monotonic() - began:.1f} s after it opened (token valid 2 s)")
