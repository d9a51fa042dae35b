"""Helpers for values of string keys: strategy class names and metadata-store URLs.

>>> short_class_name("org.apache.pulsar.broker.loadbalance.impl.ThresholdShedder")
'ThresholdShedder'
>>> short_class_name("ThresholdShedder")
'ThresholdShedder'
>>> parse_metadata_store_url("zk:127.0.0.1:2181,127.0.0.1:2182/pulsar").hosts
(('127.0.0.1', 2181), ('127.0.0.1', 2182))
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from brokerlb.errors import InvalidConfigError

__all__ = [
    "short_class_name",
    "MODULAR_LOAD_MANAGER_CLASS",
    "EXTENSIBLE_LOAD_MANAGER_CLASS",
    "EXTENSIBLE_LOAD_MANAGER",
    "is_extensible_load_manager",
    "load_manager_class_problem",
    "LOAD_MANAGER_CLASSES",
    "MetadataStoreUrl",
    "parse_metadata_store_url",
    "metadata_store_url_problem",
]

_HOST_PORT = re.compile(r"(\[[0-9a-fA-F:]+\]|[A-Za-z0-9_.-]+):(\d{1,5})")


def short_class_name(name: str, key: str = "className") -> str:
    """``org.apache.pulsar....ThresholdShedder`` → ``ThresholdShedder`` (a short name stays).

    Strategy keys (``loadBalancerLoadSheddingStrategy``, ``loadManagerClassName`` ...)
    accept either form; registries of strategies are keyed by the short name. ``key``
    names the config key in the error raised for an empty name.
    """
    text = name.strip()
    short = text.rsplit(".", 1)[-1].rsplit("$", 1)[-1]
    if not short:
        raise InvalidConfigError(key, name, "empty class name")
    return short


#: Pulsar's modular load manager (the default ``loadManagerClassName``).
MODULAR_LOAD_MANAGER_CLASS = "org.apache.pulsar.broker.loadbalance.impl.ModularLoadManagerImpl"
#: Pulsar's extensible load manager (PIP-192).
EXTENSIBLE_LOAD_MANAGER_CLASS = "org.apache.pulsar.broker.loadbalance.extensions.ExtensibleLoadManagerImpl"
#: Its simple class name: ``loadManagerClassName`` may be given either way.
EXTENSIBLE_LOAD_MANAGER = "ExtensibleLoadManagerImpl"


#: the load managers brokerlb implements, by full and short name
LOAD_MANAGER_CLASSES = frozenset(
    {
        MODULAR_LOAD_MANAGER_CLASS,
        "ModularLoadManagerImpl",
        EXTENSIBLE_LOAD_MANAGER_CLASS,
        EXTENSIBLE_LOAD_MANAGER,
    }
)


def load_manager_class_problem(name: str) -> str | None:
    """Why ``loadManagerClassName`` cannot be ``name`` (``None`` when brokerlb implements it).

    >>> load_manager_class_problem("a.")
    'brokerlb implements ModularLoadManagerImpl and ExtensibleLoadManagerImpl (full or short class name)'
    """
    if name.strip() in LOAD_MANAGER_CLASSES:
        return None
    return (
        "brokerlb implements ModularLoadManagerImpl and ExtensibleLoadManagerImpl (full or short class name)"
    )


def is_extensible_load_manager(load_manager_class_name: str) -> bool:
    """Whether ``loadManagerClassName`` selects the extensible load manager (full or simple name).

    >>> is_extensible_load_manager(EXTENSIBLE_LOAD_MANAGER_CLASS), is_extensible_load_manager("ModularLoadManagerImpl")
    (True, False)
    """
    return short_class_name(load_manager_class_name, "loadManagerClassName") == EXTENSIBLE_LOAD_MANAGER


@dataclass(frozen=True)
class MetadataStoreUrl:
    """A parsed ``metadataStoreUrl``.

    * ``memory:`` or ``memory:NAME`` -- brokerlb's embedded in-process store (Pulsar has
      the same scheme for tests); stores of one process with the same NAME share one tree
      (``memory:`` is the name ``default``).
    * ``sqlite:DIRECTORY`` -- the embedded store kept on disk in DIRECTORY (``name``); one
      process at a time (Pulsar's standalone uses RocksDB for this).
    * ``zk:host:port[,host:port...][/chroot]`` -- ZooKeeper; a bare ``host:port,...``
      means ZooKeeper too, as in Pulsar. Every host needs its port.
    """

    scheme: str
    hosts: tuple[tuple[str, int], ...] = ()
    chroot: str | None = None
    name: str = ""

    @property
    def connect_string(self) -> str:
        """ZooKeeper connect string (``h1:2181,h2:2181/chroot``) as kazoo takes it."""
        hosts = ",".join(f"{h}:{p}" for h, p in self.hosts)
        return hosts + (self.chroot or "")

    def __str__(self) -> str:
        if self.scheme == "memory":
            return f"memory:{self.name}"
        return f"zk:{self.connect_string}"


def metadata_store_url_problem(url: str) -> str | None:
    """Why ``url`` is not a metadata-store URL brokerlb can use, or None when it is fine."""
    try:
        _parse(url)
    except ValueError as exc:
        return str(exc)
    return None


def parse_metadata_store_url(url: str) -> MetadataStoreUrl:
    """Parse a ``metadataStoreUrl`` value; a bad one raises :class:`InvalidConfigError`."""
    try:
        return _parse(url)
    except ValueError as exc:
        raise InvalidConfigError("metadataStoreUrl", url, str(exc)) from None


def _parse(url: str) -> MetadataStoreUrl:
    # Accepts exactly what brokerlb.coordination.open_store accepts (a unit test checks it).
    text = url.strip()
    if text.startswith("memory:"):
        return MetadataStoreUrl("memory", name=text[len("memory:") :].lstrip("/") or "default")
    if text.startswith("sqlite:"):
        directory = text[len("sqlite:") :]
        if not directory:
            raise ValueError("sqlite: needs a directory (sqlite:DIRECTORY)")
        return MetadataStoreUrl("sqlite", name=directory)
    hosts_text = text[len("zk:") :] if text.startswith("zk:") else text
    scheme = re.match(r"([a-z][a-z0-9+.\-]*):(?!\d)", hosts_text)
    if scheme:
        raise ValueError(
            f"unsupported metadata store '{scheme.group(1)}:'; brokerlb supports memory:, sqlite: and zk:"
        )
    servers, slash, chroot = hosts_text.partition("/")
    hosts = tuple(_host_port(item.strip()) for item in servers.split(","))
    segments = chroot.rstrip("/").split("/")
    if chroot and any(part in ("", ".", "..") for part in segments):
        raise ValueError(f"invalid chroot '/{chroot}'")
    return MetadataStoreUrl("zk", hosts=hosts, chroot=("/" + "/".join(segments)) if chroot else None)


def _host_port(item: str) -> tuple[str, int]:
    match = _HOST_PORT.fullmatch(item)
    if not match:
        raise ValueError(f"'{item}' is not host:port")
    port = int(match.group(2))
    if not 0 < port < 65536:
        raise ValueError(f"bad port {port} in '{item}'")
    return match.group(1), port
