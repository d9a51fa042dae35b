"""Who a broker is: its id and URLs, from Pulsar's keys.

* ``brokerId`` = ``{advertisedAddress}:{webServicePort}`` (the TLS web port when there
  is no plain one), Pulsar's ``BrokerRegistry`` id and the name of
  ``/loadbalance/brokers/{brokerId}``;
* ``webServiceUrl`` = ``http://{advertisedAddress}:{webServicePort}``;
* ``pulsarServiceUrl`` = ``pulsar://{advertisedAddress}:{brokerServicePort}`` (absent
  when the port is unset), and the TLS twins;
* ``advertisedListeners`` = ``name:pulsar://host:port,...`` parsed into listener URLs.

``advertisedAddress`` unset means the machine's canonical host name, as in Pulsar.
A port of 0 means "pick a free one": the real port is passed in once bound.

>>> from brokerlb.config import ServiceConfig
>>> ident = BrokerIdentity.from_config(ServiceConfig(clusterName="c", advertisedAddress="127.0.0.1",
...                                                  webServicePort=8080, brokerServicePort=6650))
>>> ident.broker_id, ident.web_service_url, ident.pulsar_service_url
('127.0.0.1:8080', 'http://127.0.0.1:8080', 'pulsar://127.0.0.1:6650')
>>> ident.lookup_data()["brokerUrl"]
'pulsar://127.0.0.1:6650'
"""

from __future__ import annotations

import socket
from dataclasses import dataclass, field
from typing import Any

from brokerlb.config import ServiceConfig
from brokerlb.errors import InvalidConfigError

__all__ = ["BrokerIdentity", "ListenerUrls", "parse_advertised_listeners", "lookup_data"]


@dataclass(frozen=True, slots=True)
class ListenerUrls:
    broker_service_url: str | None = None
    broker_service_url_tls: str | None = None


def parse_advertised_listeners(text: str | None) -> dict[str, ListenerUrls]:
    """``internal:pulsar://h:6650,internal:pulsar+ssl://h:6651`` → ``{"internal": ListenerUrls(...)}``."""
    listeners: dict[str, dict[str, str]] = {}
    for item in (text or "").split(","):
        item = item.strip()
        if not item:
            continue
        name, sep, url = item.partition(":")
        if not sep or not name or "://" not in url:
            raise InvalidConfigError(
                "advertisedListeners", text, f"'{item}' is not <name>:<scheme>://<host>:<port>"
            )
        scheme = url.split("://", 1)[0]
        slot = {"pulsar": "plain", "pulsar+ssl": "tls"}.get(scheme)
        if slot is None:
            raise InvalidConfigError(
                "advertisedListeners",
                text,
                f"listener '{name}' has scheme '{scheme}' (expected pulsar or pulsar+ssl)",
            )
        if slot in listeners.setdefault(name, {}):
            raise InvalidConfigError("advertisedListeners", text, f"listener '{name}' has two {scheme} URLs")
        listeners[name][slot] = url
    return {name: ListenerUrls(urls.get("plain"), urls.get("tls")) for name, urls in listeners.items()}


def lookup_data(
    broker_url: str | None, broker_url_tls: str | None, http_url: str | None, http_url_tls: str | None
) -> dict[str, Any]:
    """Pulsar's ``LookupData`` JSON (nulls omitted; ``nativeUrl`` and ``brokerUrlSsl`` are legacy)."""
    out: dict[str, Any] = {}
    if broker_url is not None:
        out["brokerUrl"] = broker_url
    if broker_url_tls is not None:
        out["brokerUrlTls"] = broker_url_tls
    if http_url is not None:
        out["httpUrl"] = http_url
    if http_url_tls is not None:
        out["httpUrlTls"] = http_url_tls
    if broker_url is not None:
        out["nativeUrl"] = broker_url
    out["brokerUrlSsl"] = broker_url_tls or ""
    return out


@dataclass(frozen=True, slots=True)
class BrokerIdentity:
    """A broker's id, cluster and URLs."""

    broker_id: str
    cluster: str
    advertised_address: str
    web_service_url: str | None
    web_service_url_tls: str | None = None
    pulsar_service_url: str | None = None
    pulsar_service_url_tls: str | None = None
    advertised_listeners: dict[str, ListenerUrls] = field(default_factory=dict)

    @classmethod
    def from_config(
        cls,
        conf: ServiceConfig,
        *,
        web_port: int | None = None,
        broker_port: int | None = None,
        web_tls_port: int | None = None,
        broker_tls_port: int | None = None,
    ) -> BrokerIdentity:
        """Build from ``clusterName``, ``advertisedAddress``, ``webServicePort(Tls)``, ``brokerServicePort(Tls)``.

        ``web_port`` / ``broker_port`` / ``web_tls_port`` / ``broker_tls_port`` replace configured
        ports (the real ones after binding port 0).
        """
        conf.check_complete()
        host = conf.advertisedAddress or socket.getfqdn()
        web = web_port if web_port is not None else conf.webServicePort
        web_tls = web_tls_port if web_tls_port is not None else conf.webServicePortTls
        if not web and not web_tls:
            raise InvalidConfigError(
                "webServicePort", conf.webServicePort, "a broker needs webServicePort or webServicePortTls"
            )
        binary = broker_port if broker_port is not None else conf.brokerServicePort
        binary_tls = broker_tls_port if broker_tls_port is not None else conf.brokerServicePortTls
        return cls(
            broker_id=f"{host}:{web or web_tls}",
            cluster=conf.clusterName or "",
            advertised_address=host,
            web_service_url=f"http://{host}:{web}" if web else None,
            web_service_url_tls=f"https://{host}:{web_tls}" if web_tls else None,
            pulsar_service_url=f"pulsar://{host}:{binary}" if binary else None,
            pulsar_service_url_tls=f"pulsar+ssl://{host}:{binary_tls}" if binary_tls else None,
            advertised_listeners=parse_advertised_listeners(conf.advertisedListeners),
        )

    def lookup_data(self, listener: str | None = None) -> dict[str, Any]:
        """This broker's LookupData JSON, or the named listener's."""
        if listener is None:
            return lookup_data(
                self.pulsar_service_url,
                self.pulsar_service_url_tls,
                self.web_service_url,
                self.web_service_url_tls,
            )
        urls = self.advertised_listeners[listener]
        return lookup_data(
            urls.broker_service_url,
            urls.broker_service_url_tls,
            self.web_service_url,
            self.web_service_url_tls,
        )
