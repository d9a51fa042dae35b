"""The binary protocol with TLS, and the security cases ``test_auth.py`` leaves out, through Apache
Pulsar's official client and raw frames.

Two brokers with ``authenticationEnabled`` / ``authorizationEnabled`` (token provider) and a TLS port
beside the plain one (``brokerServicePortTls``, certificates made by trustme at run time):

* CONNECT without a token, with garbage or with a token of another key: ``ERROR{AuthenticationError}``;
* a role may look up, produce and consume only as its grants say (Pulsar's ``ServerCnx`` checks:
  lookup = produce or consume, PRODUCER = produce, SUBSCRIBE = consume) -- ``AuthorizationError``;
* over ``pulsar+ssl://`` the lookups answer the owner's TLS URL and the client follows it;
* a GET_TOPICS_OF_NAMESPACE pattern is matched with RE2 (a backtracking pattern costs linear time).
"""

from __future__ import annotations

import asyncio
import base64
import uuid
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
import trustme

from brokerlb.admin import AsyncAdminClient
from brokerlb.messaging.frames import FrameDecoder, simple_frame
from brokerlb.messaging.wire import (
    CommandConnect,
    CommandConnected,
    CommandError,
    CommandGetTopicsOfNamespace,
    CommandGetTopicsOfNamespaceResponse,
    ServerError,
)
from brokerlb.security.tokens import create_secret_key, create_token, secret_key
from brokerlb.testing.clusters import InProcessCluster
from brokerlb.testing.official_client import quiet_logger

from .conftest import off_loop, pulsar

pytestmark = pytest.mark.asyncio(loop_scope="module")

SECRET = create_secret_key()
GUARD_MS = 30_000


def token(role: str, key: bytes = SECRET) -> str:
    return create_token(secret_key(key), role)


@pytest.fixture(scope="module")
def ca_file(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    directory = tmp_path_factory.mktemp("binary-pki")
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1", "localhost")
    files = {k: str(directory / f"{k}.pem") for k in ("ca", "cert", "key")}
    ca.cert_pem.write_to_path(files["ca"])
    cert.cert_chain_pems[0].write_to_path(files["cert"])
    cert.private_key_pem.write_to_path(files["key"])
    return files


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def secured(ca_file: dict[str, str]) -> Any:
    overrides = {
        "authenticationEnabled": True,
        "authorizationEnabled": True,
        "authenticationProviders": "org.apache.pulsar.broker.authentication.AuthenticationProviderToken",
        "tokenSecretKey": "data:;base64," + base64.b64encode(SECRET).decode(),
        "superUserRoles": "admin",
        "brokerClientAuthenticationPlugin": "org.apache.pulsar.client.impl.auth.AuthenticationToken",
        "brokerClientAuthenticationParameters": "token:" + token("admin"),
        "brokerServicePortTls": 0,
        "tlsCertificateFilePath": ca_file["cert"],
        "tlsKeyFilePath": ca_file["key"],
    }
    cluster = await InProcessCluster(2, overrides).start()
    ns = f"public/bin-sec-{uuid.uuid4().hex[:8]}"
    try:
        async with AsyncAdminClient(cluster.urls[0], token=token("admin")) as admin:
            await admin.create_namespace(ns, num_bundles=4)
            await admin.grant_permission(ns, "app", ["produce", "consume"])
            await admin.grant_permission(ns, "reader", ["consume"])
        yield cluster, ns
    finally:
        await cluster.stop()


def client(url: str, role_token: str | None, ca: str | None = None) -> Any:
    options: dict[str, Any] = {"operation_timeout_seconds": 10, "logger": quiet_logger()}
    if role_token is not None:
        options["authentication"] = pulsar.AuthenticationToken(role_token)
    if ca is not None:
        options["tls_trust_certs_file_path"] = ca
    return pulsar.Client(url, **options)


def plain_url(cluster: InProcessCluster) -> str:
    return cluster.services[1].identity.pulsar_service_url


def tls_url(cluster: InProcessCluster) -> str:
    return cluster.services[1].identity.pulsar_service_url_tls


async def _connect(port: int, method: str | None, data: bytes | None) -> list[Any]:
    """CONNECT by hand; the commands the broker answers until it closes (or after CONNECTED)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    decoder, answers = FrameDecoder(), []
    writer.write(
        simple_frame(CommandConnect("raw", auth_data=data, protocol_version=21, auth_method_name=method))
    )
    try:
        while True:
            chunk = await asyncio.wait_for(reader.read(65536), 30)  # guards against hanging only
            if not chunk:
                return answers
            answers += [f.command for f in decoder.feed(chunk)]
            if any(isinstance(a, CommandConnected) for a in answers):
                return answers
    finally:
        writer.close()


async def test_connect_needs_a_valid_token(secured) -> None:
    cluster, ns = secured
    port = cluster.services[0].binary.port
    for method, data in (
        (None, None),
        ("token", b"garbage"),
        ("token", token("admin", create_secret_key()).encode()),
    ):
        answers = await _connect(port, method, data)
        assert len(answers) == 1 and isinstance(answers[0], CommandError), answers
        assert answers[0].error == ServerError.AuthenticationError, answers[0]
    assert isinstance((await _connect(port, "token", token("app").encode()))[-1], CommandConnected)


async def test_roles_act_as_their_grants_say(secured) -> None:
    cluster, ns = secured
    topic = f"persistent://{ns}/t-grants"

    def as_role(role: str, act: Any) -> Any:
        c = client(plain_url(cluster), token(role))
        try:
            return act(c)
        finally:
            c.close()

    def produce_and_consume(c: Any) -> bytes:
        consumer = c.subscribe(topic, "s")
        producer = c.create_producer(topic)
        producer.send(b"granted")
        message = consumer.receive(GUARD_MS)
        consumer.acknowledge(message)
        return bytes(message.data())

    assert await off_loop(as_role, "app", produce_and_consume) == b"granted"
    assert await off_loop(as_role, "admin", lambda c: c.create_producer(topic).topic()) == topic
    # a consumer-only role subscribes but may not produce; a stranger may do neither (not even look up)
    assert await off_loop(as_role, "reader", lambda c: c.subscribe(topic, "r").topic()) == topic
    with pytest.raises(pulsar.AuthorizationError):
        await off_loop(as_role, "reader", lambda c: c.create_producer(topic))
    with pytest.raises(pulsar.AuthorizationError):
        await off_loop(as_role, "stranger", lambda c: c.subscribe(topic, "x"))


async def test_tls_port_and_tls_lookups(secured, ca_file) -> None:
    cluster, ns = secured
    assert all(
        s.identity.pulsar_service_url_tls.startswith("pulsar+ssl://127.0.0.1:") for s in cluster.services
    )
    topics = [f"persistent://{ns}/t-tls-{i}" for i in range(8)]  # over 4 bundles: both brokers own some

    def run() -> list[bytes]:
        c = client(tls_url(cluster), token("app"), ca_file["ca"])
        try:
            got = []
            for topic in topics:
                consumer = c.subscribe(topic, "s")
                c.create_producer(topic).send(topic.encode())
                message = consumer.receive(GUARD_MS)
                consumer.acknowledge(message)
                got.append(bytes(message.data()))
            return got
        finally:
            c.close()

    assert await off_loop(run) == [t.encode() for t in topics]
    async with AsyncAdminClient(cluster.urls[0], token=token("admin")) as admin:
        owners = {(await admin.lookup_topic(t))["brokerUrlTls"] for t in topics}
    assert owners <= {s.identity.pulsar_service_url_tls for s in cluster.services}


async def test_an_untrusted_certificate_is_refused(secured) -> None:
    cluster, ns = secured

    def attempt() -> None:
        c = client(tls_url(cluster), token("app"), str(Path(__file__)))  # not a CA file of ours
        try:
            c.create_producer(f"persistent://{ns}/t-untrusted")
        finally:
            c.close()

    with pytest.raises(pulsar.PulsarException):
        await off_loop(attempt)


async def _ask(port: int, role: str, command: Any) -> Any:
    """CONNECT as ``role``, send ``command``, return the broker's answer."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    decoder, answers = FrameDecoder(), []
    writer.write(
        simple_frame(
            CommandConnect(
                "raw", auth_data=token(role).encode(), protocol_version=21, auth_method_name="token"
            )
        )
    )
    writer.write(simple_frame(command))
    try:
        while len(answers) < 2:
            chunk = await asyncio.wait_for(reader.read(65536), 30)  # guards against hanging only
            assert chunk, f"closed after {answers}"
            answers += [f.command for f in decoder.feed(chunk)]
        assert isinstance(answers[0], CommandConnected), answers
        return answers[1]
    finally:
        writer.close()


async def test_topics_of_a_namespace_with_a_backtracking_pattern(secured) -> None:
    """GET_TOPICS_OF_NAMESPACE (pattern subscriptions): the namespace's GET_TOPICS check, and the
    client's pattern in RE2 -- ``(a+)+b`` against a long run of ``a`` would not finish with a
    backtracking engine; one RE2 refuses (a backreference) is NotAllowedError naming it."""
    cluster, _ = secured
    ns = f"public/bin-re-{uuid.uuid4().hex[:8]}"  # its own: it adds a topic
    long_name = f"persistent://{ns}/{'a' * 40}"
    async with AsyncAdminClient(cluster.urls[0], token=token("admin")) as admin:
        await admin.create_namespace(ns, num_bundles=1)
        await admin.grant_permission(ns, "app", ["consume"])
        await admin.create_partitioned_topic(long_name, 1)
    port = cluster.services[0].binary.port
    pattern = f"{ns}/(a+)+b"
    answer = await _ask(port, "app", CommandGetTopicsOfNamespace(1, ns, 0, pattern))
    assert isinstance(answer, CommandGetTopicsOfNamespaceResponse) and answer.topics == [], answer
    answer = await _ask(port, "app", CommandGetTopicsOfNamespace(2, ns, 0, f"{ns}/a+-partition-0"))
    assert answer.topics == [f"{long_name}-partition-0"], answer
    refused = await _ask(port, "app", CommandGetTopicsOfNamespace(3, ns, 0, r"(a)\1"))
    assert isinstance(refused, CommandError) and refused.error == ServerError.NotAllowedError, refused
    assert "topics_pattern" in refused.message
    stranger = await _ask(port, "stranger", CommandGetTopicsOfNamespace(4, ns, 0, None))
    assert isinstance(stranger, CommandError) and stranger.error == ServerError.AuthorizationError, stranger
