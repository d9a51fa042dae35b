"""What a cluster of broker processes shows from outside, for end-to-end tests and live benchmarks.

Everything is read through the brokers' public surfaces, as an operator would:

* :func:`lb_counters` -- the leader's load-balancing counters from every broker's ``/metrics``
  (``brokerlb_moves_total{kind,cause}``, ``pulsar_lb_bundles_split*``,
  ``pulsar_lb_unload_*``), summed over the brokers (only the leader counts);
  :func:`counted` sums the samples of one name whose labels include the given ones;
* :func:`topic_owners` -- the broker owning each topic's bundle now, by lookup (``None`` while a
  bundle is in flight: a 503 is retriable);
* :func:`modelled_cpu` -- each broker's CPU, percent of its limit, from its own load report.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import httpx
from prometheus_client.parser import text_string_to_metric_families

from brokerlb.admin import AsyncAdminClient
from brokerlb.errors import BrokerLBError

__all__ = ["Counters", "lb_counters", "counted", "topic_owners", "modelled_cpu"]

#: (sample name, sorted (label, value) pairs) -> value
Counters = dict[tuple[str, tuple[tuple[str, str], ...]], float]

_PREFIXES = ("brokerlb_moves", "pulsar_lb_bundles_split", "pulsar_lb_unload")
_LABELS = ("kind", "cause", "result", "reason")


async def lb_counters(urls: Iterable[str]) -> Counters:
    """The load-balancing counters of every broker at ``urls`` (web URLs), summed."""
    out: Counters = {}
    async with httpx.AsyncClient(timeout=30) as http:
        for url in urls:
            text = (await http.get(f"{url}/metrics")).text
            for family in text_string_to_metric_families(text):
                for sample in family.samples:
                    if sample.name.startswith(_PREFIXES):
                        labels = tuple(sorted((k, v) for k, v in sample.labels.items() if k in _LABELS))
                        key = (sample.name, labels)
                        out[key] = out.get(key, 0.0) + sample.value
    return out


def counted(counters: Counters, name: str, **labels: str) -> float:
    """The sum of the samples called ``name`` whose labels include ``labels``."""
    wanted = set(labels.items())
    return sum(value for (metric, have), value in counters.items() if metric == name and wanted <= set(have))


async def topic_owners(
    admin: AsyncAdminClient, urls: Sequence[str], broker_ids: Sequence[str], topics: Iterable[str]
) -> dict[str, str] | None:
    """topic -> the id of the broker owning its bundle (a lookup, which assigns an unowned bundle);
    ``None`` while any of them is in flight (503: a move or a split under way)."""
    ids = dict(zip(urls, broker_ids, strict=True))
    out = {}
    for topic in topics:
        try:
            out[topic] = ids[(await admin.lookup_topic(topic))["httpUrl"]]
        except BrokerLBError as exc:
            if not exc.retriable:
                raise
            return None
    return out


async def modelled_cpu(urls: Sequence[str], broker_ids: Sequence[str]) -> dict[str, float]:
    """broker id -> CPU usage in percent of its limit, from the broker's own load report."""
    out = {}
    for url, broker in zip(urls, broker_ids, strict=True):
        async with AsyncAdminClient(url) as admin:
            cpu = (await admin.get_load_report())["cpu"]
        out[broker] = round(100 * cpu["usage"] / cpu["limit"], 1) if cpu["limit"] > 0 else 0.0
    return out
