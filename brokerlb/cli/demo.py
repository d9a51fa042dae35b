"""``brokerlb demo``: the main job.

Until the broker service lands this shows the Pulsar-faithful ring on an example
namespace: topics mapped to bundles, a hot bundle split three ways, and a merge.
"""

from __future__ import annotations

import collections

from rich.table import Table

from brokerlb.cli.common import console
from brokerlb.naming import NamespaceName
from brokerlb.ring import BundleSplitOption, NamespaceBundles, TopicRates, get_split_algorithm


def demo() -> None:
    """Run the main demo (ends by itself)."""
    ns = NamespaceName.parse("public/default")
    bundles = NamespaceBundles.create(ns, 4)
    topics = [str(ns.topic(f"orders-{i}")) for i in range(1000)]
    counts = collections.Counter(bundles.find_bundle(t).range for t in topics)
    table = Table(title="1,000 topics of public/default on 4 bundles (CRC-32 ring)")
    table.add_column("bundle")
    table.add_column("topics", justify="right")
    for b in bundles:
        table.add_row(b.range, str(counts[b.range]))
    console.print(table)
    hot = bundles.bundles[0]
    in_hot = [t for t in topics if hot.includes_hash(__import__("zlib").crc32(t.encode()))]
    rates = {t: TopicRates(100.0, 100_000.0) for t in in_hot}
    rates[in_hot[0]] = TopicRates(25_000.0, 80_000_000.0)
    for algo in ("range_equally_divide", "topic_count_equally_divide", "flow_or_qps_equally_divide"):
        cuts = get_split_algorithm(algo).split_boundaries(
            BundleSplitOption(hot, topics=in_hot, topic_rates=rates)
        )
        console.print(f"{algo:28s} → split {hot.range} at {[f'0x{c:08x}' for c in cuts or []]}")
    split = bundles.split(hot, get_split_algorithm("range_equally_divide").split_boundaries(BundleSplitOption(hot)))
    merged = split.merge(split.bundles[:2])
    console.print(f"split → {split.num_bundles} bundles; merge back → {merged.num_bundles} bundles "
                  f"(equal to the original: {merged == bundles})")
