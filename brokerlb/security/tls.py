"""TLS contexts from Pulsar's keys: the broker's web port (server) and the clients' trust store.

Server (``webServicePortTls`` and/or ``brokerServicePortTls`` set): :func:`server_context` reads

* ``tlsCertificateFilePath`` -- the broker's certificate chain (PEM), required;
* ``tlsKeyFilePath`` -- its private key (PEM, unencrypted), required;
* ``tlsTrustCertsFilePath`` -- CA certificates (PEM) for client certificates, optional;
* ``tlsRequireTrustedClientCertOnConnect`` -- refuse a TLS client without a certificate signed by
  one of those CAs (needs ``tlsTrustCertsFilePath``). Without it, a client certificate is asked
  for and checked when the client offers one (Jetty's ``wantClientAuth``), as Pulsar's web
  service does.

TLS 1.2 and 1.3 (Python's OpenSSL defaults for ciphers). Every problem with a file -- missing,
unreadable, not PEM, a key that does not belong to the certificate -- is an
:class:`~brokerlb.errors.InvalidConfigError` naming the key, at start-up.

Clients (``pulsar-admin --tls-trust-cert-path``, ``tlsTrustCertsFilePath`` of client.conf):
:func:`client_context` trusts the given CA file (and verifies host names), or the system's
CAs without one.
"""

from __future__ import annotations

import os
import ssl
from typing import Any

from brokerlb.errors import InvalidConfigError

__all__ = ["server_context", "client_context", "trust"]


def _need(conf: Any, key: str, port_key: str) -> str:
    value = getattr(conf, key)
    if not value:
        raise InvalidConfigError(key, value, f"{port_key} needs it (a PEM file)")
    return str(value)


def server_context(conf: Any, port_key: str = "webServicePortTls") -> ssl.SSLContext | None:
    """The TLS context of the port ``port_key`` (``webServicePortTls`` or ``brokerServicePortTls``),
    or ``None`` when that port is unset (module docstring). Both ports use the same files."""
    if getattr(conf, port_key) is None:
        return None
    certfile = _need(conf, "tlsCertificateFilePath", port_key)
    keyfile = _need(conf, "tlsKeyFilePath", port_key)
    trust = conf.tlsTrustCertsFilePath or None
    if conf.tlsRequireTrustedClientCertOnConnect and not trust:
        raise InvalidConfigError(
            "tlsRequireTrustedClientCertOnConnect",
            True,
            "needs tlsTrustCertsFilePath (the CAs that sign the clients' certificates)",
        )
    for key, path in (("tlsCertificateFilePath", certfile), ("tlsKeyFilePath", keyfile)):
        if not os.path.isfile(path):
            raise InvalidConfigError(key, path, "no such file")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        context.load_cert_chain(certfile, keyfile)
    except OSError as exc:  # ssl.SSLError is an OSError: not PEM, or the key does not match
        raise InvalidConfigError(
            "tlsKeyFilePath",
            keyfile,
            f"cannot use it with tlsCertificateFilePath {certfile}: {_why(exc)}",
        ) from None
    if trust:
        _load_trust(context, trust, "tlsTrustCertsFilePath")
        required = conf.tlsRequireTrustedClientCertOnConnect
        context.verify_mode = ssl.CERT_REQUIRED if required else ssl.CERT_OPTIONAL
    return context


def client_context(trust_certs_file: str | None) -> ssl.SSLContext:
    """A client context trusting ``trust_certs_file`` (PEM CAs), or the system's CAs without one."""
    context = ssl.create_default_context()
    if trust_certs_file:
        _load_trust(context, trust_certs_file, "--tls-trust-cert-path")
    return context


def trust(verify: Any) -> Any:
    """An httpx ``verify`` value: a CA file path becomes its :func:`client_context`; ``True``,
    ``False`` and contexts pass through."""
    if isinstance(verify, str):
        return client_context(verify)
    return verify


def _load_trust(context: ssl.SSLContext, path: str, key: str) -> None:
    if not os.path.isfile(path):
        raise InvalidConfigError(key, path, "no such file")
    try:
        context.load_verify_locations(cafile=path)
    except OSError as exc:
        raise InvalidConfigError(key, path, f"not PEM CA certificates: {_why(exc)}") from None


def _why(exc: OSError) -> str:
    return str(getattr(exc, "reason", None) or exc.strerror or exc)
