"""Topic lookup over HTTP (Pulsar's ``HttpLookupService``): follow redirects to the owner's URLs.

``GET {service}/lookup/v2/topic/{domain}/{tenant}/{ns}/{topic}`` answers 200 with
``LookupData`` (``brokerUrl``, ``httpUrl``, ...) or 307 to another broker (the leader,
or the broker chosen for an unowned bundle, with ``authoritative=true``). The redirects
are followed here, at most ``max_redirects`` (Pulsar's ``maxLookupRedirects``, 20).

Errors: a 503 (no broker yet, bundle being unloaded, too many lookups) and a broker
that cannot be reached are retriable (:class:`~brokerlb.errors.ServiceUnavailableError`
subclasses); 404 / 412 are not (:class:`~brokerlb.errors.RemoteBrokerError` of the status's
class, :func:`~brokerlb.errors.remote_error`). Retrying is the caller's business (the producer
and consumer back off).
"""

from __future__ import annotations

import asyncio
import ssl
from dataclasses import dataclass
from urllib.parse import urljoin

import httpx

from brokerlb.errors import BrokerUnreachableError, RemoteBrokerError, ServiceUnavailableError, remote_error
from brokerlb.naming import TopicName

__all__ = ["LookupResult", "HttpLookup", "ws_url"]

#: Pulsar's ``maxLookupRedirects``.
MAX_REDIRECTS = 20
#: Lookups in flight at once (Pulsar's ``concurrentLookupRequest`` is 5000). Lower here: the rest wait
#: on a semaphore, because httpx's connection pool rescans every queued request on each event, which
#: made a storm of hundreds of lookups take seconds of CPU.
MAX_CONCURRENT_LOOKUPS = 32


@dataclass(frozen=True, slots=True)
class LookupResult:
    """Where a topic is served: the owner's web URL (the data path's) and binary URL."""

    http_url: str
    broker_url: str | None = None


def ws_url(http_url: str) -> str:
    """``http://h:p`` → ``ws://h:p`` (``https`` → ``wss``)."""
    base = http_url.rstrip("/")
    if base.startswith("https://"):
        return "wss://" + base[len("https://") :]
    if base.startswith("http://"):
        return "ws://" + base[len("http://") :]
    return base


class HttpLookup:
    """Looks topics up from ``service_url`` (any broker), following redirects by hand."""

    def __init__(
        self,
        service_url: str,
        *,
        timeout: float = 30.0,
        max_redirects: int = MAX_REDIRECTS,
        max_concurrent: int = MAX_CONCURRENT_LOOKUPS,
        token: str | None = None,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self.service_url = service_url.rstrip("/")
        self.max_redirects = max_redirects
        #: With TLS (an ``https://`` service URL) the answer's ``httpUrlTls`` is the owner's URL.
        self.tls = tls is not None
        self._http = httpx.AsyncClient(
            timeout=timeout,
            verify=tls if tls is not None else True,
            follow_redirects=False,
            headers={"Authorization": f"Bearer {token}"} if token else None,
            limits=httpx.Limits(max_connections=max_concurrent, max_keepalive_connections=max_concurrent),
        )
        self._gate = asyncio.Semaphore(max_concurrent)
        #: Lookups answered, and redirects followed, since start.
        self.lookups = 0
        self.redirects = 0

    async def lookup(self, topic: TopicName | str) -> LookupResult:
        name = TopicName.parse(topic)
        url = f"{self.service_url}/lookup/v2/topic/{name.lookup_name}"
        async with self._gate:
            for _ in range(self.max_redirects + 1):
                response = await self._get(url)
                if response.status_code == 200:
                    self.lookups += 1
                    return _result(response, url, self.tls)
                if response.status_code in (301, 302, 307, 308) and "location" in response.headers:
                    self.redirects += 1
                    url = urljoin(url, response.headers["location"])
                    continue
                raise _error(response, url)
        raise ServiceUnavailableError(f"Lookup of {name} redirected more than {self.max_redirects} times")

    async def partitions(self, topic: TopicName | str) -> int:
        """The topic's partition count (0 = not partitioned), Pulsar's ``PartitionedTopicMetadata``."""
        name = TopicName.parse(topic)
        if name.is_partitioned:
            return 0
        url = f"{self.service_url}/admin/v2/{name.rest_path}/partitions"
        async with self._gate:
            response = await self._get(url)
        if response.status_code != 200:
            raise _error(response, url)
        try:
            return int(response.json()["partitions"])
        except (ValueError, KeyError, TypeError) as exc:
            raise RemoteBrokerError(
                502, f"Malformed partition metadata: {response.text[:200]}", "GET", url
            ) from exc

    async def _get(self, url: str) -> httpx.Response:
        try:
            return await self._http.get(url)
        except httpx.HTTPError as exc:
            raise BrokerUnreachableError(f"Lookup {url} failed: {type(exc).__name__}: {exc}") from exc

    async def aclose(self) -> None:
        await self._http.aclose()


def _result(response: httpx.Response, url: str, tls: bool = False) -> LookupResult:
    try:
        body = response.json()
        if tls:
            return LookupResult(str(body["httpUrlTls"]).rstrip("/"), body.get("brokerUrlTls"))
        return LookupResult(str(body["httpUrl"]).rstrip("/"), body.get("brokerUrl"))
    except KeyError as exc:
        if tls:
            raise RemoteBrokerError(
                502, f"The owner has no TLS web URL (httpUrlTls): {response.text[:200]}", "GET", url
            ) from exc
        raise RemoteBrokerError(502, f"Malformed lookup answer: {response.text[:200]}", "GET", url) from exc
    except (ValueError, TypeError) as exc:
        raise RemoteBrokerError(502, f"Malformed lookup answer: {response.text[:200]}", "GET", url) from exc


def _error(response: httpx.Response, url: str) -> RemoteBrokerError:
    try:
        reason = str(response.json().get("reason", response.text))
    except (ValueError, AttributeError):
        reason = response.text
    return remote_error(response.status_code, reason, "GET", url)
