"""The web port's TLS settings: every problem with a file names its key at start-up."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest
import trustme

from brokerlb.broker.http.server import WebServers
from brokerlb.config import ServiceConfig
from brokerlb.errors import InvalidConfigError
from brokerlb.security.tls import client_context, server_context, trust


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1")
    other = trustme.CA().issue_cert("127.0.0.1")
    out = {
        "ca": tmp_path / "ca.pem",
        "cert": tmp_path / "cert.pem",
        "key": tmp_path / "key.pem",
        "other_key": tmp_path / "other-key.pem",
        "garbage": tmp_path / "garbage.pem",
    }
    ca.cert_pem.write_to_path(str(out["ca"]))
    cert.cert_chain_pems[0].write_to_path(str(out["cert"]))
    cert.private_key_pem.write_to_path(str(out["key"]))
    other.private_key_pem.write_to_path(str(out["other_key"]))
    out["garbage"].write_text("not a certificate\n")
    return {k: str(v) for k, v in out.items()}


def conf(**keys: object) -> ServiceConfig:
    return ServiceConfig(clusterName="c", webServicePort=0, **keys)  # type: ignore[arg-type]


def test_no_tls_port_no_context(files: dict[str, str]) -> None:
    assert server_context(conf(tlsCertificateFilePath=files["cert"])) is None


def test_a_working_context_asks_for_client_certificates_only_when_told(files: dict[str, str]) -> None:
    base = {"webServicePortTls": 0, "tlsCertificateFilePath": files["cert"], "tlsKeyFilePath": files["key"]}
    plain = server_context(conf(**base))
    assert plain is not None and plain.verify_mode is ssl.CERT_NONE
    assert plain.minimum_version is ssl.TLSVersion.TLSv1_2
    wanted = server_context(conf(**base, tlsTrustCertsFilePath=files["ca"]))
    assert wanted is not None and wanted.verify_mode is ssl.CERT_OPTIONAL
    required = server_context(
        conf(**base, tlsTrustCertsFilePath=files["ca"], tlsRequireTrustedClientCertOnConnect=True)
    )
    assert required is not None and required.verify_mode is ssl.CERT_REQUIRED


@pytest.mark.parametrize(
    ("keys", "named", "words"),
    [
        ({"tlsKeyFilePath": "key"}, "tlsCertificateFilePath", "webServicePortTls needs it"),
        ({"tlsCertificateFilePath": "cert"}, "tlsKeyFilePath", "webServicePortTls needs it"),
        (
            {"tlsCertificateFilePath": "/no/such.pem", "tlsKeyFilePath": "key"},
            "tlsCertificateFilePath",
            "no such file",
        ),
        (
            {"tlsCertificateFilePath": "cert", "tlsKeyFilePath": "/no/such.pem"},
            "tlsKeyFilePath",
            "no such file",
        ),
        (
            {"tlsCertificateFilePath": "cert", "tlsKeyFilePath": "other_key"},
            "tlsKeyFilePath",
            "cannot use it",
        ),
        ({"tlsCertificateFilePath": "garbage", "tlsKeyFilePath": "key"}, "tlsKeyFilePath", "cannot use it"),
        (
            {"tlsCertificateFilePath": "cert", "tlsKeyFilePath": "key", "tlsTrustCertsFilePath": "garbage"},
            "tlsTrustCertsFilePath",
            "not PEM",
        ),
        (
            {
                "tlsCertificateFilePath": "cert",
                "tlsKeyFilePath": "key",
                "tlsRequireTrustedClientCertOnConnect": True,
            },
            "tlsRequireTrustedClientCertOnConnect",
            "needs tlsTrustCertsFilePath",
        ),
    ],
)
def test_bad_tls_settings_name_their_key(
    files: dict[str, str], keys: dict[str, object], named: str, words: str
) -> None:
    resolved = {k: files.get(v, v) if isinstance(v, str) else v for k, v in keys.items()}
    with pytest.raises(InvalidConfigError, match=words) as info:
        server_context(conf(webServicePortTls=0, **resolved))
    assert info.value.key == named


def test_tls_without_the_plain_port_is_refused(files: dict[str, str]) -> None:
    only_tls = ServiceConfig(
        clusterName="c",
        webServicePort=None,
        webServicePortTls=0,
        tlsCertificateFilePath=files["cert"],
        tlsKeyFilePath=files["key"],
    )
    with pytest.raises(InvalidConfigError, match="call each other on the plain web port") as info:
        WebServers.bind(only_tls)
    assert info.value.key == "webServicePort"


def test_both_ports_bound(files: dict[str, str]) -> None:
    web = WebServers.bind(
        conf(
            bindAddress="127.0.0.1",
            webServicePortTls=0,
            tlsCertificateFilePath=files["cert"],
            tlsKeyFilePath=files["key"],
        )
    )
    try:
        assert web.port > 0 and web.tls_port is not None and web.tls_port != web.port
    finally:
        web.close()
    plain = WebServers.bind(conf(bindAddress="127.0.0.1"))
    try:
        assert plain.tls_port is None
    finally:
        plain.close()


def test_client_trust(files: dict[str, str]) -> None:
    context = client_context(files["ca"])
    assert context.verify_mode is ssl.CERT_REQUIRED and context.check_hostname
    assert isinstance(trust(files["ca"]), ssl.SSLContext)
    assert trust(True) is True and trust(False) is False
    with pytest.raises(InvalidConfigError, match="no such file") as info:
        client_context("/no/such/ca.pem")
    assert info.value.key == "--tls-trust-cert-path"


def test_the_binary_tls_port_uses_the_same_files(files: dict[str, str]) -> None:
    from brokerlb.broker.binary.wiring import bind_for

    with pytest.raises(InvalidConfigError, match="brokerServicePortTls needs it") as info:
        bind_for(conf(brokerServicePort=0, brokerServicePortTls=0, tlsKeyFilePath=files["key"]))
    assert info.value.key == "tlsCertificateFilePath"
    sockets = bind_for(
        conf(
            bindAddress="127.0.0.1",
            brokerServicePort=None,
            brokerServicePortTls=0,
            tlsCertificateFilePath=files["cert"],
            tlsKeyFilePath=files["key"],
        )
    )
    assert sockets is not None
    try:
        assert sockets.port is None and sockets.tls_port  # TLS only: Pulsar allows it on the binary port
    finally:
        sockets.close()
