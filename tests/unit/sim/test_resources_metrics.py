import numpy as np
import pytest

from brokerlb.sim.metrics import lower_bound
from brokerlb.sim.resources import Capacities, ResourceModel
from brokerlb.sim.spec import BrokerSpec, ResourceModelSpec

SPEC = ResourceModelSpec(
    cpu_us_per_msg=10, cpu_us_per_mb=0, base_cpu=0, direct_memory_base_mb=0, direct_memory_mb_per_mbps=0
)


def test_heterogeneous_capacity_and_load():
    caps = Capacities.of([BrokerSpec("a", cores=8), BrokerSpec("b", cores=16, nic_gbps=1)])
    model = ResourceModel(SPEC)
    up = np.array([True, True])
    rate = np.array([400_000.0, 400_000.0])  # 4 cores each
    tput_in = np.array([0.0, 62_500_000.0])  # 500 Mbit/s
    usage = model.broker_usage(caps, rate, tput_in, np.zeros(2), up)
    assert list(usage.cpu) == [400.0, 400.0]
    assert usage.bandwidth_in[1] == pytest.approx(500_000)
    assert list(usage.load(caps, SPEC)) == pytest.approx([0.5, 0.5])  # cpu 50% vs NIC 50%
    down = model.broker_usage(caps, rate, tput_in, np.zeros(2), np.array([True, False]))
    assert down.cpu[1] == 0 and down.bandwidth_in[1] == 0


def test_measurement_noise_is_seeded_and_optional():
    spec = ResourceModelSpec(measurement_noise=0.1)
    caps = Capacities.of([BrokerSpec("a")] * 3)
    args = (caps, np.full(3, 1e5), np.zeros(3), np.zeros(3), np.ones(3, dtype=bool))
    a = ResourceModel(spec, np.random.default_rng(1)).broker_usage(*args)
    b = ResourceModel(spec, np.random.default_rng(1)).broker_usage(*args)
    clean = ResourceModel(spec, np.random.default_rng(1)).broker_usage(*args, measured=False)
    assert np.array_equal(a.cpu, b.cpu) and not np.array_equal(a.cpu, clean.cpu)


def test_lower_bound_is_average_or_largest_bundle():
    caps = Capacities.of([BrokerSpec("a", cores=1), BrokerSpec("b", cores=1)])
    model = ResourceModel(SPEC)
    up = np.ones(2, dtype=bool)
    base = model.broker_usage(caps, np.zeros(2), np.zeros(2), np.zeros(2), up)
    even = lower_bound(
        caps, base, up, model, np.array([30_000.0, 30_000.0, 20_000.0]), np.zeros(3), np.zeros(3)
    )
    assert even == pytest.approx(0.4)  # 80% of one core over two cores
    skewed = lower_bound(caps, base, up, model, np.array([70_000.0, 10_000.0]), np.zeros(2), np.zeros(2))
    assert skewed == pytest.approx(0.7)  # the largest bundle alone
    one_down = lower_bound(
        caps, base, np.array([True, False]), model, np.array([30_000.0]), np.zeros(1), np.zeros(1)
    )
    assert one_down == pytest.approx(0.3)


def test_measured_usage_is_capped_demand_is_not():
    caps = Capacities.of([BrokerSpec("a", cores=1)])
    model = ResourceModel(SPEC)
    args = (caps, np.array([150_000.0]), np.zeros(1), np.zeros(1), np.ones(1, dtype=bool))
    assert model.broker_usage(*args).cpu[0] == 100.0
    demand = model.broker_usage(*args, measured=False)
    assert demand.cpu[0] == pytest.approx(150.0) and demand.load(caps, SPEC)[0] == pytest.approx(1.5)
