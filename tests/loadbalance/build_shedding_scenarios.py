"""Builds ``pulsar_scenarios/shedding/*.json`` (run: ``python -m tests.loadbalance.build_shedding_scenarios``).

Each fixture ports one test method of Apache Pulsar's shedding tests (OverloadShedderTest,
ThresholdShedderTest, UniformLoadShedderTest, AvgShedderTest, TransferShedderTest): its
requests are ``brokerlb plan batch`` requests (snapshot + strategy + session) and its
expectations are what Pulsar's test asserts (format: :mod:`tests.loadbalance.scenarios`). The helpers below mirror the Java tests' helpers
(``getCpuLoad``, ``getTopBundlesLoad``, ``initBrokerData`` ...), computing derived values
(``weightedMaxEMA``, top-K order) with brokerlb's model, as Pulsar's classes do.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from brokerlb.model import (
    BrokerLoadData,
    NamespaceBundleStats,
    ResourceUsage,
    SystemResourceUsage,
    TopBundlesLoadData,
)

HERE = Path(__file__).parent / "pulsar_scenarios" / "shedding"
TESTS = "apache/pulsar pulsar-broker/src/test/java/org/apache/pulsar/broker/loadbalance"
IMPL = "org.apache.pulsar.broker.loadbalance.impl"
EXT = "org.apache.pulsar.broker.loadbalance.extensions"
NOW = 1_700_000_000_000
MB = 1024 * 1024


_KEYS = {
    "unloads": "unload.success",
    "unloadsInOrder": "unload.successInOrder",
    "unloadsOneOf": "unload.successOneOf",
    "unloadsWithReason": "unload.successWithReason",
    "count": "unload.count",
    "countAtLeast": "unload.countAtLeast",
    "brokers": "unload.brokers",
    "perBroker": "unload.perBroker",
    "destinations": "unload.destinations",
    "reason": "unload.reason",
    "skip": "unload.skip",
    "stats": "stats",
    "statsApprox": "statsApprox",
    "stdAfterAtMostTargetOrExhausted": "unload.stdAtMostTargetOrExhausted",
}


def _expectation(expect: dict[str, Any], unloaded: set[str]) -> dict[str, Any]:
    if "placement" in expect:
        bundle = expect["ifUnloaded"]
        return {"placement.broker": expect["placement"]} if bundle in unloaded else {}
    out: dict[str, Any] = {}
    for key, value in expect.items():
        if key == "cooledDownBrokers":
            out.setdefault("stats", {})["cooledDownBrokers"] = value
        else:
            out.setdefault(_KEYS[key], {}).update(value) if key == "stats" else out.__setitem__(
                _KEYS[key], value
            )
    return out


def _describe(cls: str, method: str, scenario: dict[str, Any], expects: list[dict[str, Any]]) -> str:
    """A one-line summary when the scenario has no written description."""
    steps = len(scenario["steps"])
    parts = []
    for expect in expects:
        if "unload.skip" in expect:
            parts.append(f"nothing unloaded ({expect['unload.skip']})")
        elif "unload.success" in expect or "unload.successInOrder" in expect:
            got = expect.get("unload.success") or expect.get("unload.successInOrder")
            parts.append(
                "unloads " + ", ".join(f"{b} from {s}" + (f" to {d}" if d else "") for s, b, d in got)
                if got
                else "nothing unloaded"
            )
        elif "unload.count" in expect:
            parts.append(f"{expect['unload.count']} unloads")
        elif "placement.broker" in expect:
            parts.append(f"placed on {expect['placement.broker']}")
    summary = "; ".join(dict.fromkeys(parts)) or "load statistics as Pulsar computes them"
    return f"Pulsar's {cls}.{method} ({steps} step{'s' if steps > 1 else ''}): {summary}."


def write(name: str, source: str, scenarios: list[dict[str, Any]]) -> None:
    """One fixture per scenario (``<Class>.<method>.json``); distinct snapshots stored once (``@s0``).

    AvgShedder placement steps expect the bound broker only for bundles the preceding shed
    steps unloaded (as Pulsar's test checks only those); the set comes from running the steps.
    """
    from brokerlb.loadbalance.planner import Planner

    HERE.mkdir(parents=True, exist_ok=True)
    for scenario in scenarios:
        planner = Planner()
        unloaded: set[str] = set()
        snapshots: dict[str, Any] = {}
        requests, expects = [], []
        for step in scenario["steps"]:
            request = dict(step["request"])
            answer = planner.run(dict(request))
            text = json.dumps(request["snapshot"], sort_keys=True)
            ref = next((k for k, v in snapshots.items() if json.dumps(v, sort_keys=True) == text), None)
            if ref is None:
                ref = f"s{len(snapshots)}"
                snapshots[ref] = request["snapshot"]
            request["snapshot"] = f"@{ref}"
            requests.append(request)
            expects.append(_expectation(step["expect"], unloaded))
            if answer["op"] == "shed":
                unloaded |= {u["bundle"] for u in answer["unload"] if u["label"] == "Success"}
        method = scenario["name"].split(" ")[0]
        source_method = method.replace("DisabledShedding", "")
        description = scenario.get("description") or _describe(name, method, scenario, expects)
        doc = {
            "source": f"{source}#{source_method}",
            "description": description,
            "snapshots": snapshots,
            "requests": requests,
            "expect": expects,
        }
        text = json.dumps(doc, indent=1)
        if len(text) > 100_000:  # big clusters: compact, to keep the repository small
            text = json.dumps(doc, separators=(",", ":"))
        (HERE / f"{name}.{method}.json").write_text(text + "\n")


def shed(snapshot: dict[str, Any], strategy: str, expect: dict[str, Any], **extra: Any) -> dict[str, Any]:
    request = {"op": "shed", "strategy": strategy, "raw": True, "snapshot": snapshot, **extra}
    return {"request": request, "expect": expect}


# --------------------------------------------------------------------------- modular helpers


def usage(used: float, limit: float) -> dict[str, float]:
    return {"usage": float(used), "limit": float(limit)}


def short_term(
    tput_in: float = 0.0,
    tput_out: float = 0.0,
    rate_in: float = 0.0,
    rate_out: float = 0.0,
    num_samples: int = 0,
) -> dict[str, Any]:
    """Pulsar's ``new BundleData()`` with a ``TimeAverageMessageData`` short-term window set."""
    window = {
        "maxSamples": 10,
        "numSamples": num_samples,
        "msgThroughputIn": tput_in,
        "msgThroughputOut": tput_out,
        "msgRateIn": rate_in,
        "msgRateOut": rate_out,
    }
    return {"shortTermData": window, "longTermData": {"maxSamples": 1000, "numSamples": 0}, "topics": 0}


def multi_bundle_cluster(cpu_mem: bool, recently: dict[str, int] | None = None) -> dict[str, Any]:
    """OverloadShedderTest/ThresholdShedderTest ``testBrokerWithMultipleBundles`` set-up."""
    broker1: dict[str, Any] = {
        "bandwidthIn": usage(999, 1000),
        "bandwidthOut": usage(999, 1000),
        "bundles": [],
    }
    if cpu_mem:
        broker1.update(cpu=usage(1000, 100), memory=usage(5000, 100), directMemory=usage(5000, 100))
    other: dict[str, Any] = {"bundles": []}
    bundle_data: dict[str, Any] = {}
    total = 0.0
    for i in range(1, 11):
        tput = float(i * MB)
        broker1["bundles"].append(f"bundle-{i}")
        bundle_data[f"bundle-{i}"] = short_term(tput, tput)
        bundle_data[f"another-broker-bundle-{10 + i}"] = short_term(tput, tput)
        other["bundles"].append(f"another-broker-bundle-{10 + i}")
        total += tput
    broker1.update(msgThroughputIn=total, msgThroughputOut=total)
    return {
        "now": NOW,
        "brokers": {"broker-1": {"localData": broker1}, "another-broker": {"localData": other}},
        "bundleData": bundle_data,
        "recentlyUnloadedBundles": recently or {},
    }


def modular_shedder_scenarios(
    strategy: str, expected_multi: list[str], expected_recent: list[str], not_overloaded: dict[str, Any]
) -> list[dict[str, Any]]:
    single = {"bandwidthIn": usage(999, 1000), "bandwidthOut": usage(999, 1000), "bundles": ["bundle-1"]}
    return [
        {"name": "testNoBrokers", "steps": [shed({"now": NOW}, strategy, {"unloads": []})]},
        {
            "name": "testBrokersWithNoBundles",
            "steps": [
                shed(
                    {
                        "now": NOW,
                        "brokers": {
                            "broker-1": {
                                "localData": {
                                    "bandwidthIn": usage(999, 1000),
                                    "bandwidthOut": usage(999, 1000),
                                }
                            }
                        },
                    },
                    strategy,
                    {"unloads": []},
                )
            ],
        },
        {
            "name": not_overloaded["name"],
            "steps": [
                shed(
                    {
                        "now": NOW,
                        "brokers": {"broker-1": {"localData": not_overloaded["localData"]}},
                        "bundleData": {"bundle-1": short_term(1000, 1000)},
                    },
                    strategy,
                    {"unloads": []},
                )
            ],
        },
        {
            "name": "testBrokerWithSingleBundle",
            "steps": [
                shed(
                    {
                        "now": NOW,
                        "brokers": {"broker-1": {"localData": single}},
                        "bundleData": {"bundle-1": short_term(1000, 1000)},
                    },
                    strategy,
                    {"unloads": []},
                )
            ],
        },
        {
            "name": "testBrokerWithMultipleBundles",
            "steps": [
                shed(
                    multi_bundle_cluster(cpu_mem=strategy.endswith("ThresholdShedder")),
                    strategy,
                    {
                        "unloadsInOrder": [["broker-1", b, None] for b in expected_multi],
                        "reason": "Overloaded",
                    },
                )
            ],
        },
        {
            "name": "testFilterRecentlyUnloaded",
            "steps": [
                shed(
                    multi_bundle_cluster(False, {"bundle-10": 1, "bundle-9": 1}),
                    strategy,
                    {"unloadsInOrder": [["broker-1", b, None] for b in expected_recent]},
                )
            ],
        },
    ]


def build_overload() -> None:
    write(
        "OverloadShedderTest",
        f"{TESTS}/impl/OverloadShedderTest.java",
        modular_shedder_scenarios(
            f"{IMPL}.OverloadShedder",
            ["bundle-10", "bundle-9"],
            ["bundle-8", "bundle-7"],
            {
                "name": "testBrokerNotOverloaded",
                "localData": {
                    "bandwidthIn": usage(500, 1000),
                    "bandwidthOut": usage(500, 1000),
                    "bundles": ["bundle-1"],
                },
            },
        ),
    )


def build_threshold() -> None:
    write(
        "ThresholdShedderTest",
        f"{TESTS}/impl/ThresholdShedderTest.java",
        modular_shedder_scenarios(
            f"{IMPL}.ThresholdShedder",
            ["bundle-10", "bundle-9", "bundle-8"],
            ["bundle-8", "bundle-7", "bundle-6", "bundle-5"],
            {
                "name": "testBrokerNotReachThreshold",
                "localData": {
                    "cpu": usage(1000, 100),
                    "memory": usage(5000, 100),
                    "directMemory": usage(5000, 100),
                    "bandwidthIn": usage(500, 1000),
                    "bandwidthOut": usage(500, 1000),
                    "bundles": ["bundle-1"],
                },
            },
        ),
    )


def build_uniform() -> None:
    def cluster(num: int, same: bool) -> dict[str, Any]:
        broker1: dict[str, Any] = {"bundles": []}
        bundle_data = {}
        total = 0.0
        for i in range(1, num + 1):
            tput = float(MB if same else i * MB)
            broker1["bundles"].append(f"bundle-{i}")
            bundle_data[f"bundle-{i}"] = short_term(tput, tput)
            total += tput
        broker1.update(msgThroughputIn=total, msgThroughputOut=total)
        return {
            "now": NOW,
            "brokers": {"broker-1": {"localData": broker1}, "broker2": {"localData": {}}},
            "bundleData": bundle_data,
        }

    def rate_and_tput(
        brokers: dict[str, tuple[float, float, list[tuple[float, float]]]], config: dict[str, Any]
    ) -> dict[str, Any]:
        """Brokers with ``msgRateIn`` / ``msgThroughputIn`` and bundles of ``(rateIn, tputIn)``."""
        snapshot: dict[str, Any] = {"now": NOW, "config": config, "brokers": {}, "bundleData": {}}
        for name, (rate, tput, bundles) in brokers.items():
            names = [f"{name}-bundle-{i}" for i in range(len(bundles))]
            local = {"msgRateIn": rate, "msgThroughputIn": tput, "bundles": names}
            snapshot["brokers"][name] = {"localData": local}
            for bundle, (bundle_rate, bundle_tput) in zip(names, bundles, strict=True):
                snapshot["bundleData"][bundle] = short_term(tput_in=bundle_tput, rate_in=bundle_rate)
        return snapshot

    def thresholds(rate: float, tput: float) -> dict[str, Any]:
        return {
            "loadBalancerMsgRateDifferenceShedderThreshold": rate,
            "loadBalancerMsgThroughputMultiplierDifferenceShedderThreshold": tput,
        }

    strategy = f"{IMPL}.UniformLoadShedder"
    max_two = cluster(20, True)
    max_two["config"] = {"maxUnloadBundleNumPerShedding": 2}
    # testOverloadBrokerSelect: five brokers, five equal bundles each
    rates = [50000, 60000, 70000, 10000, 20000]
    tputs = [50 * MB, 60 * MB, 70 * MB, 80 * MB, 10 * MB]
    select = {f"broker{i}": (rates[i], tputs[i], [(rates[i] / 5, tputs[i] / 5)] * 5) for i in range(5)}
    select_conf = {"maxUnloadBundleNumPerShedding": 1, "maxUnloadPercentage": 0.5}
    # testFilterOutNonTrafficBundlesForUnloading: the busy broker's idle bundles never move
    idle = {
        "broker0": (10_000, 10 * MB, [(10_000, 10 * MB)]),
        "broker1": (
            100_000,
            100 * MB,
            [(60_000, 60 * MB), (20_000, 20 * MB), (20_000, 20 * MB), (0, 0), (0, 0)],
        ),
    }
    idle_conf = {"maxUnloadBundleNumPerShedding": 5, "maxUnloadPercentage": 0.5}
    two_twenties = [["broker1", "broker1-bundle-1", None], ["broker1", "broker1-bundle-2", None]]
    write(
        "UniformLoadShedderTest",
        f"{TESTS}/impl/UniformLoadShedderTest.java",
        [
            {"name": "testMaxUnloadBundleNumPerShedding", "steps": [shed(max_two, strategy, {"count": 2})]},
            {
                "name": "testBrokerWithMultipleBundles",
                "steps": [shed(cluster(10, False), strategy, {"countAtLeast": 1})],
            },
            {
                "name": "testOverloadBrokerSelect",
                "description": (
                    "Pulsar's UniformLoadShedderTest.testOverloadBrokerSelect (3 steps): by message rate "
                    "the busiest-by-rate broker2 sheds one bundle; by throughput broker3; with both "
                    "thresholds on, the message rate wins (broker2)."
                ),
                "steps": [
                    shed(
                        rate_and_tput(select, {**select_conf, **thresholds(50, 0)}),
                        strategy,
                        {"count": 1, "brokers": ["broker2"]},
                    ),
                    shed(
                        rate_and_tput(select, {**select_conf, **thresholds(0, 2)}),
                        strategy,
                        {"count": 1, "brokers": ["broker3"]},
                    ),
                    shed(
                        rate_and_tput(select, {**select_conf, **thresholds(50, 2)}),
                        strategy,
                        {"count": 1, "brokers": ["broker2"]},
                    ),
                ],
            },
            {
                "name": "testFilterOutNonTrafficBundlesForUnloading",
                "description": (
                    "Pulsar's UniformLoadShedderTest.testFilterOutNonTrafficBundlesForUnloading (2 steps): "
                    "brokers at 10,000 and 100,000 msg/s (10 and 100 MB/s), the busy broker's bundles "
                    "at 60,000 / 20,000 / 20,000 / 0 / 0 msg/s; maxUnloadPercentage 0.5 -> need 45,000: "
                    "exactly the two 20,000 bundles move (60,000 exceeds need + 1,000; the idle "
                    "bundles are no candidates), by message rate and by throughput alike."
                ),
                "steps": [
                    shed(
                        rate_and_tput(idle, {**idle_conf, **thresholds(50, 0)}),
                        strategy,
                        {"unloads": two_twenties},
                    ),
                    shed(
                        rate_and_tput(idle, {**idle_conf, **thresholds(0, 2)}),
                        strategy,
                        {"unloads": two_twenties},
                    ),
                ],
            },
        ],
    )


def build_avg() -> None:
    strategy = f"{IMPL}.AvgShedder"

    def broker(cpu: float, rate: float, bundles: list[str] = ()) -> dict[str, Any]:
        local = {
            "cpu": usage(cpu, 100),
            "memory": usage(0, 0),
            "bandwidthIn": usage(0, 0),
            "bandwidthOut": usage(0, 0),
            "msgRateIn": rate,
            "msgRateOut": rate,
            "bundles": list(bundles),
        }
        return {"localData": local, "timeAverageData": {}}

    def bundles(prefix: str, offset: int = 0) -> dict[str, Any]:
        return {
            f"{prefix}{i}": short_term(rate_in=450, rate_out=450, num_samples=min(i + offset, 10))
            for i in range(11)
        }

    def cluster(cfg: dict[str, Any], specs: dict[str, tuple[float, float, str | None]]) -> dict[str, Any]:
        brokers, data = {}, {}
        for name, (cpu, rate, prefix) in specs.items():
            names = [f"{prefix}{i}" for i in range(11)] if prefix else []
            brokers[name] = broker(cpu, rate, names)
            if prefix:
                data.update(bundles(prefix))
        return {
            "now": NOW,
            "config": {"maxUnloadPercentage": 0.5, **cfg},
            "brokers": brokers,
            "bundleData": data,
        }

    def place_steps(snapshot: dict[str, Any], prefix: str, count: int, broker: str) -> list[dict[str, Any]]:
        return [
            {
                "request": {
                    "op": "place",
                    "strategy": strategy,
                    "raw": True,
                    "session": "s",
                    "bundle": f"{prefix}{i}",
                    "snapshot": snapshot,
                },
                "expect": {"placement": broker, "ifUnloaded": f"{prefix}{i}"},
            }
            for i in range(count)
        ]

    high = cluster(
        {"loadBalancerAvgShedderHighThreshold": 40, "loadBalancerAvgShedderHitCountHighThreshold": 2},
        {"broker1": (80, 10000, "bundle-"), "broker2": (30, 1000, None), "broker3": (50, 5000, None)},
    )
    low = cluster(
        {"loadBalancerAvgShedderLowThreshold": 20, "loadBalancerAvgShedderHitCountLowThreshold": 6},
        {"broker1": (60, 10000, "bundle-"), "broker2": (40, 1000, None), "broker3": (50, 5000, None)},
    )
    pairs = cluster(
        {"loadBalancerAvgShedderHighThreshold": 40, "loadBalancerAvgShedderHitCountHighThreshold": 2},
        {
            "broker1": (80, 10000, "bundle1-"),
            "broker2": (30, 1000, None),
            "broker3": (75, 10000, "bundle3-"),
            "broker4": (35, 1000, None),
        },
    )
    session = {"session": "s"}
    write(
        "AvgShedderTest",
        f"{TESTS}/impl/AvgShedderTest.java",
        [
            {
                "name": "testHitHighThreshold",
                "steps": [
                    shed(high, strategy, {"count": 0}, **session),
                    shed(
                        high,
                        strategy,
                        {"count": 10, "brokers": ["broker1"], "reason": "Overloaded"},
                        **session,
                    ),
                    *place_steps(high, "bundle-", 11, "broker2"),
                ],
            },
            {
                "name": "testHitLowThreshold",
                "steps": [
                    *[shed(low, strategy, {"count": 0}, **session) for _ in range(5)],
                    shed(low, strategy, {"count": 10, "brokers": ["broker1"]}, **session),
                    *place_steps(low, "bundle-", 11, "broker2"),
                ],
            },
            {
                "name": "testSheddingMultiplePairs",
                "steps": [
                    shed(pairs, strategy, {"count": 0}, **session),
                    shed(
                        pairs, strategy, {"count": 20, "perBroker": {"broker1": 10, "broker3": 10}}, **session
                    ),
                    *place_steps(pairs, "bundle1-", 11, "broker2"),
                    *place_steps(pairs, "bundle3-", 11, "broker4"),
                ],
            },
        ],
    )


# --------------------------------------------------------------------------- TransferShedder helpers


def top_bundles(prefix: str, *loads: float) -> TopBundlesLoadData:
    """``getTopBundlesLoad``: bundles with the given ``msgThroughputOut``, through TopKBundles."""
    if len(loads) == 5:
        ranges = [
            "0x00000000_0x1FFFFFFF",
            "0x1FFFFFFF_0x2FFFFFFF",
            "0x2FFFFFFF_0x3FFFFFFF",
            "0x3FFFFFFF_0x4FFFFFFF",
            "0x4FFFFFFF_0x5FFFFFFF",
        ]
    else:
        ranges = ["0x00000000_0x0FFFFFFF", "0x0FFFFFFF_0xFFFFFFFF"]
    stats = {
        f"{prefix}/{r}": NamespaceBundleStats(msg_throughput_out=float(load))
        for r, load in zip(ranges, loads, strict=True)
    }
    return TopBundlesLoadData.of(stats, 5 if len(loads) == 5 else 2)


def cpu_load(load: float, top: TopBundlesLoadData | None) -> BrokerLoadData:
    """``getCpuLoad``: one update with cpu ``load`` of 100; throughput out = the top bundles' sum."""
    data = BrokerLoadData()
    usage_ = SystemResourceUsage(
        cpu=ResourceUsage(float(load), 100.0),
        memory=ResourceUsage(0.0, 100.0),
        direct_memory=ResourceUsage(0.0, 100.0),
        bandwidth_in=ResourceUsage(0.0, 100.0),
        bandwidth_out=ResourceUsage(0.0, 100.0),
    )
    out = sum(e.stats.msg_throughput_out for e in top.top_bundles_load_data) if top else 2.0
    data.update(usage_, 1.0, out, 3.0, 4.0, 5, 6, now_ms=NOW)
    return data


EXT_CONFIG = {
    "loadManagerClassName": f"{EXT}.ExtensibleLoadManagerImpl",
    "loadBalancerDebugModeEnabled": True,
    "loadBalancerSheddingBundlesWithPoliciesEnabled": False,
    "loadBalancerSheddingConditionHitCountThreshold": 0,
}


def ext_snapshot(
    loads: dict[str, BrokerLoadData],
    tops: dict[str, TopBundlesLoadData],
    available: list[str] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    config = dict(EXT_CONFIG)
    config.update(extra.pop("config", {}))
    doc = {
        "now": NOW,
        "config": config,
        "brokerLoadData": {b: d.to_json() for b, d in loads.items()},
        "topBundlesLoadData": {b: [e.to_json() for e in t.top_bundles_load_data] for b, t in tops.items()},
        "brokerLookupData": {
            b: {
                "persistentTopicsEnabled": True,
                "nonPersistentTopicsEnabled": True,
                "loadManagerClassName": f"{EXT}.ExtensibleLoadManagerImpl",
                "brokerVersion": "3.0.0",
            }
            for b in (available if available is not None else list(loads))
        },
    }
    doc.update(extra)
    return doc


SETUP = [
    ("broker1:8080", "my-tenant/my-namespaceA", 2, 1000000, 2000000),
    ("broker2:8080", "my-tenant/my-namespaceB", 4, 1000000, 3000000),
    ("broker3:8080", "my-tenant/my-namespaceC", 6, 2000000, 4000000),
    ("broker4:8080", "my-tenant/my-namespaceD", 80, 2000000, 6000000),
    ("broker5:8080", "my-tenant/my-namespaceE", 90, 2000000, 7000000),
]
SETUP_AVG, SETUP_STD = 0.36400000000000005, 0.3982762860126121
D1, E1 = "my-tenant/my-namespaceD/0x00000000_0x0FFFFFFF", "my-tenant/my-namespaceE/0x00000000_0x0FFFFFFF"


def setup_context(
    cpu: dict[str, float] | None = None,
    top_overrides: dict[str, TopBundlesLoadData] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """``setupContext()`` (loads pushed after the top bundles), with later pushes applied on top."""
    tops = {b: top_bundles(ns, l1, l2) for b, ns, _, l1, l2 in SETUP}
    loads = {b: cpu_load(c, tops[b]) for b, _, c, _, _ in SETUP}
    for broker, value in (cpu or {}).items():
        loads[broker] = cpu_load(value, tops[broker])
    tops.update(top_overrides or {})
    return ext_snapshot(loads, tops, **extra)


def two_broker(tops: dict[str, TopBundlesLoadData], cpus: dict[str, float], **extra: Any) -> dict[str, Any]:
    loads = {b: cpu_load(c, tops.get(b)) for b, c in cpus.items()}
    return ext_snapshot(loads, tops, **extra)


def skewed(n: int, over: bool) -> dict[str, Any]:
    tops, loads = {}, {}
    for i in range(n):
        name = f"broker{i}:8080"
        if over:
            hot = i == n - 1
            tops[name] = top_bundles(
                f"my-tenant/my-namespace{i}", *((30_000_000, 70_000_000) if hot else (300_000, 700_000))
            )
            loads[name] = cpu_load(100 if hot else 1, tops[name])
        else:
            cold = i == n - 1
            tops[name] = top_bundles(
                f"my-tenant/my-namespace{i}", *((300_000, 700_000) if cold else (30_000_000, 70_000_000))
            )
            loads[name] = cpu_load(1 if cold else (99 if i == n - 2 else 98), tops[name])
    return ext_snapshot(loads, tops)


def ts(snapshot: dict[str, Any], expect: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return shed(snapshot, f"{EXT}.scheduler.TransferShedder", expect, **extra)


def setup_expect(
    *unloads: tuple[str, str, str | None],
    reason: str = "Overloaded",
    avg: float = SETUP_AVG,
    std: float = SETUP_STD,
) -> dict[str, Any]:
    return {
        "unloads": [list(u) for u in unloads],
        "reason": reason,
        "stats": {"loadAvg": avg, "loadStd": std},
    }


def build_transfer() -> None:
    five = [b for b, *_ in SETUP]
    empty_tops = ext_snapshot({b: cpu_load(c, None) for b, _, c, _, _ in SETUP}, {})
    outdated = setup_context()
    for data in outdated["brokerLoadData"].values():
        data["updatedAt"] = 0
    no_owner = setup_context(
        ownership={
            f"{ns}/{r}": "someone-else:8080"
            for _, ns, *_ in SETUP
            for r in ("0x00000000_0x0FFFFFFF", "0x0FFFFFFF_0xFFFFFFFF")
        }
    )
    recent_bundles = setup_context(
        recentlyUnloadedBundles={
            b: NOW
            for b in (
                E1,
                "my-tenant/my-namespaceE/0x0FFFFFFF_0xFFFFFFFF",
                D1,
                "my-tenant/my-namespaceD/0x0FFFFFFF_0xFFFFFFFF",
            )
        }
    )
    policies = setup_context(
        isolationPolicies={
            "all": {
                "namespaces": ["my-tenant/.*"],
                "primary": [".*"],
                "secondary": [],
                "auto_failover_policy": {
                    "policy_type": "min_available",
                    "parameters": {"min_limit": "1", "usage_threshold": "100"},
                },
            }
        }
    )
    isolation_e = setup_context(
        config={"loadBalancerSheddingBundlesWithPoliciesEnabled": True},
        isolationPolicies={
            "e-on-broker5": {
                "namespaces": ["my-tenant/my-namespaceE"],
                "primary": ["broker5:8080"],
                "secondary": [],
                "auto_failover_policy": {
                    "policy_type": "min_available",
                    "parameters": {"min_limit": "1", "usage_threshold": "100"},
                },
            }
        },
    )
    isolation_e_no_transfer = json.loads(json.dumps(isolation_e))
    isolation_e_no_transfer["config"]["loadBalancerTransferEnabled"] = False
    policies_no_transfer = json.loads(json.dumps(policies))
    policies_no_transfer["config"]["loadBalancerTransferEnabled"] = False
    target_std = ext_snapshot(
        {
            "broker1:8080": cpu_load(10, None),
            "broker2:8080": cpu_load(20, None),
            "broker3:8080": cpu_load(30, None),
        },
        {
            "broker1:8080": top_bundles("my-tenant/my-namespaceA", 30, 30),
            "broker2:8080": top_bundles("my-tenant/my-namespaceB", 40, 40),
            "broker3:8080": top_bundles("my-tenant/my-namespaceC", 50, 50),
        },
    )
    single_tops = setup_context(
        top_overrides={
            b: TopBundlesLoadData.of(
                {f"{ns}/0x00000000_0x0FFFFFFF": NamespaceBundleStats(msg_throughput_out=float(v))}, 2
            )
            for (b, ns, *_), v in zip(SETUP, (1, 2, 6, 10, 70), strict=True)
        }
    )
    zero = setup_context()
    for entries in zero["topBundlesLoadData"].values():
        for entry in entries:
            entry["stats"]["msgThroughputIn"] = 0.0
            entry["stats"]["msgThroughputOut"] = 0.0
    big = setup_context(
        top_overrides={
            "broker4:8080": top_bundles("my-tenant/my-namespaceD", 1000000000, 1000000000),
            "broker5:8080": top_bundles("my-tenant/my-namespaceE", 1000000000, 1000000000),
        }
    )
    five_a = top_bundles("my-tenant/my-namespaceA", 1000000, 2000000, 3000000, 4000000, 5000000)
    greater = two_broker(
        {
            "broker1:8080": five_a,
            "broker2:8080": top_bundles(
                "my-tenant/my-namespaceB", 100000000, 180000000, 220000000, 250000000, 250000000
            ),
        },
        {"broker1:8080": 10, "broker2:8080": 1000},
    )
    skip_after_split = two_broker(
        {
            "broker1:8080": top_bundles("my-tenant/my-namespaceA", 1, 500000000),
            "broker2:8080": top_bundles("my-tenant/my-namespaceB", 500000000, 500000000),
        },
        {"broker1:8080": 50, "broker2:8080": 100},
        config={"loadBalancerBrokerLoadTargetStd": 0.20},
    )
    less_after_split = two_broker(
        {
            "broker1:8080": five_a,
            "broker2:8080": top_bundles("my-tenant/my-namespaceB", 490000000, 510000000),
        },
        {"broker1:8080": 10, "broker2:8080": 1000},
    )
    greater_after_split = two_broker(
        {
            "broker1:8080": top_bundles("my-tenant/my-namespaceA", 2400000, 2400000),
            "broker2:8080": top_bundles("my-tenant/my-namespaceB", 5000000, 5000000),
        },
        {"broker1:8080": 48, "broker2:8080": 100},
    )
    low_traffic = setup_context(cpu={"broker4:8080": 55, "broker5:8080": 65})
    low_traffic["brokerLoadData"]["broker2:8080"]["msgThroughputEMA"] = 10.0
    lower_than_avg = setup_context(cpu={"broker2:8080": 3, "broker4:8080": 55, "broker5:8080": 65})
    hit_count = setup_context(config={"loadBalancerSheddingConditionHitCountThreshold": 3})
    remaining = setup_context(
        top_overrides={"broker5:8080": top_bundles("my-tenant/my-namespaceE", 2000000, 3000000)}
    )

    def variance(cpus: list[int]) -> dict[str, Any]:
        return ext_snapshot({f"broker{i}:8080": cpu_load(c, None) for i, c in enumerate(cpus)}, {})

    random.seed(20240101)
    random_steps = []
    for _ in range(5):
        tops, loads = {}, {}
        for i in range(10):
            load = random.randrange(1000)
            bundle_load = random.randrange(load + 1)
            tops[f"broker{i}:8080"] = top_bundles(
                f"my-tenant/my-namespace{i}", bundle_load, load - bundle_load
            )
            loads[f"broker{i}:8080"] = cpu_load(load, tops[f"broker{i}:8080"])
        random_steps.append(ts(ext_snapshot(loads, tops), {"stdAfterAtMostTargetOrExhausted": True}))

    write(
        "TransferShedderTest",
        f"{TESTS}/extensions/scheduler/TransferShedderTest.java",
        [
            {
                "name": "testEmptyBrokerLoadData",
                "steps": [ts(ext_snapshot({}, {}, available=five), {"skip": "NoBrokers"})],
            },
            {
                "name": "testNoOwnerLoadData",
                "steps": [
                    ts(no_owner, {"skip": "NoBundles", "stats": {"loadAvg": SETUP_AVG, "loadStd": SETUP_STD}})
                ],
            },
            {
                "name": "testEmptyTopBundlesLoadData",
                "steps": [
                    ts(
                        empty_tops,
                        {"skip": "NoLoadData", "stats": {"loadAvg": SETUP_AVG, "loadStd": SETUP_STD}},
                    )
                ],
            },
            {
                "name": "testOutDatedLoadData",
                "steps": [
                    ts(setup_context(), {"count": 2}, session="s"),
                    ts(outdated, {"skip": "OutDatedData"}, session="s"),
                ],
            },
            {
                "name": "testRecentlyUnloadedBrokers",
                "steps": [
                    ts(
                        setup_context(recentlyUnloadedBrokers={"broker1:8080": NOW - 1800 * 1001}),
                        setup_expect(
                            ("broker5:8080", E1, "broker1:8080"), ("broker4:8080", D1, "broker2:8080")
                        )
                        | {"cooledDownBrokers": ["broker1:8080"]},
                        session="s",
                    ),
                    ts(
                        setup_context(recentlyUnloadedBrokers={"broker1:8080": NOW}),
                        {"skip": "CoolDown"},
                        session="s",
                    ),
                ],
            },
            {
                "name": "testRecentlyUnloadedBundles",
                "steps": [
                    ts(
                        recent_bundles,
                        setup_expect(
                            ("broker3:8080", "my-tenant/my-namespaceC/0x00000000_0x0FFFFFFF", "broker1:8080")
                        ),
                    )
                ],
            },
            {
                "name": "testBundlesWithIsolationPolicies",
                "description": (
                    "namespaceE may only live on broker5 (isolation policy, shedding such bundles enabled): "
                    "broker5 cannot give bundleE1 to broker1, so broker4 is shed instead; with transfers "
                    "disabled the same bundle is unloaded without a destination."
                ),
                "steps": [
                    ts(isolation_e, setup_expect(("broker4:8080", D1, "broker1:8080")), session="s"),
                    ts(isolation_e_no_transfer, setup_expect(("broker4:8080", D1, None)), session="s"),
                ],
            },
            {
                "name": "testBundlesWithIsolationPoliciesDisabledShedding",
                "description": (
                    "Every namespace has an isolation policy and loadBalancerSheddingBundlesWithPoliciesEnabled "
                    "is false: no bundle may move (NoBundles), with or without transfers (third part of "
                    "Pulsar's testBundlesWithIsolationPolicies)."
                ),
                "steps": [
                    ts(
                        policies,
                        {"skip": "NoBundles", "stats": {"loadAvg": SETUP_AVG, "loadStd": SETUP_STD}},
                        session="s",
                    ),
                    ts(policies_no_transfer, {"skip": "NoBundles"}, session="s"),
                ],
            },
            {
                "name": "testTargetStd",
                "steps": [
                    ts(
                        target_std,
                        {
                            "skip": "HitCount",
                            "stats": {"loadAvg": 0.2000000063578288, "loadStd": 0.08164966587949089},
                        },
                    )
                ],
            },
            {
                "name": "testSingleTopBundlesLoadData",
                "steps": [
                    ts(
                        single_tops,
                        {"skip": "NoBundles", "stats": {"loadAvg": SETUP_AVG, "loadStd": SETUP_STD}},
                    )
                ],
            },
            {
                "name": "testBundleThroughputLargerThanOffloadThreshold",
                "steps": [
                    ts(
                        big,
                        setup_expect(
                            ("broker3:8080", "my-tenant/my-namespaceC/0x00000000_0x0FFFFFFF", "broker1:8080")
                        ),
                    )
                ],
            },
            {
                "name": "testZeroBundleThroughput",
                "steps": [
                    ts(zero, {"skip": "NoBundles", "stats": {"loadAvg": SETUP_AVG, "loadStd": SETUP_STD}})
                ],
            },
            {
                "name": "testTargetStdAfterTransfer",
                "steps": [
                    ts(
                        setup_context(cpu={"broker4:8080": 55, "broker5:8080": 65}),
                        setup_expect(
                            ("broker5:8080", E1, "broker1:8080"),
                            avg=0.26400000000000007,
                            std=0.27644891028904417,
                        ),
                    )
                ],
            },
            {
                "name": "testUnloadBundlesGreaterThanTargetThroughput",
                "steps": [
                    ts(
                        greater,
                        {
                            "unloads": [
                                ["broker2:8080", f"my-tenant/my-namespaceB/{r}", "broker1:8080"]
                                for r in (
                                    "0x00000000_0x1FFFFFFF",
                                    "0x1FFFFFFF_0x2FFFFFFF",
                                    "0x2FFFFFFF_0x3FFFFFFF",
                                )
                            ]
                            + [
                                ["broker1:8080", f"my-tenant/my-namespaceA/{r}", "broker2:8080"]
                                for r in (
                                    "0x00000000_0x1FFFFFFF",
                                    "0x1FFFFFFF_0x2FFFFFFF",
                                    "0x2FFFFFFF_0x3FFFFFFF",
                                    "0x3FFFFFFF_0x4FFFFFFF",
                                )
                            ],
                            "reason": "Overloaded",
                            "stats": {"loadAvg": 5.05, "loadStd": 4.95, "loadStdAfter": 0.050000004900021836},
                        },
                    )
                ],
            },
            {
                "name": "testSkipBundlesGreaterThanTargetThroughputAfterSplit",
                "steps": [ts(skip_after_split, {"skip": "NoBundles"})],
            },
            {
                "name": "testUnloadBundlesLessThanTargetThroughputAfterSplit",
                "steps": [
                    ts(
                        less_after_split,
                        {
                            "unloads": [
                                [
                                    "broker2:8080",
                                    "my-tenant/my-namespaceB/0x00000000_0x0FFFFFFF",
                                    "broker1:8080",
                                ]
                            ],
                            "stats": {"loadAvg": 5.05, "loadStd": 4.95, "loadStdAfter": 0.050000004900021836},
                        },
                    )
                ],
            },
            {
                "name": "testUnloadBundlesGreaterThanTargetThroughputAfterSplit",
                "steps": [
                    ts(
                        greater_after_split,
                        {
                            "count": 2,
                            "perBroker": {"broker1:8080": 1, "broker2:8080": 1},
                            "destinations": {"broker1:8080": "broker2:8080", "broker2:8080": "broker1:8080"},
                            "stats": {
                                "loadAvg": 0.74,
                                "loadStd": 0.26,
                                "loadStdAfter": 2.5809568279517847e-08,
                            },
                        },
                    )
                ],
            },
            {
                "name": "testMinBrokerWithLowTraffic",
                "steps": [
                    ts(
                        low_traffic,
                        {
                            "unloadsWithReason": [
                                ["broker5:8080", E1, "broker1:8080", "Overloaded"],
                                ["broker4:8080", D1, "broker2:8080", "Underloaded"],
                            ],
                            "stats": {"loadAvg": 0.26400000000000007, "loadStd": 0.27644891028904417},
                        },
                    )
                ],
            },
            {
                "name": "testMinBrokerWithLowerLoadThanAvg",
                "steps": [
                    ts(
                        lower_than_avg,
                        {
                            "unloadsWithReason": [
                                ["broker5:8080", E1, "broker1:8080", "Overloaded"],
                                ["broker4:8080", D1, "broker2:8080", "Underloaded"],
                            ],
                            "stats": {"loadAvg": 0.262, "loadStd": 0.2780935094532054},
                        },
                    )
                ],
            },
            {
                "name": "testMaxNumberOfTransfersPerShedderCycle",
                "steps": [
                    ts(
                        setup_context(config={"loadBalancerMaxNumberOfBrokerSheddingPerCycle": 10}),
                        setup_expect(
                            ("broker5:8080", E1, "broker1:8080"), ("broker4:8080", D1, "broker2:8080")
                        ),
                    )
                ],
            },
            {
                "name": "testLoadBalancerSheddingConditionHitCountThreshold",
                "steps": [
                    *[
                        ts(hit_count, {"skip": "HitCount", "stats": {"hitCount": i + 1}}, session="s")
                        for i in range(3)
                    ],
                    ts(
                        hit_count,
                        setup_expect(
                            ("broker5:8080", E1, "broker1:8080"), ("broker4:8080", D1, "broker2:8080")
                        ),
                        session="s",
                    ),
                ],
            },
            {
                "name": "testRemainingTopBundles",
                "steps": [
                    ts(
                        remaining,
                        setup_expect(
                            ("broker5:8080", E1, "broker1:8080"), ("broker4:8080", D1, "broker2:8080")
                        ),
                    )
                ],
            },
            {
                "name": "testLoadMoreThan100",
                "steps": [
                    ts(
                        setup_context(cpu={"broker4:8080": 200, "broker5:8080": 1000}),
                        setup_expect(
                            ("broker5:8080", E1, "broker1:8080"),
                            ("broker4:8080", D1, "broker2:8080"),
                            avg=2.4240000000000004,
                            std=3.8633332758124816,
                        )
                        | {
                            "stats": {
                                "loadAvg": 2.4240000000000004,
                                "loadStd": 3.8633332758124816,
                                "loadStdAfter": 2.781643776903451,
                            }
                        },
                    )
                ],
            },
            {"name": "testRandomLoad (seeded)", "steps": random_steps},
            {
                "name": "testOverloadOutlier",
                "steps": [
                    ts(
                        skewed(100, True),
                        {
                            "unloadsOneOf": [
                                [
                                    [
                                        "broker99:8080",
                                        "my-tenant/my-namespace99/0x00000000_0x0FFFFFFF",
                                        "broker52:8080",
                                    ]
                                ],
                                [
                                    [
                                        "broker99:8080",
                                        "my-tenant/my-namespace99/0x00000000_0x0FFFFFFF",
                                        "broker83:8080",
                                    ]
                                ],
                            ],
                            "reason": "Underloaded",
                            "statsApprox": {"loadAvg": 0.019900000000000008, "loadStd": 0.09850375627355534},
                        },
                    )
                ],
            },
            {
                "name": "testUnderloadOutlier",
                "steps": [
                    ts(
                        skewed(100, False),
                        {
                            "unloads": [
                                [
                                    "broker98:8080",
                                    "my-tenant/my-namespace98/0x00000000_0x0FFFFFFF",
                                    "broker99:8080",
                                ]
                            ],
                            "reason": "Underloaded",
                            "statsApprox": {"loadAvg": 0.9704000000000005, "loadStd": 0.09652895938523735},
                        },
                    )
                ],
            },
            {
                "name": "testHighVarianceLoadStats",
                "steps": [
                    ts(
                        variance([1] + [100] * 16),
                        {"stats": {"loadAvg": 0.9417647058823528, "loadStd": 0.23294117647058868}},
                    )
                ],
            },
            {
                "name": "testLowVarianceLoadStats",
                "steps": [
                    ts(
                        variance(list(range(390, 400))),
                        {"stats": {"loadAvg": 3.9449999999999994, "loadStd": 0.028722813232795824}},
                    )
                ],
            },
        ],
    )


if __name__ == "__main__":
    build_overload()
    build_threshold()
    build_uniform()
    build_avg()
    build_transfer()
