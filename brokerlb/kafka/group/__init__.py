"""Consumer-group protocols over a :class:`~brokerlb.coordination.MetadataStore`.

* :class:`ZkRebalancingConsumer` -- Kafka 0.8's ZooKeeper-era protocol: every member
  rebalances itself (stop, release, compute, claim with retry, resume);
* :class:`CoordinatedGroupConsumer` -- one elected member computes, the others
  follow (incremental by default);
* :class:`GroupCoordinatorService` / :class:`ReconcilingConsumer` -- KIP-848: a
  coordinator computes the target with a server-side assignor, members reconcile
  towards it under member epochs (:mod:`brokerlb.kafka.reconciliation`);
* :class:`GroupRun` / :class:`FetchTracker` -- run a group and measure rebalance
  time, partitions moved and pauses (tests and ``benchmarks/bench_group_protocols.py``).

Both protocols use the metadata-store interface only (never kazoo), so they run on
the embedded store and on a real ZooKeeper.
"""

from brokerlb.kafka.group.coordinated import CoordinatedGroupConsumer, decode_assignment, encode_assignment
from brokerlb.kafka.group.harness import ChangeReport, GroupRun
from brokerlb.kafka.group.layout import GroupPaths, create_topic, set_topic_partitions, topic_path
from brokerlb.kafka.group.reconciliation import (
    GroupCoordinatorService,
    Kip848Paths,
    ReconcilingConsumer,
    reconciling_style,
)
from brokerlb.kafka.group.tracker import FetchTracker, PauseStats, RebalanceRecord
from brokerlb.kafka.group.zk_consumer import STATELESS_ASSIGNORS, ZkRebalancingConsumer

__all__ = [
    "STATELESS_ASSIGNORS",
    "ChangeReport",
    "CoordinatedGroupConsumer",
    "FetchTracker",
    "GroupCoordinatorService",
    "GroupPaths",
    "GroupRun",
    "Kip848Paths",
    "PauseStats",
    "RebalanceRecord",
    "ReconcilingConsumer",
    "ZkRebalancingConsumer",
    "create_topic",
    "decode_assignment",
    "encode_assignment",
    "reconciling_style",
    "set_topic_partitions",
    "topic_path",
]
