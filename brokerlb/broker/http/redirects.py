"""307 answers: the same request, sent to another broker (Pulsar's redirect rule).

A request that came over TLS is sent to the other broker's TLS URL (Pulsar's
``isRequestHttps() ? webServiceUrlTls : webServiceUrl``): :class:`TlsUrls` finds a broker's
``webServiceUrlTls`` from its ``webServiceUrl`` in the registrations; a broker without one
cannot take the redirect (412, as Pulsar's "Redirected cluster's service url is not configured").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl, urlencode, urlsplit

from brokerlb.broker.ownership.redirect import Redirect
from brokerlb.errors import PreconditionFailedError

if TYPE_CHECKING:
    from brokerlb.coordination import BrokerRegistry, RegisteredBroker

__all__ = ["redirect_location", "TlsUrls", "location_for_scheme", "registered_brokers"]


def redirect_location(redirect: Redirect, raw_path: bytes | str, query_string: bytes | str) -> str:
    """``redirect.url`` + the original (still encoded) path + the query with ``authoritative`` replaced."""
    path = raw_path.decode("latin-1") if isinstance(raw_path, bytes) else raw_path
    query = query_string.decode("latin-1") if isinstance(query_string, bytes) else query_string
    params = [(k, v) for k, v in parse_qsl(query, keep_blank_values=True) if k != "authoritative"]
    params.append(("authoritative", "true" if redirect.authoritative else "false"))
    return f"{redirect.url.rstrip('/')}{path}?{urlencode(params)}"


class TlsUrls:
    """``http://host:port`` of a registered broker → its ``https://`` web URL (module docstring).

    ``brokers`` gives the registrations (broker id → its decoded registration: ``webServiceUrl``,
    ``webServiceUrlTls``); read at each redirect, so a broker that registered since is known.
    """

    def __init__(self, brokers: Callable[[], Mapping[str, RegisteredBroker | None]]) -> None:
        self._brokers = brokers

    def __call__(self, url: str) -> str:
        base = url.rstrip("/")
        if base.startswith("https://"):
            return base
        for registered in self._brokers().values():
            if registered is not None and (registered.web_service_url or "").rstrip("/") == base:
                if registered.web_service_url_tls:
                    return registered.web_service_url_tls.rstrip("/")
                break
        raise PreconditionFailedError(
            f"The broker at {base} has no TLS web URL (webServicePortTls unset): "
            "it cannot answer this request over https; ask any broker over http instead"
        )


def location_for_scheme(location: str, scheme: str, tls_urls: Callable[[str], str] | None) -> str:
    """``location`` for a request that came over ``scheme``: its broker's TLS URL when ``https``."""
    if scheme != "https" or tls_urls is None:
        return location
    parts = urlsplit(location)
    base = f"{parts.scheme}://{parts.netloc}"
    return tls_urls(base) + location[len(base) :]


def registered_brokers(registry: BrokerRegistry) -> Callable[[], dict[str, RegisteredBroker | None]]:
    """The registrations of ``registry`` (a :class:`~brokerlb.coordination.registry.BrokerRegistry`)."""
    return lambda: {b: registry.broker(b) for b in registry.available_brokers()}
