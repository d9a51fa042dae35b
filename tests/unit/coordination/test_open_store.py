from __future__ import annotations

import pytest

from brokerlb.coordination import MemoryMetadataStore, open_store
from brokerlb.errors import InvalidConfigError


def test_memory_urls():
    assert open_store("memory:").server.name == "default"
    store = open_store("memory:cluster-a", session_timeout=3)
    assert isinstance(store, MemoryMetadataStore) and store.server.name == "cluster-a"
    assert store.session_timeout == 3 and store.url == "memory:cluster-a"


@pytest.mark.parametrize(
    "url, hosts",
    [
        ("zk:127.0.0.1:2181", "127.0.0.1:2181"),
        ("zk:a:2181,b:2182/pulsar", "a:2181,b:2182/pulsar"),
        ("localhost:2181", "localhost:2181"),  # no scheme: ZooKeeper, as Pulsar reads metadataStoreUrl
    ],
)
def test_zookeeper_urls(url, hosts):
    pytest.importorskip("kazoo")
    store = open_store(url)
    assert store.hosts == hosts and store.url == f"zk:{hosts}"


@pytest.mark.parametrize("url", ["", "etcd:http://x:2379", "zk:nohostport", "zk:a:2181//x", "zk:a:b"])
def test_bad_urls_name_the_config_key(url):
    with pytest.raises(InvalidConfigError, match="metadataStoreUrl"):
        open_store(url)


def test_store_from_broker_config():
    from brokerlb.config import ServiceConfig
    from brokerlb.coordination import open_store_from_config

    conf = ServiceConfig().with_overrides(
        {
            "metadataStoreUrl": "memory:from-conf",
            "metadataStoreSessionTimeoutMillis": 4500,
            "metadataStoreOperationTimeoutSeconds": 7,
        }
    )
    store = open_store_from_config(conf)
    assert store.url == "memory:from-conf" and store.session_timeout == 4.5 and store.operation_timeout == 7
