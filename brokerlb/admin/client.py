"""A client of the broker REST API (lookup v2 and admin v2), in pulsar-admin's shape.

Two flavours share every method: :class:`AdminClient` (blocking, for the CLI,
scripts and ``brokerlb plan apply``) and :class:`AsyncAdminClient` (``await``-able,
used by brokers to call each other and by tests). Both follow 307 redirects (up
to 20, Pulsar's ``maxLookupRedirects``), so any broker can be addressed.

Errors: an error answer raises :class:`~brokerlb.errors.RemoteBrokerError` with the
status and Pulsar's ``reason``, of the class the tree has for the status
(:func:`~brokerlb.errors.remote_error`: a 404 is also a ``NotFoundError``, a 409 a ``ConflictError``); a failed connection raises
:class:`~brokerlb.errors.BrokerUnreachableError`.

>>> with AdminClient("http://127.0.0.1:8080") as admin:        # doctest: +SKIP
...     admin.create_namespace("public/demo", num_bundles=8)
...     admin.lookup_topic("persistent://public/demo/t1")["brokerUrl"]
'pulsar://127.0.0.1:6650'
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from typing import Any
from urllib.parse import quote

from brokerlb.errors import BrokerUnreachableError, remote_error
from brokerlb.naming import NamespaceName, TopicName
from brokerlb.security.tls import trust

__all__ = ["AdminClient", "AsyncAdminClient", "DEFAULT_URL", "MAX_REDIRECTS"]

DEFAULT_URL = "http://127.0.0.1:8080"
#: Pulsar's client default ``maxLookupRedirects``.
MAX_REDIRECTS = 20
_ADMIN = "/admin/v2"

Parse = Callable[[Any], Any]


def _json(response: Any) -> Any:
    return response.json() if response.content else None


def _text(response: Any) -> str:
    return str(response.text)


def _none(_response: Any) -> None:
    return None


def _ns(namespace: NamespaceName | str) -> str:
    return str(NamespaceName.parse(namespace))


def _seg(value: str) -> str:
    return quote(str(value), safe="")


def _flag(value: bool) -> str:
    return "true" if value else "false"


def _reason(response: Any) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text.strip() or response.reason_phrase
    if isinstance(body, dict) and "reason" in body:
        return str(body["reason"])
    return json.dumps(body)


class _Api:
    """Every endpoint, as ``self._call(method, path, ...)``; the subclass decides sync or async."""

    def _call(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, Any] | None = None,
        body: Any = None,
        parse: Parse = _json,
    ) -> Any:
        raise NotImplementedError

    # ------------------------------------------------------------------ lookup
    def lookup_topic(
        self, topic: TopicName | str, *, authoritative: bool = False, listener: str | None = None
    ) -> Any:
        """``GET /lookup/v2/topic/{lookupName}`` → LookupData (redirects followed)."""
        params: dict[str, Any] = {"authoritative": _flag(authoritative)}
        if listener:
            params["listenerName"] = listener
        return self._call("GET", f"/lookup/v2/topic/{TopicName.parse(topic).lookup_name}", params=params)

    def topic_bundle_range(self, topic: TopicName | str) -> Any:
        """``GET /lookup/v2/topic/{lookupName}/bundle`` → the bundle range string."""
        return self._call("GET", f"/lookup/v2/topic/{TopicName.parse(topic).lookup_name}/bundle", parse=_text)

    def get_partitioned_topic_metadata(self, topic: TopicName | str) -> Any:
        """``GET /admin/v2/{domain}/{tenant}/{ns}/{topic}/partitions`` → ``{"partitions": N}``."""
        return self._call("GET", f"{_ADMIN}/{TopicName.parse(topic).rest_path}/partitions")

    def create_partitioned_topic(self, topic: TopicName | str, partitions: int) -> Any:
        """``PUT /admin/v2/{domain}/{tenant}/{ns}/{topic}/partitions`` with the partition count."""
        return self._call(
            "PUT", f"{_ADMIN}/{TopicName.parse(topic).rest_path}/partitions", body=partitions, parse=_none
        )

    def delete_partitioned_topic(self, topic: TopicName | str, *, force: bool = False) -> Any:
        """``DELETE /admin/v2/{domain}/{tenant}/{ns}/{topic}/partitions``: the partitions, then the metadata."""
        return self._call(
            "DELETE",
            f"{_ADMIN}/{TopicName.parse(topic).rest_path}/partitions",
            params={"force": _flag(force)},
            parse=_none,
        )

    # ------------------------------------------------------------------ topics
    def get_topics(self, namespace: NamespaceName | str, domain: str = "persistent") -> Any:
        """``GET /admin/v2/{domain}/{tenant}/{ns}``: the namespace's topics of that domain."""
        return self._call("GET", f"{_ADMIN}/{_seg(domain)}/{_ns(namespace)}")

    def get_partitioned_topics(self, namespace: NamespaceName | str, domain: str = "persistent") -> Any:
        return self._call("GET", f"{_ADMIN}/{_seg(domain)}/{_ns(namespace)}/partitioned")

    def create_topic(self, topic: TopicName | str, properties: dict[str, str] | None = None) -> Any:
        """``PUT /admin/v2/{domain}/{tenant}/{ns}/{topic}``: a non-partitioned topic."""
        return self._call("PUT", f"{_ADMIN}/{TopicName.parse(topic).rest_path}", body=properties, parse=_none)

    def delete_topic(self, topic: TopicName | str, *, force: bool = False) -> Any:
        return self._call(
            "DELETE",
            f"{_ADMIN}/{TopicName.parse(topic).rest_path}",
            params={"force": _flag(force)},
            parse=_none,
        )

    def get_topic_stats(self, topic: TopicName | str) -> Any:
        """Pulsar's TopicStats (from the topic's owner; redirects followed)."""
        return self._call("GET", f"{_ADMIN}/{TopicName.parse(topic).rest_path}/stats")

    def get_internal_stats(self, topic: TopicName | str) -> Any:
        """Pulsar's PersistentTopicInternalStats: the topic's ledgers and cursors."""
        return self._call("GET", f"{_ADMIN}/{TopicName.parse(topic).rest_path}/internalStats")

    def get_partitioned_stats(self, topic: TopicName | str, *, per_partition: bool = True) -> Any:
        return self._call(
            "GET",
            f"{_ADMIN}/{TopicName.parse(topic).rest_path}/partitioned-stats",
            params={"perPartition": _flag(per_partition)},
        )

    def get_subscriptions(self, topic: TopicName | str) -> Any:
        return self._call("GET", f"{_ADMIN}/{TopicName.parse(topic).rest_path}/subscriptions")

    # ------------------------------------------------------------------ tenants
    def get_tenants(self) -> Any:
        return self._call("GET", f"{_ADMIN}/tenants")

    def get_tenant(self, tenant: str) -> Any:
        return self._call("GET", f"{_ADMIN}/tenants/{_seg(tenant)}")

    def create_tenant(
        self, tenant: str, *, allowed_clusters: Iterable[str], admin_roles: Iterable[str] = ()
    ) -> Any:
        body = {"adminRoles": sorted(admin_roles), "allowedClusters": sorted(allowed_clusters)}
        return self._call("PUT", f"{_ADMIN}/tenants/{_seg(tenant)}", body=body, parse=_none)

    def update_tenant(
        self, tenant: str, *, allowed_clusters: Iterable[str], admin_roles: Iterable[str] = ()
    ) -> Any:
        body = {"adminRoles": sorted(admin_roles), "allowedClusters": sorted(allowed_clusters)}
        return self._call("POST", f"{_ADMIN}/tenants/{_seg(tenant)}", body=body, parse=_none)

    def delete_tenant(self, tenant: str, *, force: bool = False) -> Any:
        return self._call(
            "DELETE", f"{_ADMIN}/tenants/{_seg(tenant)}", params={"force": _flag(force)}, parse=_none
        )

    # ------------------------------------------------------------------ namespaces
    def get_namespace_policies(self, namespace: NamespaceName | str) -> Any:
        """Pulsar's Policies JSON of the namespace."""
        return self._call("GET", f"{_ADMIN}/namespaces/{_ns(namespace)}")

    def delete_namespace(self, namespace: NamespaceName | str, *, force: bool = False) -> Any:
        return self._call(
            "DELETE", f"{_ADMIN}/namespaces/{_ns(namespace)}", params={"force": _flag(force)}, parse=_none
        )

    def get_namespaces(self, tenant: str) -> Any:
        return self._call("GET", f"{_ADMIN}/namespaces/{_seg(tenant)}")

    def create_namespace(
        self,
        namespace: NamespaceName | str,
        *,
        num_bundles: int | None = None,
        boundaries: Sequence[str] | None = None,
        clusters: Sequence[str] | None = None,
    ) -> Any:
        """``PUT /admin/v2/namespaces/{ns}`` with Pulsar's ``Policies``: ``{"bundles": {...}}`` when a
        count or boundaries are given, ``replication_clusters`` when clusters are."""
        body: dict[str, Any] | None = None
        if boundaries is not None:
            body = {"bundles": {"boundaries": list(boundaries), "numBundles": len(boundaries) - 1}}
        elif num_bundles is not None:
            body = {"bundles": {"numBundles": num_bundles}}
        if clusters is not None:
            body = {**(body or {}), "replication_clusters": list(clusters)}
        return self._call("PUT", f"{_ADMIN}/namespaces/{_ns(namespace)}", body=body, parse=_none)

    def get_permissions(self, namespace: NamespaceName | str) -> Any:
        """Role -> actions granted on the namespace (``pulsar-admin namespaces permissions``)."""
        return self._call("GET", f"{_ADMIN}/namespaces/{_ns(namespace)}/permissions")

    def grant_permission(self, namespace: NamespaceName | str, role: str, actions: Iterable[str]) -> Any:
        """Grant ``actions`` (produce, consume, ...) on the namespace to ``role``."""
        path = f"{_ADMIN}/namespaces/{_ns(namespace)}/permissions/{_seg(role)}"
        return self._call("POST", path, body=sorted(set(actions)), parse=_none)

    def revoke_permission(self, namespace: NamespaceName | str, role: str) -> Any:
        path = f"{_ADMIN}/namespaces/{_ns(namespace)}/permissions/{_seg(role)}"
        return self._call("DELETE", path, parse=_none)

    def get_bundles(self, namespace: NamespaceName | str) -> Any:
        """BundlesData: ``{"boundaries": [...], "numBundles": N}``."""
        return self._call("GET", f"{_ADMIN}/namespaces/{_ns(namespace)}/bundles")

    def unload_namespace(self, namespace: NamespaceName | str) -> Any:
        return self._call("PUT", f"{_ADMIN}/namespaces/{_ns(namespace)}/unload", parse=_none)

    def unload_bundle(
        self,
        namespace: NamespaceName | str,
        bundle: str,
        *,
        destination_broker: str | None = None,
        authoritative: bool = False,
        leader_epoch: int | None = None,
    ) -> Any:
        """``leader_epoch``: the leader's fencing token (brokerlb: the owner refuses a superseded one, 409)."""
        params: dict[str, Any] = {"authoritative": _flag(authoritative)}
        if destination_broker:
            params["destinationBroker"] = destination_broker
        if leader_epoch is not None:
            params["leaderEpoch"] = str(leader_epoch)
        return self._call(
            "PUT", f"{_ADMIN}/namespaces/{_ns(namespace)}/{_seg(bundle)}/unload", params=params, parse=_none
        )

    def record_operator_action(
        self,
        namespace: NamespaceName | str,
        bundle: str,
        kind: str,
        *,
        source: str | None = None,
        destination: str | None = None,
    ) -> Any:
        """brokerlb extension (broker to broker): tell the leader an operator split, unloaded,
        transferred or merged ``bundle`` (``kind``), so its balancer holds back on it."""
        body = {"kind": kind, "source": source, "destination": destination}
        return self._call(
            "POST",
            f"{_ADMIN}/namespaces/{_ns(namespace)}/{_seg(bundle)}/operatorAction",
            body=body,
            parse=_none,
        )

    def split_bundle(
        self,
        namespace: NamespaceName | str,
        bundle: str,
        *,
        unload: bool = False,
        algorithm: str | None = None,
        boundaries: Sequence[int | str] | None = None,
        leader_epoch: int | None = None,
    ) -> Any:
        """``bundle`` is a range, ``LARGEST`` or ``HOT``; ``boundaries`` go in the body; ``leader_epoch`` as
        for :meth:`unload_bundle`."""
        params: dict[str, Any] = {"unload": _flag(unload)}
        if leader_epoch is not None:
            params["leaderEpoch"] = str(leader_epoch)
        if algorithm:
            params["splitAlgorithmName"] = algorithm
        return self._call(
            "PUT",
            f"{_ADMIN}/namespaces/{_ns(namespace)}/{_seg(bundle)}/split",
            params=params,
            body=list(boundaries) if boundaries is not None else None,
            parse=_none,
        )

    def merge_bundles(self, namespace: NamespaceName | str, bundles: Iterable[str]) -> Any:
        """brokerlb extension: merge adjacent bundles; answers ``{"bundle", "broker"}``."""
        return self._call("PUT", f"{_ADMIN}/namespaces/{_ns(namespace)}/merge", body=list(bundles))

    def delete_bundle(self, namespace: NamespaceName | str, bundle: str, *, force: bool = False) -> Any:
        return self._call(
            "DELETE",
            f"{_ADMIN}/namespaces/{_ns(namespace)}/{_seg(bundle)}",
            params={"force": _flag(force)},
            parse=_none,
        )

    def bundle_story(self, namespace: NamespaceName | str, bundle: str, *, local: bool = False) -> Any:
        """brokerlb extension: the bundle's ownership transitions, from every broker's state machine
        (``local``: from the addressed broker's only)."""
        return self._call(
            "GET",
            f"{_ADMIN}/namespaces/{_ns(namespace)}/{_seg(bundle)}/story",
            params={"local": _flag(local)} if local else None,
        )

    def topic_hash_positions(
        self, namespace: NamespaceName | str, bundle: str, topics: Iterable[str] = ()
    ) -> Any:
        params = {"topics": list(topics)} if topics else None
        return self._call(
            "GET", f"{_ADMIN}/namespaces/{_ns(namespace)}/{_seg(bundle)}/topicHashPositions", params=params
        )

    def set_anti_affinity_group(self, namespace: NamespaceName | str, group: str) -> Any:
        return self._call(
            "POST", f"{_ADMIN}/namespaces/{_ns(namespace)}/antiAffinity", body=group, parse=_none
        )

    def get_anti_affinity_group(self, namespace: NamespaceName | str) -> Any:
        return self._call("GET", f"{_ADMIN}/namespaces/{_ns(namespace)}/antiAffinity")

    def delete_anti_affinity_group(self, namespace: NamespaceName | str) -> Any:
        return self._call("DELETE", f"{_ADMIN}/namespaces/{_ns(namespace)}/antiAffinity", parse=_none)

    def get_anti_affinity_namespaces(self, cluster: str, group: str) -> Any:
        return self._call("GET", f"{_ADMIN}/namespaces/{_seg(cluster)}/antiAffinity/{_seg(group)}")

    # ------------------------------------------------------------------ brokers
    def get_active_brokers(self, cluster: str | None = None) -> Any:
        path = f"{_ADMIN}/brokers" + (f"/{_seg(cluster)}" if cluster else "")
        return self._call("GET", path)

    def get_leader_broker(self) -> Any:
        return self._call("GET", f"{_ADMIN}/brokers/leaderBroker")

    def get_owned_namespaces(self, cluster: str, broker_id: str) -> Any:
        return self._call("GET", f"{_ADMIN}/brokers/{_seg(cluster)}/{_seg(broker_id)}/ownedNamespaces")

    def health_check(self) -> Any:
        return self._call("GET", f"{_ADMIN}/brokers/health", parse=_text)

    def get_balancer_status(self) -> Any:
        """brokerlb extension: the balancer's state (off / ready / in_progress / stalled), from the leader."""
        return self._call("GET", f"{_ADMIN}/brokers/balancer")

    def get_load_history(self) -> Any:
        """brokerlb extension: this broker's load-history writer (directory, last publication, held back, cost)."""
        return self._call("GET", f"{_ADMIN}/brokers/load-history")

    def publish_load_history(self, *, local: bool = False) -> Any:
        """brokerlb extension: publish the open load-history files now, on every broker (``local``: this one)."""
        return self._call("POST", f"{_ADMIN}/brokers/load-history/publish", params={"local": _flag(local)})

    def get_dashboard_state(self) -> Any:
        """brokerlb: the live dashboard's state document (the leader's view)."""
        return self._call("GET", "/dashboard/api/state")

    def get_dashboard_bundle(self, bundle: str) -> Any:
        """brokerlb: what the leader saw happen to one bundle (``tenant/ns/0x.._0x..``)."""
        return self._call("GET", "/dashboard/api/bundle", params={"name": bundle})

    def get_version(self) -> Any:
        return self._call("GET", f"{_ADMIN}/brokers/version", parse=_text)

    def get_dynamic_config_names(self) -> Any:
        return self._call("GET", f"{_ADMIN}/brokers/configuration")

    def get_dynamic_config(self) -> Any:
        """The stored dynamic configuration: key → value."""
        return self._call("GET", f"{_ADMIN}/brokers/configuration/values")

    def get_runtime_config(self) -> Any:
        return self._call("GET", f"{_ADMIN}/brokers/configuration/runtime")

    def update_dynamic_config(self, key: str, value: str) -> Any:
        return self._call("POST", f"{_ADMIN}/brokers/configuration/{_seg(key)}/{_seg(value)}", parse=_none)

    def delete_dynamic_config(self, key: str) -> Any:
        return self._call("DELETE", f"{_ADMIN}/brokers/configuration/{_seg(key)}", parse=_none)

    def get_internal_config(self) -> Any:
        return self._call("GET", f"{_ADMIN}/brokers/internal-configuration")

    def get_load_report(self) -> Any:
        return self._call("GET", f"{_ADMIN}/broker-stats/load-report")

    def get_topics_stats(self) -> Any:
        return self._call("GET", f"{_ADMIN}/broker-stats/topics")

    # ------------------------------------------------------------------ clusters
    def get_clusters(self) -> Any:
        return self._call("GET", f"{_ADMIN}/clusters")

    def get_cluster(self, cluster: str) -> Any:
        """ClusterData: ``serviceUrl``, ``brokerServiceUrl``, ..."""
        return self._call("GET", f"{_ADMIN}/clusters/{_seg(cluster)}")

    def get_brokers_with_isolation_policies(self, cluster: str) -> Any:
        return self._call("GET", f"{_ADMIN}/clusters/{_seg(cluster)}/namespaceIsolationPolicies/brokers")

    def get_broker_with_isolation_policies(self, cluster: str, broker: str) -> Any:
        return self._call(
            "GET", f"{_ADMIN}/clusters/{_seg(cluster)}/namespaceIsolationPolicies/brokers/{_seg(broker)}"
        )

    def get_isolation_policies(self, cluster: str) -> Any:
        return self._call("GET", f"{_ADMIN}/clusters/{_seg(cluster)}/namespaceIsolationPolicies")

    def get_isolation_policy(self, cluster: str, name: str) -> Any:
        return self._call("GET", f"{_ADMIN}/clusters/{_seg(cluster)}/namespaceIsolationPolicies/{_seg(name)}")

    def set_isolation_policy(self, cluster: str, name: str, policy: dict[str, Any]) -> Any:
        return self._call(
            "POST",
            f"{_ADMIN}/clusters/{_seg(cluster)}/namespaceIsolationPolicies/{_seg(name)}",
            body=policy,
            parse=_none,
        )

    def delete_isolation_policy(self, cluster: str, name: str) -> Any:
        return self._call(
            "DELETE",
            f"{_ADMIN}/clusters/{_seg(cluster)}/namespaceIsolationPolicies/{_seg(name)}",
            parse=_none,
        )

    def get_failure_domains(self, cluster: str) -> Any:
        return self._call("GET", f"{_ADMIN}/clusters/{_seg(cluster)}/failureDomains")

    def get_failure_domain(self, cluster: str, name: str) -> Any:
        return self._call("GET", f"{_ADMIN}/clusters/{_seg(cluster)}/failureDomains/{_seg(name)}")

    def set_failure_domain(self, cluster: str, name: str, brokers: Iterable[str]) -> Any:
        return self._call(
            "POST",
            f"{_ADMIN}/clusters/{_seg(cluster)}/failureDomains/{_seg(name)}",
            body={"brokers": sorted(brokers)},
            parse=_none,
        )

    def delete_failure_domain(self, cluster: str, name: str) -> Any:
        return self._call(
            "DELETE", f"{_ADMIN}/clusters/{_seg(cluster)}/failureDomains/{_seg(name)}", parse=_none
        )


def _request_kwargs(method: str, params: dict[str, Any] | None, body: Any) -> dict[str, Any]:
    """A body goes as JSON; a POST declares JSON even without one (as pulsar-admin's client does, and as
    the broker requires of every POST)."""
    kwargs: dict[str, Any] = {"params": params}
    if isinstance(body, bytes):
        kwargs["content"] = body
        kwargs["headers"] = {"Content-Type": "application/octet-stream"}
    elif body is not None:
        kwargs["content"] = json.dumps(body).encode()
    if body is not None or method == "POST":
        kwargs["headers"] = {"Content-Type": "application/json"}
    return kwargs


def _check(response: Any, method: str) -> None:
    if response.status_code >= 400:
        raise remote_error(response.status_code, _reason(response), method, str(response.request.url))


def _bearer(token: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"} if token else {}


class AdminClient(_Api):
    """Blocking client (httpx). Use as a context manager or call :meth:`close`.

    ``token``: sent as ``Authorization: Bearer`` on every request, redirects included (the
    brokers of a cluster share one authentication). ``verify``: for ``https://`` URLs, the CA
    file to trust (pulsar-admin's ``--tls-trust-cert-path``), an ``ssl.SSLContext``, ``True``
    (the system's CAs) or ``False``.
    """

    def __init__(
        self, url: str = DEFAULT_URL, *, timeout: float = 30.0, token: str | None = None, verify: Any = True
    ) -> None:
        import httpx

        self.url = url.rstrip("/")
        self._httpx = httpx
        headers = _bearer(token)

        def authorize(
            request: Any,
        ) -> None:  # on every hop: httpx drops Authorization on cross-origin redirects
            request.headers.update(headers)

        self._client = httpx.Client(
            base_url=self.url,
            timeout=timeout,
            follow_redirects=True,
            max_redirects=MAX_REDIRECTS,
            event_hooks={"request": [authorize]} if headers else {},
            verify=trust(verify),
        )

    def _call(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, Any] | None = None,
        body: Any = None,
        parse: Parse = _json,
    ) -> Any:
        try:
            response = self._client.request(method, path, **_request_kwargs(method, params, body))
        except self._httpx.HTTPError as exc:
            raise BrokerUnreachableError(f"{method} {self.url}{path} failed: {exc}") from exc
        _check(response, method)
        return parse(response)

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> AdminClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncAdminClient(_Api):
    """``await``-able client (httpx.AsyncClient). Use ``async with`` or ``await aclose()``."""

    def __init__(
        self,
        url: str = DEFAULT_URL,
        *,
        timeout: float = 30.0,
        client: Any = None,
        token: str | None = None,
        verify: Any = True,
    ) -> None:
        import httpx

        self.url = url.rstrip("/")
        self._httpx = httpx
        self._owns_client = client is None
        headers = _bearer(token)

        async def authorize(request: Any) -> None:  # every hop, redirects included
            request.headers.update(headers)

        self._client = client or httpx.AsyncClient(
            timeout=timeout,
            follow_redirects=True,
            max_redirects=MAX_REDIRECTS,
            event_hooks={"request": [authorize]} if headers else {},
            verify=trust(verify),
        )

    async def _call(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, Any] | None = None,  # type: ignore[override]
        body: Any = None,
        parse: Parse = _json,
    ) -> Any:
        try:
            response = await self._client.request(
                method, self.url + path, **_request_kwargs(method, params, body)
            )
        except self._httpx.HTTPError as exc:
            raise BrokerUnreachableError(f"{method} {self.url}{path} failed: {exc}") from exc
        _check(response, method)
        return parse(response)

    def at(self, url: str) -> AsyncAdminClient:
        """A client for another broker sharing this one's connection pool."""
        return AsyncAdminClient(url, client=self._client)

    async def aclose(self) -> None:
        if self._owns_client:
            await self._client.aclose()

    async def __aenter__(self) -> AsyncAdminClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
