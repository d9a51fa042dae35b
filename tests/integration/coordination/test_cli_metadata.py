"""``brokerlb metadata`` against a real ZooKeeper."""

from __future__ import annotations

import asyncio
import json
import uuid

import pytest
from typer.testing import CliRunner

from brokerlb.cli.main import build_app
from brokerlb.coordination import BundleMetadata, LeaderBroker, OwnershipTable
from brokerlb.coordination.paths import LEADER_PATH, broker_path
from brokerlb.ownership.machine import OwnershipMachine

pytestmark = pytest.mark.zookeeper


def test_metadata_commands(zk_server):
    from brokerlb.coordination.zookeeper import ZooKeeperMetadataStore

    chroot = f"/cli-{uuid.uuid4().hex[:8]}"
    url = f"zk:{zk_server.hosts}{chroot}"

    async def populate():
        async with ZooKeeperMetadataStore(zk_server.hosts) as root:
            await root.ensure_path(chroot)
        async with ZooKeeperMetadataStore(f"{zk_server.hosts}{chroot}") as store:
            await BundleMetadata(store).create_namespace("t/ns", num_bundles=2)
            await store.create(
                broker_path("b1:8080"), b'{"webServiceUrl":"http://b1:8080","x":["[red]"]}', make_parents=True
            )
            await store.create(LEADER_PATH, LeaderBroker("b1:8080", "http://b1:8080").to_bytes())
            await OwnershipTable(store).write(
                OwnershipMachine().assign("t/ns/0x00000000_0x80000000", "b1:8080", at_ms=0)
            )

    asyncio.run(populate())
    runner = CliRunner()
    app = build_app()
    brokers = runner.invoke(app, ["metadata", "brokers", "--store", url, "--json"])
    assert brokers.exit_code == 0, brokers.output
    assert json.loads(brokers.output) == {
        "brokers": ["b1:8080"],
        "leader": {"brokerId": "b1:8080", "serviceUrl": "http://b1:8080"},
    }
    owners = runner.invoke(app, ["metadata", "owners", "--store", url, "-n", "t/ns", "--json"])
    assert json.loads(owners.output)["t/ns/0x00000000_0x80000000"] == {
        "state": "Assigning",
        "broker": "b1:8080",
        "source": None,
        "session": None,
        "versionId": 1,
    }
    bundles = runner.invoke(app, ["metadata", "bundles", "--store", url, "-n", "t/ns"])
    assert "0x80000000_0xffffffff" in bundles.output
    tree = runner.invoke(app, ["metadata", "tree", "--store", url, "/loadbalance"])
    assert tree.exit_code == 0 and '["[red]"]' in tree.output  # data is shown verbatim, not as markup
    bad = runner.invoke(app, ["metadata", "brokers", "--store", "etcd:http://x"])
    assert bad.exit_code == 2 and "metadataStoreUrl" in bad.output
