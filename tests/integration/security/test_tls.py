"""TLS on the web port (``webServicePortTls``), beside the plain port, with certificates made at run time.

The lookups answer the TLS URLs (``httpUrlTls``, ``brokerUrlTls``); a request that came over TLS is
redirected to the other broker's TLS URL, a plain one to its plain URL (Pulsar's ``isRequestHttps``);
the admin client, the CLI (``--tls-trust-cert-path``) and the data-path client trust a CA file;
``tlsRequireTrustedClientCertOnConnect`` refuses clients without a certificate of a trusted CA.
"""

from __future__ import annotations

import asyncio
import json
import ssl
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio
import trustme
from typer.testing import CliRunner

from brokerlb.admin import AsyncAdminClient
from brokerlb.client import Client
from brokerlb.errors import BrokerUnreachableError
from brokerlb.testing.clusters import InProcessCluster

pytestmark = pytest.mark.asyncio(loop_scope="module")


class Pki:
    """A CA, the brokers' certificate (127.0.0.1) and a client certificate, as PEM files."""

    def __init__(self, directory: Path) -> None:
        self.ca = trustme.CA()
        self.ca_file = directory / "ca.pem"
        self.ca.cert_pem.write_to_path(str(self.ca_file))
        server = self.ca.issue_cert("127.0.0.1", "localhost")
        self.cert_file, self.key_file = directory / "broker.cert.pem", directory / "broker.key.pem"
        server.cert_chain_pems[0].write_to_path(str(self.cert_file))
        for extra in server.cert_chain_pems[1:]:
            extra.write_to_path(str(self.cert_file), append=True)
        server.private_key_pem.write_to_path(str(self.key_file))
        client = self.ca.issue_cert("app-client")
        self.client_cert, self.client_key = directory / "client.cert.pem", directory / "client.key.pem"
        client.cert_chain_pems[0].write_to_path(str(self.client_cert))
        client.private_key_pem.write_to_path(str(self.client_key))

    def overrides(self, **more: Any) -> dict[str, Any]:
        return {
            "webServicePortTls": 0,
            "tlsCertificateFilePath": str(self.cert_file),
            "tlsKeyFilePath": str(self.key_file),
            **more,
        }


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return Pki(tmp_path_factory.mktemp("pki"))


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def tls_cluster(pki: Pki) -> Any:
    overrides = pki.overrides(brokerServicePortTls=0, webSocketServiceEnabled=True)
    cluster = await InProcessCluster(2, overrides).start()
    try:
        yield cluster
    finally:
        await cluster.stop()


def tls_urls(cluster: InProcessCluster) -> list[str]:
    return [s.identity.web_service_url_tls for s in cluster.services]


async def _owned_by_first(cluster: InProcessCluster, pki: Pki) -> tuple[str, str]:
    """A topic whose owner is broker 0 (looked up on broker 0 with authoritative=true) and its lookup path."""
    ns = f"public/tls-{uuid.uuid4().hex[:8]}"
    async with AsyncAdminClient(tls_urls(cluster)[0], verify=str(pki.ca_file)) as admin:
        await admin.create_namespace(ns, num_bundles=1)
    topic = f"persistent://{ns}/t"
    path = f"/lookup/v2/topic/persistent/{ns}/t"
    async with httpx.AsyncClient(verify=ssl.create_default_context(cafile=pki.ca_file)) as http:
        r = await http.get(f"{tls_urls(cluster)[0]}{path}?authoritative=true")
        assert r.status_code == 200, r.text
    return topic, path


async def test_lookups_answer_tls_urls_and_redirect_by_the_request_scheme(tls_cluster, pki) -> None:
    cluster = tls_cluster
    topic, _path = await _owned_by_first(cluster, pki)
    first, second = cluster.services
    async with AsyncAdminClient(tls_urls(cluster)[1], verify=str(pki.ca_file)) as admin:
        answer = await admin.lookup_topic(topic)
    assert answer["httpUrlTls"] == first.identity.web_service_url_tls
    assert answer["httpUrlTls"].startswith("https://127.0.0.1:")
    assert answer["httpUrl"] == first.identity.web_service_url
    assert answer["brokerUrlTls"] == first.identity.pulsar_service_url_tls
    assert answer["brokerUrlTls"].startswith("pulsar+ssl://127.0.0.1:")
    # an unowned bundle: a follower sends the lookup to the leader -- its TLS URL to a TLS request
    leader = next(s for s in cluster.services if s.election.is_leader)
    follower = next(s for s in cluster.services if s is not leader)
    ns = f"public/tls-{uuid.uuid4().hex[:8]}"
    async with AsyncAdminClient(tls_urls(cluster)[0], verify=str(pki.ca_file)) as admin:
        await admin.create_namespace(ns, num_bundles=1)
    path = f"/lookup/v2/topic/persistent/{ns}/unowned"
    context = ssl.create_default_context(cafile=pki.ca_file)
    async with httpx.AsyncClient(verify=context, follow_redirects=False) as http:
        over_tls = await http.get(f"{follower.identity.web_service_url_tls}{path}")
        plain = await http.get(f"{follower.identity.web_service_url}{path}")
        stats = f"/admin/v2/{topic.replace('://', '/')}/stats"  # owner-only: non-owners redirect
        stats_over_tls = await http.get(f"{second.identity.web_service_url_tls}{stats}")
        stats_plain = await http.get(f"{second.identity.web_service_url}{stats}")
    assert over_tls.status_code == 307, over_tls.text
    assert over_tls.headers["location"].startswith(f"{leader.identity.web_service_url_tls}{path}?")
    assert plain.status_code == 307, plain.text
    assert plain.headers["location"].startswith(f"{leader.identity.web_service_url}{path}?")
    assert stats_over_tls.status_code == 307, stats_over_tls.text
    assert stats_over_tls.headers["location"].startswith(f"{first.identity.web_service_url_tls}{stats}?")
    assert stats_plain.headers["location"].startswith(f"{first.identity.web_service_url}{stats}?")


async def test_clients_must_trust_the_ca(tls_cluster, pki) -> None:
    url = tls_urls(tls_cluster)[0]
    async with AsyncAdminClient(url) as untrusting:  # the system's CAs do not know ours
        with pytest.raises(BrokerUnreachableError, match="CERTIFICATE_VERIFY_FAILED"):
            await untrusting.get_clusters()
    async with AsyncAdminClient(url, verify=str(pki.ca_file)) as admin:
        assert await admin.get_clusters() == ["e2e"]


async def test_cli_takes_the_trust_store_as_pulsar_admin(tls_cluster, pki) -> None:
    from brokerlb.cli.admin import app

    url = tls_urls(tls_cluster)[1]

    async def cli(*args: str) -> Any:
        argv = ["--url", url, "--json", *args]
        return await asyncio.to_thread(CliRunner().invoke, app, argv, env={"COLUMNS": "200"})

    result = await cli("--tls-trust-cert-path", str(pki.ca_file), "brokers", "list")
    assert result.exit_code == 0, result.output
    assert sorted(json.loads(result.output)) == sorted(tls_cluster.broker_ids)
    result = await cli("brokers", "list")
    assert result.exit_code == 1 and "CERTIFICATE_VERIFY_FAILED" in result.output, result.output


async def test_data_path_client_over_tls(tls_cluster, pki) -> None:
    topic, _ = await _owned_by_first(tls_cluster, pki)
    url = tls_urls(tls_cluster)[1]  # not the owner: the lookup is redirected over https
    async with Client(url, tls_trust_certs_file_path=str(pki.ca_file)) as client:
        consumer = await client.subscribe(topic, "s")
        producer = await client.create_producer(topic)
        await producer.send(b"over tls")
        message = await consumer.receive()
        assert message.data == b"over tls"
        await consumer.acknowledge(message)
        assert (await client.lookup(topic)).http_url == tls_urls(tls_cluster)[0]


async def test_required_client_certificates(pki) -> None:
    overrides = pki.overrides(
        tlsTrustCertsFilePath=str(pki.ca_file), tlsRequireTrustedClientCertOnConnect=True
    )
    cluster = await InProcessCluster(1, overrides).start()
    try:
        url = tls_urls(cluster)[0]
        without = ssl.create_default_context(cafile=pki.ca_file)
        async with httpx.AsyncClient(verify=without) as http:
            with pytest.raises(httpx.HTTPError):
                await http.get(f"{url}/admin/v2/clusters")
        with_cert = ssl.create_default_context(cafile=pki.ca_file)
        with_cert.load_cert_chain(pki.client_cert, pki.client_key)
        async with httpx.AsyncClient(verify=with_cert) as http:
            assert (await http.get(f"{url}/admin/v2/clusters")).json() == ["e2e"]
        other = trustme.CA().issue_cert("intruder")  # a certificate of a CA the broker does not trust
        forged = ssl.create_default_context(cafile=pki.ca_file)
        with other.private_key_and_cert_chain_pem.tempfile() as pem:
            forged.load_cert_chain(pem)
        async with httpx.AsyncClient(verify=forged) as http:
            with pytest.raises(httpx.HTTPError):
                await http.get(f"{url}/admin/v2/clusters")
        async with httpx.AsyncClient() as http:  # the plain port stays as it was
            assert (await http.get(f"{cluster.urls[0]}/admin/v2/clusters")).json() == ["e2e"]
    finally:
        await cluster.stop()
