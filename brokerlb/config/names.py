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
    "MetadataStoreUrl",
    "parse_metadata_store_url",
    "metadata_store_url_problem",
    "ZK_DEFAULT_PORT",
]

ZK_DEFAULT_PORT = 2181
_HOST = re.compile(r"[A-Za-z0-9_.\-]+|\[[0-9A-Fa-f:.]+\]")


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


@dataclass(frozen=True)
class MetadataStoreUrl:
    """A parsed ``metadataStoreUrl``.

    * ``memory:`` or ``memory:NAME`` -- brokerlb's embedded in-process store (Pulsar has
      the same scheme for tests); brokers of one process that use the same NAME share it.
    * ``zk:host:port[,host:port...][/chroot]`` -- ZooKeeper; a bare ``host:port,...``
      means ZooKeeper too, as in Pulsar. A missing port is 2181.
    """

    scheme: str
    hosts: tuple[tuple[str, int], ...] = ()
    chroot: str | None = None
    name: str = ""

    @property
    def is_zookeeper(self) -> bool:
        return self.scheme == "zk"

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
    text = url.strip()
    if text.startswith("memory:"):
        name = text[len("memory:"):]
        if any(c.isspace() for c in name) or "/" in name:
            raise ValueError("memory store name must not contain spaces or '/'")
        return MetadataStoreUrl("memory", name=name)
    if text.startswith("zk:"):
        text = text[len("zk:"):]
        if text.startswith("//"):
            raise ValueError("write zk:host:port (no '//')")
    elif re.match(r"[A-Za-z][A-Za-z0-9+.\-]*:(?!\d)", text):
        scheme = text.split(":", 1)[0]
        raise ValueError(f"unsupported metadata store '{scheme}:'; brokerlb supports memory: and zk:")
    hosts_part, slash, chroot = text.partition("/")
    if not hosts_part:
        raise ValueError("no ZooKeeper host given")
    hosts = tuple(_host_port(item.strip()) for item in hosts_part.split(","))
    return MetadataStoreUrl("zk", hosts=hosts, chroot=("/" + chroot.rstrip("/")) if slash and chroot else None)


def _host_port(item: str) -> tuple[str, int]:
    if not item:
        raise ValueError("empty host in the host list")
    host, sep, port_text = item.rpartition(":") if not item.endswith("]") else (item, "", "")
    if not sep:
        host, port_text = item, str(ZK_DEFAULT_PORT)
    if not _HOST.fullmatch(host):
        raise ValueError(f"bad host '{host}'")
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise ValueError(f"bad port '{port_text}' for host {host}")
    return host, int(port_text)
