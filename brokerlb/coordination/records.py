"""JSON records stored in the metadata store, in Pulsar's shapes.

Every record has ``to_json()`` (a JSON-able dict with Pulsar's field names; ``None``
fields omitted, as Pulsar's Jackson mapper does), ``from_json(dict)`` (raises
:class:`~brokerlb.errors.InvalidInputError` naming what is wrong) and the byte
forms ``to_bytes()`` / ``from_bytes(data, path)`` (a stored value that does not
decode raises :class:`~brokerlb.errors.CorruptMetadataError` naming the path).
Fields brokerlb does not model are kept in ``extra`` and written back unchanged,
so a read-modify-write never loses what another writer stored.

>>> NamespaceEphemeralData("pulsar://b1:6650", http_url="http://b1:8080").to_json()
{'nativeUrl': 'pulsar://b1:6650', 'httpUrl': 'http://b1:8080', 'disabled': False, 'advertisedListeners': {}}
>>> LeaderBroker.from_json({"brokerId": "b1:8080", "serviceUrl": "http://b1:8080"}).broker_id
'b1:8080'
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Self, TypeVar
from urllib.parse import urlsplit

from brokerlb.errors import CorruptMetadataError, InvalidInputError
from brokerlb.loadbalance.policies import policy_for_namespace
from brokerlb.naming import NamespaceName
from brokerlb.ring.bundles import NamespaceBundles
from brokerlb.safe_regex import check_pattern, fullmatch

__all__ = [
    "DRAINING_KEY",
    "encode_json",
    "decode_json",
    "AdvertisedListener",
    "NamespaceEphemeralData",
    "RegisteredBroker",
    "LeaderBroker",
    "LocalPolicies",
    "Policies",
    "AutoFailoverPolicy",
    "NamespaceIsolationData",
    "NamespaceIsolationPolicies",
    "FailureDomain",
    "TenantInfo",
    "ClusterData",
    "broker_id_of_url",
]

R = TypeVar("R", bound="_Record")


def encode_json(value: Any) -> bytes:
    """Bytes for a stored value: bytes as they are, str as UTF-8, anything else as compact JSON.

    Objects with a ``to_json()`` method (brokerlb records, ``LocalBrokerData``) are
    converted first; ``to_json()`` may return a dict or a JSON string.
    """
    if isinstance(value, (bytes, bytearray)):
        return bytes(value)
    if hasattr(value, "to_json"):
        value = value.to_json()
    if isinstance(value, str):
        return value.encode("utf-8")
    try:
        return json.dumps(value, separators=(",", ":"), allow_nan=False).encode("utf-8")
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"Value cannot be stored as JSON: {exc}") from exc


def decode_json(data: bytes, path: str | None = None) -> Any:
    """The JSON value stored at ``path``; :class:`CorruptMetadataError` if it is not JSON."""
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CorruptMetadataError(f"Stored value is not valid JSON: {exc}", path) from exc


def broker_id_of_url(url: str | None) -> str | None:
    """``http://host:8080/`` → ``host:8080`` (Pulsar's broker id is ``host:webServicePort``)."""
    if not url:
        return None
    netloc = urlsplit(url).netloc
    return netloc or None


def _obj(data: Any, what: str) -> Mapping[str, Any]:
    if not isinstance(data, Mapping):
        raise InvalidInputError(f"Invalid {what}: expected a JSON object, got {type(data).__name__}")
    return data


def _opt_str(data: Mapping[str, Any], key: str, what: str) -> str | None:
    value = data.get(key)
    if value is not None and not isinstance(value, str):
        raise InvalidInputError(f"Invalid {what}: '{key}' must be a string, got {value!r}")
    return value


def _str_list(data: Mapping[str, Any], key: str, what: str, required: bool = False) -> list[str]:
    value = data.get(key)
    if value is None:
        if required:
            raise InvalidInputError(f"Invalid {what}: '{key}' is required")
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InvalidInputError(f"Invalid {what}: '{key}' must be a list of strings, got {value!r}")
    return list(value)


def _without_nones(values: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None}


class _Record:
    """Byte forms shared by the records."""

    _WHAT: ClassVar[str] = "record"

    def to_json(self) -> dict[str, Any]:
        raise NotImplementedError

    @classmethod
    def from_json(cls, data: Any) -> Self:
        raise NotImplementedError

    def to_bytes(self) -> bytes:
        return encode_json(self.to_json())

    @classmethod
    def from_bytes(cls, data: bytes, path: str | None = None) -> Self:
        value = decode_json(data, path)
        try:
            return cls.from_json(value)
        except InvalidInputError as exc:
            raise CorruptMetadataError(f"Stored {cls._WHAT} is invalid: {exc}", path) from exc


# --------------------------------------------------------------------------- ownership


@dataclass(frozen=True, slots=True)
class AdvertisedListener(_Record):
    """``{"brokerServiceUrl": ..., "brokerServiceUrlTls": ...}``."""

    _WHAT: ClassVar[str] = "advertised listener"

    broker_service_url: str | None = None
    broker_service_url_tls: str | None = None

    def to_json(self) -> dict[str, Any]:
        return _without_nones(
            {"brokerServiceUrl": self.broker_service_url, "brokerServiceUrlTls": self.broker_service_url_tls}
        )

    @classmethod
    def from_json(cls, data: Any) -> AdvertisedListener:
        obj = _obj(data, "advertised listener")
        return cls(
            _opt_str(obj, "brokerServiceUrl", "advertised listener"),
            _opt_str(obj, "brokerServiceUrlTls", "advertised listener"),
        )


@dataclass(frozen=True, slots=True)
class NamespaceEphemeralData(_Record):
    """The value of an ownership node ``/namespace/{ns}/{range}`` (Pulsar's ``NamespaceEphemeralData``)."""

    _WHAT: ClassVar[str] = "NamespaceEphemeralData"

    native_url: str | None = None
    native_url_tls: str | None = None
    http_url: str | None = None
    http_url_tls: str | None = None
    #: True while the owner unloads the bundle: lookups answer "is being unloaded".
    disabled: bool = False
    advertised_listeners: Mapping[str, AdvertisedListener] = field(default_factory=dict)

    @property
    def broker_id(self) -> str | None:
        """The owner's broker id, ``host:port`` of its web service URL."""
        return broker_id_of_url(self.http_url) or broker_id_of_url(self.http_url_tls)

    def with_disabled(self, disabled: bool = True) -> NamespaceEphemeralData:
        return replace(self, disabled=disabled)

    def to_json(self) -> dict[str, Any]:
        out = _without_nones(
            {
                "nativeUrl": self.native_url,
                "nativeUrlTls": self.native_url_tls,
                "httpUrl": self.http_url,
                "httpUrlTls": self.http_url_tls,
            }
        )
        out["disabled"] = self.disabled
        out["advertisedListeners"] = {k: v.to_json() for k, v in sorted(self.advertised_listeners.items())}
        return out

    @classmethod
    def from_json(cls, data: Any) -> NamespaceEphemeralData:
        what = "NamespaceEphemeralData"
        obj = _obj(data, what)
        disabled = obj.get("disabled", False)
        if not isinstance(disabled, bool):
            raise InvalidInputError(f"Invalid {what}: 'disabled' must be true or false, got {disabled!r}")
        listeners = _obj(obj.get("advertisedListeners") or {}, f"{what} advertisedListeners")
        return cls(
            native_url=_opt_str(obj, "nativeUrl", what),
            native_url_tls=_opt_str(obj, "nativeUrlTls", what),
            http_url=_opt_str(obj, "httpUrl", what),
            http_url_tls=_opt_str(obj, "httpUrlTls", what),
            disabled=disabled,
            advertised_listeners={str(k): AdvertisedListener.from_json(v) for k, v in listeners.items()},
        )


# --------------------------------------------------------------------------- registered brokers


#: The brokerlb key a stopping broker adds to its registration (Pulsar's ``disableBroker``: it leaves
#: the registry before it releases its bundles; brokerlb keeps the registration -- its session names
#: the bundles it still releases -- and says it is leaving).
DRAINING_KEY = "brokerlbDraining"


@dataclass(frozen=True, slots=True)
class RegisteredBroker(_Record):
    """What lookups and redirects need of a broker's registration (``/loadbalance/brokers/{id}``:
    its LocalBrokerData, or the extensible manager's BrokerLookupData): its URLs, advertised
    listeners and whether it is stopping (:data:`DRAINING_KEY`), decoded once per version of the
    node. The load report itself is :meth:`~brokerlb.coordination.registry.BrokerRegistry.report`."""

    _WHAT: ClassVar[str] = "broker registration"

    web_service_url: str | None = None
    web_service_url_tls: str | None = None
    pulsar_service_url: str | None = None
    pulsar_service_url_tls: str | None = None
    advertised_listeners: Mapping[str, AdvertisedListener] = field(default_factory=dict)
    #: the broker is stopping gracefully: no placement picks it, its bundles go elsewhere
    draining: bool = False

    def to_json(self) -> dict[str, Any]:
        out = _without_nones(
            {
                "webServiceUrl": self.web_service_url,
                "webServiceUrlTls": self.web_service_url_tls,
                "pulsarServiceUrl": self.pulsar_service_url,
                "pulsarServiceUrlTls": self.pulsar_service_url_tls,
            }
        )
        if self.advertised_listeners:
            out["advertisedListeners"] = {
                k: v.to_json() for k, v in sorted(self.advertised_listeners.items())
            }
        if self.draining:
            out[DRAINING_KEY] = True
        return out

    @classmethod
    def from_json(cls, data: Any) -> RegisteredBroker:
        what = "broker registration"
        obj = _obj(data, what)
        listeners = _obj(obj.get("advertisedListeners") or {}, f"{what} advertisedListeners")
        return cls(
            web_service_url=_opt_str(obj, "webServiceUrl", what),
            web_service_url_tls=_opt_str(obj, "webServiceUrlTls", what),
            pulsar_service_url=_opt_str(obj, "pulsarServiceUrl", what),
            pulsar_service_url_tls=_opt_str(obj, "pulsarServiceUrlTls", what),
            advertised_listeners={str(k): AdvertisedListener.from_json(v) for k, v in listeners.items()},
            draining=obj.get(DRAINING_KEY) is True,
        )


# --------------------------------------------------------------------------- leader


@dataclass(frozen=True, slots=True)
class LeaderBroker(_Record):
    """The value of ``/loadbalance/leader``: ``{"brokerId": ..., "serviceUrl": ...}``.

    Older Pulsar releases wrote ``serviceUrl`` only; the broker id is then read from it.
    """

    _WHAT: ClassVar[str] = "leader value"

    broker_id: str
    service_url: str

    def to_json(self) -> dict[str, Any]:
        return {"brokerId": self.broker_id, "serviceUrl": self.service_url}

    @classmethod
    def from_json(cls, data: Any) -> LeaderBroker:
        obj = _obj(data, "leader value")
        url = _opt_str(obj, "serviceUrl", "leader value")
        broker_id = _opt_str(obj, "brokerId", "leader value") or broker_id_of_url(url)
        if not broker_id or url is None:
            raise InvalidInputError(
                f"Invalid leader value {dict(obj)!r}: 'serviceUrl' (and 'brokerId') required"
            )
        return cls(broker_id, url)


# --------------------------------------------------------------------------- policies


def _bundles_json(value: Any, what: str) -> dict[str, Any] | None:
    if value is None:
        return None
    return dict(_obj(value, f"{what} bundles"))


@dataclass(frozen=True, slots=True)
class LocalPolicies(_Record):
    """``/admin/local-policies/{ns}``: ``bundles``, ``bookieAffinityGroup``, ``namespaceAntiAffinityGroup``.

    ``bundles`` is Pulsar's BundlesData JSON (``{"boundaries": [...], "numBundles": N}``).
    """

    _WHAT: ClassVar[str] = "LocalPolicies"
    _KNOWN: ClassVar[tuple[str, ...]] = ("bundles", "bookieAffinityGroup", "namespaceAntiAffinityGroup")

    bundles: Mapping[str, Any] | None = None
    bookie_affinity_group: Mapping[str, Any] | None = None
    namespace_anti_affinity_group: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    def namespace_bundles(self, namespace: NamespaceName | str) -> NamespaceBundles:
        """The bundles, or Pulsar's default for LocalPolicies (one full bundle) when absent."""
        if self.bundles is None:
            return NamespaceBundles.create(namespace, 1)
        return NamespaceBundles.from_json(namespace, self.bundles)

    def with_bundles(self, bundles: NamespaceBundles) -> LocalPolicies:
        return replace(self, bundles=bundles.to_json())

    def to_json(self) -> dict[str, Any]:
        out = dict(self.extra)
        out.update(
            _without_nones(
                {
                    "bundles": dict(self.bundles) if self.bundles is not None else None,
                    "bookieAffinityGroup": dict(self.bookie_affinity_group)
                    if self.bookie_affinity_group
                    else None,
                    "namespaceAntiAffinityGroup": self.namespace_anti_affinity_group,
                }
            )
        )
        return out

    @classmethod
    def from_json(cls, data: Any) -> LocalPolicies:
        obj = _obj(data, "LocalPolicies")
        group = obj.get("bookieAffinityGroup")
        return cls(
            bundles=_bundles_json(obj.get("bundles"), "LocalPolicies"),
            bookie_affinity_group=dict(_obj(group, "bookieAffinityGroup")) if group is not None else None,
            namespace_anti_affinity_group=_opt_str(obj, "namespaceAntiAffinityGroup", "LocalPolicies"),
            extra={k: v for k, v in obj.items() if k not in cls._KNOWN},
        )


@dataclass(frozen=True, slots=True)
class Policies(_Record):
    """``/admin/policies/{ns}``: Pulsar's global namespace ``Policies``.

    brokerlb reads and writes ``bundles``; every other field (``replication_clusters``,
    ``auth_policies``, retention, ...) is kept verbatim in ``extra``.
    """

    _WHAT: ClassVar[str] = "Policies"

    bundles: Mapping[str, Any] | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    def namespace_bundles(
        self, namespace: NamespaceName | str, default_num_bundles: int = 4
    ) -> NamespaceBundles:
        return NamespaceBundles.from_json(namespace, self.bundles, default_num_bundles)

    def with_bundles(self, bundles: NamespaceBundles) -> Policies:
        return replace(self, bundles=bundles.to_json())

    def to_json(self) -> dict[str, Any]:
        out = dict(self.extra)
        if self.bundles is not None:
            out["bundles"] = dict(self.bundles)
        return out

    @classmethod
    def from_json(cls, data: Any) -> Policies:
        obj = _obj(data, "Policies")
        return cls(
            _bundles_json(obj.get("bundles"), "Policies"), {k: v for k, v in obj.items() if k != "bundles"}
        )


# --------------------------------------------------------------------------- isolation, failure domains


_INT = re.compile(r"-?\d+")


@dataclass(frozen=True, slots=True)
class AutoFailoverPolicy(_Record):
    """``{"policy_type": "min_available", "parameters": {"min_limit": "1", "usage_threshold": "80"}}``."""

    _WHAT: ClassVar[str] = "auto_failover_policy"
    POLICY_TYPES: ClassVar[tuple[str, ...]] = ("min_available",)

    policy_type: str = "min_available"
    parameters: Mapping[str, str] = field(default_factory=lambda: {"min_limit": "1", "usage_threshold": "80"})

    def __post_init__(self) -> None:
        if self.policy_type not in self.POLICY_TYPES:
            raise InvalidInputError(
                f"Invalid auto_failover_policy: unknown policy_type '{self.policy_type}' "
                f"(known: {', '.join(self.POLICY_TYPES)})"
            )
        for key in ("min_limit", "usage_threshold"):
            value = self.parameters.get(key)
            if value is None or not _INT.fullmatch(str(value)):
                raise InvalidInputError(
                    f"Invalid auto_failover_policy: parameter '{key}' must be an integer, got {value!r}"
                )

    @property
    def min_limit(self) -> int:
        return int(self.parameters["min_limit"])

    @property
    def usage_threshold(self) -> int:
        return int(self.parameters["usage_threshold"])

    def to_json(self) -> dict[str, Any]:
        return {
            "policy_type": self.policy_type,
            "parameters": {k: str(v) for k, v in self.parameters.items()},
        }

    @classmethod
    def from_json(cls, data: Any) -> AutoFailoverPolicy:
        obj = _obj(data, "auto_failover_policy")
        params = _obj(obj.get("parameters") or {}, "auto_failover_policy parameters")
        policy_type = obj.get("policy_type")
        if not isinstance(policy_type, str):
            raise InvalidInputError(
                f"Invalid auto_failover_policy: 'policy_type' must be a string, got {policy_type!r}"
            )
        return cls(policy_type, {str(k): str(v) for k, v in params.items()})


@dataclass(frozen=True, slots=True)
class NamespaceIsolationData(_Record):
    """One namespace isolation policy (Pulsar's ``NamespaceIsolationData``), validated as Pulsar does.

    ``namespaces``, ``primary`` and ``secondary`` are Java regexes matched against the
    whole name (``String.matches``); ``namespaces`` and ``primary`` must be non-empty.
    """

    _WHAT: ClassVar[str] = "NamespaceIsolationData"
    _KNOWN: ClassVar[tuple[str, ...]] = ("namespaces", "primary", "secondary", "auto_failover_policy")

    namespaces: tuple[str, ...]
    primary: tuple[str, ...]
    secondary: tuple[str, ...] = ()
    auto_failover_policy: AutoFailoverPolicy = field(default_factory=AutoFailoverPolicy)
    extra: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.namespaces:
            raise InvalidInputError("Invalid namespace isolation policy: 'namespaces' must not be empty")
        if not self.primary:
            raise InvalidInputError("Invalid namespace isolation policy: 'primary' must not be empty")
        for key, patterns in (
            ("namespaces", self.namespaces),
            ("primary", self.primary),
            ("secondary", self.secondary),
        ):
            for pattern in patterns:
                check_pattern(pattern, key)

    def matches_namespace(self, namespace: NamespaceName | str) -> bool:
        name = str(namespace)
        return any(fullmatch(p, name) for p in self.namespaces)

    def to_json(self) -> dict[str, Any]:
        out = dict(self.extra)
        out.update(
            {
                "namespaces": list(self.namespaces),
                "primary": list(self.primary),
                "secondary": list(self.secondary),
                "auto_failover_policy": self.auto_failover_policy.to_json(),
            }
        )
        return out

    @classmethod
    def from_json(cls, data: Any) -> NamespaceIsolationData:
        what = "namespace isolation policy"
        obj = _obj(data, what)
        if "secondary" in obj and obj["secondary"] is None:
            raise InvalidInputError(f"Invalid {what}: 'secondary' must not be null")
        if obj.get("auto_failover_policy") is None:
            raise InvalidInputError(f"Invalid {what}: 'auto_failover_policy' is required")
        return cls(
            namespaces=tuple(_str_list(obj, "namespaces", what, required=True)),
            primary=tuple(_str_list(obj, "primary", what, required=True)),
            secondary=tuple(_str_list(obj, "secondary", what)),
            auto_failover_policy=AutoFailoverPolicy.from_json(obj["auto_failover_policy"]),
            extra={k: v for k, v in obj.items() if k not in cls._KNOWN},
        )


@dataclass(frozen=True, slots=True)
class NamespaceIsolationPolicies(_Record):
    """The whole ``/admin/clusters/{cluster}/namespaceIsolationPolicies`` node: policy name → policy."""

    _WHAT: ClassVar[str] = "namespace isolation policies"

    policies: Mapping[str, NamespaceIsolationData] = field(default_factory=dict)

    def policy_for(self, namespace: NamespaceName | str) -> tuple[str, NamespaceIsolationData] | None:
        """The policy the namespace falls under (placement's rule, :func:`policy_for_namespace`)."""
        return policy_for_namespace(self.policies, str(namespace))

    def with_policy(self, name: str, policy: NamespaceIsolationData | None) -> NamespaceIsolationPolicies:
        """A copy with ``name`` set to ``policy`` (removed when ``policy`` is None)."""
        policies = dict(self.policies)
        if policy is None:
            policies.pop(name, None)
        else:
            policies[name] = policy
        return NamespaceIsolationPolicies(policies)

    def to_json(self) -> dict[str, Any]:
        return {name: p.to_json() for name, p in sorted(self.policies.items())}

    @classmethod
    def from_json(cls, data: Any) -> NamespaceIsolationPolicies:
        obj = _obj(data, "namespace isolation policies")
        return cls({str(name): NamespaceIsolationData.from_json(p) for name, p in obj.items()})


@dataclass(frozen=True, slots=True)
class FailureDomain(_Record):
    """``/admin/clusters/{cluster}/failureDomain/{domain}``: ``{"brokers": ["host:port", ...]}``."""

    _WHAT: ClassVar[str] = "FailureDomain"

    brokers: frozenset[str] = frozenset()

    def to_json(self) -> dict[str, Any]:
        return {"brokers": sorted(self.brokers)}

    @classmethod
    def from_json(cls, data: Any) -> FailureDomain:
        return cls(frozenset(_str_list(_obj(data, "FailureDomain"), "brokers", "FailureDomain")))


# --------------------------------------------------------------------------- tenants, clusters


@dataclass(frozen=True, slots=True)
class TenantInfo(_Record):
    """``/admin/policies/{tenant}``: ``{"adminRoles": [...], "allowedClusters": [...]}`` (Pulsar's TenantInfo).

    An empty node (a tenant node made as the parent of a namespace by an older brokerlb or by a
    tool writing the store directly) reads as :attr:`implicit`: no roles, no cluster list.
    """

    _WHAT: ClassVar[str] = "TenantInfo"
    _KNOWN: ClassVar[tuple[str, ...]] = ("adminRoles", "allowedClusters")

    admin_roles: tuple[str, ...] = ()
    allowed_clusters: tuple[str, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)
    implicit: bool = False

    def to_json(self) -> dict[str, Any]:
        out = dict(self.extra)
        out["adminRoles"] = sorted(set(self.admin_roles))
        out["allowedClusters"] = sorted(set(self.allowed_clusters))
        return out

    @classmethod
    def from_json(cls, data: Any) -> TenantInfo:
        what = "TenantInfo"
        obj = _obj(data, what)
        return cls(
            admin_roles=tuple(_str_list(obj, "adminRoles", what)),
            allowed_clusters=tuple(_str_list(obj, "allowedClusters", what)),
            extra={k: v for k, v in obj.items() if k not in cls._KNOWN},
        )

    @classmethod
    def from_bytes(cls, data: bytes, path: str | None = None) -> TenantInfo:
        if not data.strip():
            return cls(implicit=True)
        return super(TenantInfo, cls).from_bytes(data, path)


@dataclass(frozen=True, slots=True)
class ClusterData(_Record):
    """``/admin/clusters/{cluster}``: Pulsar's ClusterData (the URLs brokerlb knows; the rest kept as is)."""

    _WHAT: ClassVar[str] = "ClusterData"
    _FIELDS: ClassVar[tuple[tuple[str, str], ...]] = (
        ("service_url", "serviceUrl"),
        ("service_url_tls", "serviceUrlTls"),
        ("broker_service_url", "brokerServiceUrl"),
        ("broker_service_url_tls", "brokerServiceUrlTls"),
    )

    service_url: str | None = None
    service_url_tls: str | None = None
    broker_service_url: str | None = None
    broker_service_url_tls: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        out = dict(self.extra)
        out.update(_without_nones({name: getattr(self, attr) for attr, name in self._FIELDS}))
        return out

    @classmethod
    def from_json(cls, data: Any) -> ClusterData:
        obj = _obj(data, "ClusterData")
        known = {name for _attr, name in cls._FIELDS}
        values = {attr: _opt_str(obj, name, "ClusterData") for attr, name in cls._FIELDS}
        return cls(**values, extra={k: v for k, v in obj.items() if k not in known})
