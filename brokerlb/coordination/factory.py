"""``open_store(url)``: a metadata store from a URL, as Pulsar's ``metadataStoreUrl``.

* ``memory:`` / ``memory:NAME`` -- the embedded store; every store opened with the
  same name in one process shares one tree (``memory:`` is the name ``default``);
* ``sqlite:DIRECTORY`` -- the embedded store kept on disk (``brokerlb standalone --data-dir``;
  Pulsar's standalone uses RocksDB), one process at a time;
* ``zk:host:port[,host:port...][/chroot]`` -- ZooKeeper through kazoo; as in Pulsar,
  a URL without a scheme (``host:2181``) is read as ZooKeeper too.

The store is returned unstarted: ``async with open_store(url) as store`` starts
and closes it, or call ``await store.start()`` yourself.
"""

from __future__ import annotations

import re
from typing import Any

from brokerlb.coordination.memory import MemoryMetadataStore
from brokerlb.coordination.store import MetadataStore
from brokerlb.errors import InvalidConfigError

__all__ = ["open_store", "open_store_from_config", "DEFAULT_SESSION_TIMEOUT", "DEFAULT_OPERATION_TIMEOUT"]

#: Pulsar's ``metadataStoreSessionTimeoutMillis`` default (30000 ms).
DEFAULT_SESSION_TIMEOUT = 30.0
#: Pulsar's ``metadataStoreOperationTimeoutSeconds`` default.
DEFAULT_OPERATION_TIMEOUT = 30.0

_HOST_PORT = re.compile(r"(\[[0-9a-fA-F:]+\]|[A-Za-z0-9_.-]+):\d{1,5}")
_SCHEME = re.compile(r"^([a-z][a-z0-9+.-]*):(?!\d)")


def open_store(
    url: str,
    *,
    session_timeout: float = DEFAULT_SESSION_TIMEOUT,
    operation_timeout: float = DEFAULT_OPERATION_TIMEOUT,
) -> MetadataStore:
    """An unstarted store for ``url`` (see the module docstring for the forms)."""
    if not isinstance(url, str) or not url.strip():
        raise InvalidConfigError(
            "metadataStoreUrl", url, "expected memory:[name], sqlite:DIRECTORY or zk:host:port[,host:port...]"
        )
    url = url.strip()
    if url.startswith("memory:"):
        name = url[len("memory:") :].lstrip("/") or "default"
        return MemoryMetadataStore(name, session_timeout=session_timeout, operation_timeout=operation_timeout)
    if url.startswith("sqlite:"):
        from brokerlb.coordination.sqlite import open_sqlite_store

        return open_sqlite_store(
            url[len("sqlite:") :], session_timeout=session_timeout, operation_timeout=operation_timeout
        )
    hosts = url[len("zk:") :] if url.startswith("zk:") else url
    scheme = _SCHEME.match(hosts)
    if scheme:
        raise InvalidConfigError(
            "metadataStoreUrl",
            url,
            f"unsupported metadata store scheme '{scheme.group(1)}' (supported: memory:, sqlite:, zk:)",
        )
    _check_hosts(url, hosts)
    from brokerlb.coordination.zookeeper import ZooKeeperMetadataStore

    return ZooKeeperMetadataStore(hosts, session_timeout=session_timeout, operation_timeout=operation_timeout)


def open_store_from_config(conf: Any) -> MetadataStore:
    """A store from a :class:`~brokerlb.config.ServiceConfig` (or anything with Pulsar's keys).

    Reads ``metadataStoreUrl``, ``metadataStoreSessionTimeoutMillis`` and
    ``metadataStoreOperationTimeoutSeconds`` (the config resolves the old
    ``zookeeperServers`` / ``zooKeeperSessionTimeoutMillis`` names into these).
    """
    return open_store(
        conf.metadataStoreUrl,
        session_timeout=conf.metadataStoreSessionTimeoutMillis / 1000.0,
        operation_timeout=float(conf.metadataStoreOperationTimeoutSeconds),
    )


def _check_hosts(url: str, hosts: str) -> None:
    servers, _, chroot = hosts.partition("/")
    for server in servers.split(","):
        if not _HOST_PORT.fullmatch(server.strip()):
            raise InvalidConfigError("metadataStoreUrl", url, f"'{server}' is not host:port")
    if chroot and any(part in ("", ".", "..") for part in chroot.rstrip("/").split("/")):
        raise InvalidConfigError("metadataStoreUrl", url, f"invalid chroot '/{chroot}'")
