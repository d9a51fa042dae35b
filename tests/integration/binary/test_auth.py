"""Token authentication and topic permissions on the binary protocol, with the official client."""

from __future__ import annotations

import asyncio
import base64
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from brokerlb.admin import AsyncAdminClient
from brokerlb.messaging.frames import FrameDecoder, simple_frame
from brokerlb.messaging.wire import CommandConnect, CommandError, ServerError
from brokerlb.security.tokens import create_secret_key, create_token, secret_key
from brokerlb.testing.clusters import InProcessCluster
from brokerlb.testing.official_client import quiet_logger

from .conftest import off_loop, pulsar, service_urls

pytestmark = pytest.mark.asyncio(loop_scope="module")

SECRET = create_secret_key()


def token(role: str) -> str:
    return create_token(secret_key(SECRET), role)


OVERRIDES = {
    "authenticationEnabled": True,
    "authorizationEnabled": True,
    "authenticationProviders": "org.apache.pulsar.broker.authentication.AuthenticationProviderToken",
    "tokenSecretKey": "data:;base64," + base64.b64encode(SECRET).decode(),
    "superUserRoles": "admin,broker",
    "brokerClientAuthenticationPlugin": "org.apache.pulsar.client.impl.auth.AuthenticationToken",
    "brokerClientAuthenticationParameters": "token:" + token("broker"),
}


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def secured() -> AsyncIterator[tuple[InProcessCluster, str]]:
    cluster = await InProcessCluster(2, OVERRIDES).start()
    try:
        ns = f"public/authz-{uuid.uuid4().hex[:8]}"
        async with AsyncAdminClient(cluster.urls[0], token=token("admin")) as admin:
            await admin.create_namespace(ns, num_bundles=4)
            await admin.grant_permission(ns, "app", ["produce", "consume"])
            await admin.grant_permission(ns, "writer", ["produce"])
        yield cluster, ns
    finally:
        await cluster.stop()


def client_as(cluster: InProcessCluster, role: str | None) -> Any:
    auth = pulsar.AuthenticationToken(token(role)) if role else None
    return pulsar.Client(
        service_urls(cluster)["pulsar"],
        authentication=auth,
        operation_timeout_seconds=30,
        logger=quiet_logger(),
    )


async def test_a_granted_role_produces_and_consumes(secured: tuple[InProcessCluster, str]) -> None:
    cluster, ns = secured
    topic = f"persistent://{ns}/allowed"

    def run() -> bytes:
        client = client_as(cluster, "app")
        try:
            consumer = client.subscribe(topic, "s")
            client.create_producer(topic).send(b"hello")
            message = consumer.receive(30_000)
            consumer.acknowledge(message)
            return bytes(message.data())
        finally:
            client.close()

    assert await off_loop(run) == b"hello"


@pytest.mark.parametrize(
    ("role", "action", "expected"),
    [
        ("stranger", "produce", pulsar.AuthorizationError),  # authenticated, no grant
        ("writer", "consume", pulsar.AuthorizationError),  # produce only
    ],
)
async def test_refusals_name_the_missing_credentials_or_permission(
    secured: tuple[InProcessCluster, str], role: str | None, action: str, expected: type[BaseException]
) -> None:
    cluster, ns = secured
    topic = f"persistent://{ns}/guarded"

    def run() -> BaseException:
        client = client_as(cluster, role)
        try:
            with pytest.raises(pulsar.PulsarException) as error:
                if action == "produce":
                    client.create_producer(topic)
                else:
                    client.subscribe(topic, "s")
            return error.value
        finally:
            client.close()

    assert isinstance(await off_loop(run), expected)


async def test_a_connection_without_credentials_is_refused_with_authentication_error(
    secured: tuple[InProcessCluster, str],
) -> None:
    """Pulsar's answer to CONNECT without a token: ERROR{AuthenticationError}, then the connection closes
    (the C++ client takes that for a broken connection and retries until its operation timeout)."""
    cluster, _ns = secured
    reader, writer = await asyncio.open_connection("127.0.0.1", cluster.services[0].binary.port)
    writer.write(simple_frame(CommandConnect("raw-test", protocol_version=21)))
    decoder = FrameDecoder()
    frames: list[Any] = []
    while True:
        data = await asyncio.wait_for(reader.read(65536), 30)
        if not data:
            break
        frames += decoder.feed(data)
    writer.close()
    [error] = [f.command for f in frames]
    assert isinstance(error, CommandError) and error.error == ServerError.AuthenticationError
    assert "credentials" in error.message or "token" in error.message.lower()
