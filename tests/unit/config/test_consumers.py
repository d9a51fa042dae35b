"""The config works with the modules that consume it.

* metadataStoreUrl validation agrees with ``brokerlb.coordination.open_store``: a URL the
  config accepts must open (the config may refuse more, e.g. port 99999), and name the
  same store;
* ``brokerlb.model.ResourceWeights.from_config`` reads the (alias-resolved) weights.
"""

from __future__ import annotations

import pytest

from brokerlb.config import (
    DeprecatedConfigKeyWarning,
    InvalidConfigError,
    ServiceConfig,
    parse_metadata_store_url,
)
from brokerlb.coordination import open_store
from brokerlb.model.resources import ResourceWeights

URLS = [
    "memory:",
    "memory:x",
    "memory:/x",
    "memory:a b",
    "zk:127.0.0.1:2181",
    "127.0.0.1:2181",
    "zk:h1:2181,h2:2182/chroot",
    "zk:h1:2181/a/b/",
    "zk:[::1]:2181",
    "zk:h",
    "zk://h:2181",
    "zk:",
    "etcd:http://h:2379",
    "zk:h:2181/a//b",
    "zk:h:2181/../x",
    "zk:h:99999",
    "h1:2181,,h2:2181",
]


@pytest.mark.parametrize("url", URLS)
def test_config_accepts_only_what_the_store_opens(url: str) -> None:
    try:
        parsed = parse_metadata_store_url(url)
    except InvalidConfigError:
        return  # the config refuses it: nothing to agree on
    ServiceConfig(metadataStoreUrl=url)
    store = open_store(url)  # unstarted: no connection is made
    if parsed.scheme == "memory":
        assert store.url == str(parsed)
    else:
        assert type(store).__name__ == "ZooKeeperMetadataStore"


def test_resource_weights_from_config() -> None:
    assert ResourceWeights.from_config(ServiceConfig()) == ResourceWeights()
    with pytest.warns(DeprecatedConfigKeyWarning):
        conf = ServiceConfig.from_mapping(
            {"loadBalancerBandwithOutResourceWeight": "2", "loadBalancerDirectMemoryResourceWeight": "0.5"}
        )
    weights = ResourceWeights.from_config(conf)
    assert (weights.bandwidth_out, weights.direct_memory, weights.cpu) == (2.0, 0.5, 1.0)
