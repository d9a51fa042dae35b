import pickle
import textwrap

import pytest

from brokerlb.errors import InvalidScenarioError
from brokerlb.sim.loader import apply_settings, load_scenario, parse_scenario, scenario_to_dict
from brokerlb.sim.spec import AddBroker, FailBroker, HotTopic, NamespaceGrowth, SetConfig

MINIMAL = {
    "seed": 1,
    "duration": "1h",
    "brokers": [{"name": "b-{i}", "count": 2}],
    "namespaces": [{"name": "t/ns"}],
}


def scenario(**changes):
    data = {**MINIMAL, **changes}
    return parse_scenario(data, source="test.yaml")


def test_minimal_scenario_gets_defaults():
    s = scenario()
    assert s.seed == 1 and s.duration == 3600 and s.tick == 60 and s.cycles == 60
    assert [b.name for b in s.brokers] == ["b-1:8080", "b-2:8080"]
    assert s.namespaces[0].bundles == 4 and s.namespaces[0].topics == 100


def test_full_file(tmp_path):
    path = tmp_path / "full.yaml"
    path.write_text(
        textwrap.dedent("""\
        name: full
        description: every field
        seed: 7
        duration: 2h
        tick: 30s
        strategies: [OverloadShedder, ThresholdShedder]
        config: {loadBalancerSheddingGracePeriodMinutes: 10}
        timing: {unload: 100ms, transfer: 20ms, lookup: 1s, session_timeout: 20s}
        resources: {cpu_us_per_msg: 12, measurement_noise: 0.01}
        brokers:
          - {name: "broker-{i}", count: 3, cores: 4}
          - {name: big, cores: 16, nic_gbps: 25, version: 4.1.0}
        workload: {msg_rate: 20k, msg_size: 2KB, zipf: 1.1, diurnal: {amplitude: 0.4, peak: 12h}}
        namespaces:
          - {name: "t/ns-{i}", count: 2, bundles: 8, topics: 50, workload: {noise: 0.1}}
          - {name: t/grow, topics: 0, anti_affinity_group: g}
        events:
          - {at: 1h, type: add_broker, broker: {name: late, cores: 8}}
          - {at: 10m, type: fail_broker, broker: broker-2}
          - {at: 20m, type: hot_topic, namespace: t/ns-1, topic: 3, factor: 30, ramp: 5m}
          - {at: 0s, type: namespace_growth, namespace: t/grow, topics: 40, over: 1h}
          - {at: 90m, type: set_config, config: {loadBalancerSheddingEnabled: false}}
          - {at: 95m, type: restart_broker, broker: late, downtime: 2m}
        """)
    )
    s = load_scenario(path)
    assert s.name == "full" and s.tick == 30 and s.strategies == ("OverloadShedder", "ThresholdShedder")
    assert s.timing.session_timeout == 20 and s.resources.cpu_us_per_msg == 12
    assert [b.name for b in s.brokers][-1] == "big:8080" and s.brokers[-1].nic_gbps == 25
    ns1 = s.namespace("t/ns-1")
    assert ns1.workload.msg_size == 2000 and ns1.workload.zipf == 1.1 and ns1.workload.noise == 0.1
    assert ns1.workload.diurnal.amplitude == 0.4 and ns1.workload.diurnal.peak == 12 * 3600
    assert s.namespace("t/grow").anti_affinity_group == "g"
    kinds = [type(e) for e in s.events]  # sorted by time
    assert kinds[:3] == [NamespaceGrowth, FailBroker, HotTopic]
    assert isinstance(s.events[3], AddBroker) and s.events[3].broker.broker_id == "late:8080"
    assert isinstance(s.events[4], SetConfig)
    assert pickle.loads(pickle.dumps(s)) == s
    again = parse_scenario(scenario_to_dict(s), source="roundtrip")
    assert scenario_to_dict(again) == scenario_to_dict(s)


@pytest.mark.parametrize(
    "change, field, message",
    [
        ({"seed": None}, "seed", "required"),
        ({"seed": "x"}, "seed", "not a number"),
        ({"duration": "soon"}, "duration", "not a duration"),
        ({"tick": "2h"}, "tick", "longer than the duration"),
        ({"brokers": []}, "brokers", "non-empty list"),
        ({"brokers": [{"name": "b", "cores": 0}]}, "brokers[0].cores", "must be > 0"),
        ({"brokers": [{"name": "b", "count": 2}]}, "brokers[0].name", "put {i} in it"),
        ({"brokers": [{"name": "b"}, {"name": "b"}]}, "brokers", "declared twice"),
        ({"namespaces": [{"name": "no-slash"}]}, "namespaces[0].name", "Invalid namespace"),
        (
            {"namespaces": [{"name": "t/ns", "workload": {"zipff": 1}}]},
            "namespaces[0].workload.zipff",
            "did you mean zipf",
        ),
        (
            {"namespaces": [{"name": "t/ns", "workload": {"diurnal": {"amplitude": 2}}}]},
            "namespaces[0].workload.diurnal.amplitude",
            "between 0 and 1",
        ),
        ({"events": [{"at": "1m", "type": "explode"}]}, "events[0].type", "unknown or missing event type"),
        (
            {"events": [{"at": "1m", "type": "fail_broker", "broker": "ghost"}]},
            "events[0].broker",
            "no broker",
        ),
        ({"events": [{"type": "fail_broker", "broker": "b-1"}]}, "events[0].at", "required"),
        ({"events": [{"at": "2h", "type": "fail_broker", "broker": "b-1"}]}, "events", "after the end"),
        (
            {"events": [{"at": "1m", "type": "hot_topic", "namespace": "t/other"}]},
            "events[0].namespace",
            "not declared",
        ),
        (
            {"config": {"loadBalancerSheddingIntervalMinutes": -1}},
            "config",
            "loadBalancerSheddingIntervalMinutes",
        ),
        ({"config": {"noSuchKey": 1}}, "config", "Unknown config key"),
        (
            {
                "events": [
                    {"at": "1m", "type": "set_config", "config": {"loadBalancerSheddingEnabled": "maybe"}}
                ]
            },
            "events[0].config",
            "loadBalancerSheddingEnabled",
        ),
        ({"surprise": 1}, "surprise", "unknown key"),
    ],
)
def test_errors_name_file_and_field(change, field, message):
    with pytest.raises(InvalidScenarioError) as info:
        scenario(**change)
    assert info.value.field == field
    assert message in str(info.value)
    assert str(info.value).startswith("scenario test.yaml: ")


def test_broken_yaml_and_missing_file(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("seed: [1,\n")
    with pytest.raises(InvalidScenarioError, match="not valid YAML at line"):
        load_scenario(bad)
    with pytest.raises(InvalidScenarioError, match="cannot read the file"):
        load_scenario(tmp_path / "missing.yaml")
    top = tmp_path / "list.yaml"
    top.write_text("- 1\n")
    with pytest.raises(InvalidScenarioError, match="expected a mapping"):
        load_scenario(top)


def test_settings_change_scenario_and_config():
    s = apply_settings(
        scenario(),
        {
            "seed": "9",
            "duration": "30m",
            "timing.unload": "2s",
            "resources.base_cpu": "5",
            "loadBalancerSheddingGracePeriodMinutes": "5",
        },
    )
    assert s.seed == 9 and s.duration == 1800 and s.timing.unload == 2 and s.resources.base_cpu == 5
    assert s.config["loadBalancerSheddingGracePeriodMinutes"] == "5"
    with pytest.raises(InvalidScenarioError, match="unknown setting 'timing.nope'"):
        apply_settings(s, {"timing.nope": 1})
    with pytest.raises(InvalidScenarioError, match="Unknown config key"):
        apply_settings(s, {"loadBalancerNope": 1})
