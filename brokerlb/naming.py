"""Topic and namespace names, parsed and validated as Pulsar does.

Pulsar's rules (``TopicName``, ``NamespaceName``, ``NamedEntity`` in pulsar-common):

* A full topic name is ``domain://tenant/namespace/local`` (v2) or
  ``domain://tenant/cluster/namespace/local`` (v1, legacy); the domain is
  ``persistent`` or ``non-persistent`` (case-insensitive on input).
* Short forms: ``my-topic`` → ``persistent://public/default/my-topic`` and
  ``tenant/ns/topic`` → ``persistent://tenant/ns/topic``.
* Tenant, cluster and namespace parts match ``[-=:.\\w]*`` and are non-empty;
  the local name is anything that is not blank (a v2 local name cannot hold ``/``:
  four parts after the domain make a v1 name, as in Pulsar).
* A **blank** local name -- empty, or only whitespace as Java's ``Character.isWhitespace``
  sees it (space, tab, line breaks, ``\\x1c``-``\\x1f``, Unicode space separators except the
  no-break spaces U+00A0, U+2007, U+202F) -- is rejected, as Pulsar's ``TopicName.get`` and
  ``toFullTopicName`` do since apache/pulsar#23691 ("blank local topic"): ``" "``,
  ``"t/ns/\\t"``, ``"persistent://t/ns/ "``. A local name that merely contains or starts with
  spaces (``" a "``) or is a no-break space is accepted, as in Pulsar.
* *brokerlb deviation*: a local name holding a C0 control character (U+0000-U+001F: NUL, tab,
  CR, LF ...) or DEL is rejected. Pulsar accepts them (its stores hold names URL-encoded); in
  brokerlb they would reach log lines, ``/metrics`` labels and ZooKeeper paths as they are.
* A partition is ``<base>-partition-<N>`` with N a canonical non-negative int.
* The topic hash (:func:`topic_hash`) is the IEEE CRC-32 of the full name's UTF-8 bytes, as an
  unsigned 32-bit int: Pulsar's bundle factory hashes ``TopicName.toString()`` with Guava's
  ``Hashing.crc32()`` (``padToLong()``). A parsed name carries it (``ring_hash``).

>>> t = TopicName.parse("my-topic-partition-3")
>>> str(t), t.partition_index, str(t.partitioned_topic_name)
('persistent://public/default/my-topic-partition-3', 3, 'persistent://public/default/my-topic')
>>> str(t.namespace)
'public/default'
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Literal
from zlib import crc32

from brokerlb.errors import InvalidNamespaceNameError, InvalidTopicNameError

__all__ = [
    "SYSTEM_NAMESPACE_PREFIXES",
    "topic_hash",
    "TopicDomain",
    "NamespaceName",
    "TopicName",
    "PARTITIONED_TOPIC_SUFFIX",
    "SYSTEM_NAMESPACE",
    "heartbeat_namespace",
    "heartbeat_namespace_v2",
    "sla_monitor_namespace",
    "broker_of_heartbeat_namespace",
    "broker_of_sla_namespace",
    "is_heartbeat_namespace",
    "is_sla_namespace",
    "is_system_service_namespace",
    "is_blank",
]


def topic_hash(full_name: str) -> int:
    """CRC-32 of ``full_name``'s UTF-8 bytes (``zlib.crc32`` is unsigned in Python 3): the
    topic's place on its namespace's bundle ring (:mod:`brokerlb.ring`).

    >>> hex(topic_hash("persistent://public/default/my-topic"))
    '0x2bad45f7'
    """
    return crc32(full_name.encode("utf-8"))


TopicDomain = Literal["persistent", "non-persistent"]
_DOMAINS: dict[str, TopicDomain] = {"persistent": "persistent", "non-persistent": "non-persistent"}

PARTITIONED_TOPIC_SUFFIX = "-partition-"
PUBLIC_TENANT = "public"
DEFAULT_NAMESPACE = "default"

#: Pulsar's ``NamedEntity`` pattern for tenant, cluster and namespace parts.
_NAMED_ENTITY = re.compile(r"[-=:.\w]*", re.ASCII)
#: C0 control characters and DEL, refused in local names (a brokerlb rule: module docstring)
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def _check_entity(part: str, kind: str, whole: str) -> None:
    if not part:
        raise InvalidNamespaceNameError(whole, f"the {kind} is empty")
    if not _NAMED_ENTITY.fullmatch(part):
        raise InvalidNamespaceNameError(
            whole, f"the {kind} '{part}' may hold only letters, digits and the characters - = : . _"
        )


@dataclass(frozen=True, slots=True)
class NamespaceName:
    """``tenant/namespace`` (v2) or ``tenant/cluster/namespace`` (v1)."""

    tenant: str
    local_name: str
    cluster: str | None = None
    #: ``str(self)``, made once (a namespace's name keys the caches a lookup reads)
    _name: str = field(default="", init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        name = (
            f"{self.tenant}/{self.local_name}"
            if self.cluster is None
            else f"{self.tenant}/{self.cluster}/{self.local_name}"
        )
        object.__setattr__(self, "_name", name)

    @classmethod
    def parse(cls, name: str | NamespaceName) -> NamespaceName:
        """Parse ``tenant/ns`` or ``tenant/cluster/ns`` (results cached: the names of one
        namespace are then mostly one object, which makes comparing them cheap)."""
        if isinstance(name, NamespaceName):
            return name
        if not isinstance(name, str) or not name:
            raise InvalidNamespaceNameError(name, "a namespace name must be a non-empty string")
        return _parse_namespace_cached(name)

    @classmethod
    def _parse_uncached(cls, name: str) -> NamespaceName:
        parts = name.split("/")
        if len(parts) == 2:
            _check_entity(parts[0], "tenant", name)
            _check_entity(parts[1], "namespace", name)
            return cls(parts[0], parts[1])
        if len(parts) == 3:
            _check_entity(parts[0], "tenant", name)
            _check_entity(parts[1], "cluster", name)
            _check_entity(parts[2], "namespace", name)
            return cls(parts[0], parts[2], parts[1])
        raise InvalidNamespaceNameError(
            name, "expected <tenant>/<namespace> or <tenant>/<cluster>/<namespace>"
        )

    @property
    def is_v2(self) -> bool:
        return self.cluster is None

    def __str__(self) -> str:
        return self._name

    def topic(self, local_name: str, domain: TopicDomain = "persistent") -> TopicName:
        """The topic ``local_name`` of this namespace."""
        return TopicName.parse(f"{domain}://{self}/{local_name}")


_URL_SAFE = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-*_")


def _java_url_encode(text: str) -> str:
    """``java.net.URLEncoder.encode(text, UTF_8)``: keeps ``[A-Za-z0-9.*_-]``, space → ``+``."""
    out = []
    for byte in text.encode("utf-8"):
        if byte in _URL_SAFE:
            out.append(chr(byte))
        elif byte == 0x20:
            out.append("+")
        else:
            out.append(f"%{byte:02X}")
    return "".join(out)


#: Characters Python's ``str.isspace`` counts that Java's ``Character.isWhitespace`` does not.
_NOT_JAVA_WHITESPACE = frozenset("\x85\xa0\u2007\u202f")


def is_blank(text: str) -> bool:
    """Apache Commons' ``StringUtils.isBlank``: empty, or every character is Java whitespace.

    >>> is_blank(" \\t"), is_blank(" a "), is_blank("\\xa0")
    (True, False, False)
    """
    return not text or (text.isspace() and _NOT_JAVA_WHITESPACE.isdisjoint(text))


def _partition_index(full: str) -> int:
    """Pulsar's static ``TopicName.getPartitionIndex``: -1 unless a canonical int follows the
    last ``-partition-`` (no sign, no leading zero, at most ``2**31 - 1``). As Java's
    ``Integer.parseInt``, any Unicode decimal digits count; "canonical" is Pulsar's check that
    the text is as long as the number written out."""
    pos = full.rfind(PARTITIONED_TOPIC_SUFFIX)
    if pos < 0:
        return -1
    idx = full[pos + len(PARTITIONED_TOPIC_SUFFIX) :]
    if not idx.isdecimal():
        return -1
    value = int(idx)
    if len(str(value)) != len(idx) or value > 2**31 - 1:
        return -1
    return value


@dataclass(frozen=True, slots=True)
class TopicName:
    """A parsed topic name. ``str(t)`` is the complete name Pulsar hashes."""

    domain: TopicDomain
    namespace: NamespaceName
    local_name: str
    partition_index: int = -1
    _full: str = field(default="", compare=False, repr=False)
    #: the topic's place on its namespace's bundle ring: :func:`topic_hash` of the full name,
    #: computed when the name is made (parsed names are cached: a known topic hashes nothing)
    ring_hash: int = field(default=-1, init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "ring_hash", topic_hash(str(self)))

    @classmethod
    def parse(cls, name: str | TopicName) -> TopicName:
        """Parse a full or short topic name (results cached, as Pulsar's ``TopicName.get``)."""
        if type(name) is str:
            return _parse_topic_cached(name)
        if isinstance(name, TopicName):
            return name
        if not isinstance(name, str):
            raise InvalidTopicNameError(name, "a topic name must be a non-empty string")
        return _parse_topic_cached(name)

    @classmethod
    def _parse_uncached(cls, name: str) -> TopicName:
        if not name:
            raise InvalidTopicNameError(name, "a topic name must be a non-empty string")
        full = name
        if "://" not in name:
            parts = [p for p in name.split("/") if p]  # Pulsar's StringUtils.split drops empties
            if len(parts) == 3:
                full = "persistent://" + name
            elif len(parts) == 1:
                full = f"persistent://{PUBLIC_TENANT}/{DEFAULT_NAMESPACE}/{parts[0]}"
            else:
                raise InvalidTopicNameError(
                    name, "a short topic name must be <tenant>/<namespace>/<topic> or <topic>"
                )
        scheme, rest = full.split("://", 1)
        domain = _DOMAINS.get(scheme.lower())
        if domain is None:
            raise InvalidTopicNameError(
                name, f"unknown domain '{scheme}' (expected persistent or non-persistent)"
            )
        parts = rest.split("/", 3)
        try:
            if len(parts) == 3:
                ns = NamespaceName.parse(f"{parts[0]}/{parts[1]}")
            elif len(parts) == 4:
                ns = NamespaceName.parse(f"{parts[0]}/{parts[1]}/{parts[2]}")
            else:
                raise InvalidTopicNameError(
                    name,
                    "expected domain://<tenant>/<namespace>/<topic> or domain://<tenant>/<cluster>/<namespace>/<topic>",
                )
        except InvalidNamespaceNameError as exc:
            raise InvalidTopicNameError(name, exc.why) from exc
        local = parts[-1]
        if not local:
            raise InvalidTopicNameError(name, "the topic's local name is empty")
        if is_blank(local):
            raise InvalidTopicNameError(name, "blank local topic (the local name is only whitespace)")
        control = _CONTROL.search(local)
        if control is not None:
            raise InvalidTopicNameError(
                name.encode("unicode_escape").decode("ascii"),
                f"the local name holds the control character U+{ord(control.group()):04X}",
            )
        complete = f"{domain}://{ns}/{local}"
        return cls(domain, ns, local, _partition_index(complete), complete)

    # ------------------------------------------------------------------ views
    def __str__(self) -> str:
        return self._full or f"{self.domain}://{self.namespace}/{self.local_name}"

    @property
    def tenant(self) -> str:
        return self.namespace.tenant

    @property
    def cluster(self) -> str | None:
        return self.namespace.cluster

    @property
    def is_v2(self) -> bool:
        return self.namespace.is_v2

    @property
    def is_persistent(self) -> bool:
        return self.domain == "persistent"

    @property
    def is_partitioned(self) -> bool:
        return self.partition_index != -1

    @staticmethod
    def partition_index_of(name: str) -> int:
        """Pulsar's static ``TopicName.getPartitionIndex(String)`` on any string, unparsed:
        ``"t-partition-4"`` → 4; ``"t-partition-01"``, ``"t-partition--1"``, ``"t"`` → -1."""
        return _partition_index(name)

    @property
    def partitioned_topic_name(self) -> TopicName:
        """The base name of a partition (``t-partition-3`` → ``t``); itself otherwise."""
        if not self.is_partitioned:
            return self
        full = str(self)
        return TopicName.parse(full[: full.rfind(PARTITIONED_TOPIC_SUFFIX)])

    def partition(self, index: int) -> TopicName:
        """Pulsar's ``getPartition``: ``-1`` or an existing suffix gives itself."""
        if index == -1 or str(self).endswith(f"{PARTITIONED_TOPIC_SUFFIX}{index}"):
            return self
        if index < 0:
            raise InvalidTopicNameError(
                f"{self}{PARTITIONED_TOPIC_SUFFIX}{index}", "negative partition index"
            )
        return TopicName.parse(f"{self}{PARTITIONED_TOPIC_SUFFIX}{index}")

    @property
    def encoded_local_name(self) -> str:
        """URL-encoded local name, as Java's ``URLEncoder`` (space → ``+``)."""
        return _java_url_encode(self.local_name)

    @property
    def persistence_name(self) -> str:
        """``tenant/ns/domain/encodedLocal`` -- the managed ledger's name (Pulsar's
        ``getPersistenceNamingEncoding``)."""
        return f"{self.namespace}/{self.domain}/{self.encoded_local_name}"

    @property
    def lookup_name(self) -> str:
        """``domain/tenant/ns/encodedLocal`` -- the tail of the lookup REST path."""
        return f"{self.domain}/{self.namespace}/{self.encoded_local_name}"

    @property
    def rest_path(self) -> str:
        return self.lookup_name


#: Pulsar keeps a 100,000-entry cache of parsed names; so do we (errors are not cached).
_parse_topic_cached = lru_cache(maxsize=100_000)(TopicName._parse_uncached)
_parse_namespace_cached = lru_cache(maxsize=10_000)(NamespaceName._parse_uncached)


# ------------------------------------------------------------------ system namespaces

SYSTEM_NAMESPACE = NamespaceName("pulsar", "system")

_HEARTBEAT_V1 = re.compile(r"pulsar/[^/]+/([^:]+:\d+)")
_HEARTBEAT_V2 = re.compile(r"pulsar/([^:]+:\d+)")
_SLA_MONITOR = re.compile(r"sla-monitor/[^/]+/([^:]+:\d+)")
#: every system-service namespace (and bundle) name starts with one of these
SYSTEM_NAMESPACE_PREFIXES = ("pulsar/", "sla-monitor/")


def heartbeat_namespace(cluster: str, broker_id: str) -> NamespaceName:
    """v1 heartbeat namespace ``pulsar/{cluster}/{brokerId}``."""
    return NamespaceName("pulsar", broker_id, cluster)


def heartbeat_namespace_v2(broker_id: str) -> NamespaceName:
    """v2 heartbeat namespace ``pulsar/{brokerId}``."""
    return NamespaceName("pulsar", broker_id)


def sla_monitor_namespace(cluster: str, broker_id: str) -> NamespaceName:
    """SLA-monitor namespace ``sla-monitor/{cluster}/{brokerId}``."""
    return NamespaceName("sla-monitor", broker_id, cluster)


def _ns_str(namespace: str | NamespaceName) -> str:
    return str(namespace)


def broker_of_heartbeat_namespace(namespace: str | NamespaceName) -> str | None:
    """The broker id a heartbeat namespace belongs to, or ``None``."""
    ns = _ns_str(namespace)
    m = _HEARTBEAT_V1.fullmatch(ns) or _HEARTBEAT_V2.fullmatch(ns)
    return m.group(1) if m else None


def broker_of_sla_namespace(namespace: str | NamespaceName) -> str | None:
    m = _SLA_MONITOR.fullmatch(_ns_str(namespace))
    return m.group(1) if m else None


def is_heartbeat_namespace(namespace: str | NamespaceName) -> bool:
    return broker_of_heartbeat_namespace(namespace) is not None


def is_sla_namespace(namespace: str | NamespaceName) -> bool:
    return broker_of_sla_namespace(namespace) is not None


def is_system_service_namespace(namespace: str | NamespaceName) -> bool:
    """``pulsar/system``, heartbeat and SLA-monitor namespaces (excluded from shedding)."""
    ns = _ns_str(namespace)
    return ns == str(SYSTEM_NAMESPACE) or is_heartbeat_namespace(ns) or is_sla_namespace(ns)
