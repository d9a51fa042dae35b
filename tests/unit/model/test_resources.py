"""ResourceUsage / SystemResourceUsage / ResourceWeights: float32 percentages, validation, JSON."""

import math
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from brokerlb.errors import InvalidConfigError, InvalidLoadDataError
from brokerlb.model import ResourceUsage, ResourceWeights, SystemResourceUsage


def java_percent(usage: float, limit: float) -> float:
    """Pulsar's ``percentUsage()`` written with numpy float32, independently of the model."""
    if not limit > 0:
        return 0.0
    return float(np.float32(np.float32(usage) / np.float32(limit)) * np.float32(100))


@pytest.mark.parametrize(
    "usage, limit",
    [
        (7.31, 800.0),  # the docs sample's cpu
        (124.0, 2096.0),
        (36.0, 256.0),
        (0.83, 1.0e7),
        (1.0, 3.0),
        (2.0, 3.0),
        (0.1, 0.3),
        (640.0, 800.0),
        (1300.0, 800.0),  # CPU above 100% (taskset, Pulsar #17815)
        (1e-30, 1e-20),
        (3e38, 3e38),
        (0.0, 1.0),
    ],
)
def test_percent_is_java_float32(usage, limit):
    got = ResourceUsage(usage, limit).percent_usage()
    assert got == java_percent(usage, limit)
    assert float(np.float32(got)) == got  # it is a float32 value, widened


def test_float32_differs_from_double_math():
    # 7.31 / 800 * 100 in doubles is 0.91375 (approximately); Java's float answer differs
    assert ResourceUsage(7.31, 800.0).percent_usage() == 0.9137499928474426
    assert 7.31 / 800 * 100 != 0.9137499928474426


@given(
    st.floats(min_value=0, max_value=1e12, allow_nan=False),
    st.floats(min_value=1e-3, max_value=1e12, allow_nan=False),
)
def test_percent_matches_numpy_everywhere(usage, limit):
    assert ResourceUsage(usage, limit).percent_usage() == java_percent(usage, limit)


@pytest.mark.parametrize("limit", [0.0, -1.0, -800.0])
def test_unmeasured_limit_gives_zero_percent(limit):
    assert ResourceUsage(5.0, limit).percent_usage() == 0.0


def test_reset_and_unknown_are_minus_one():
    r = ResourceUsage(10.0, 100.0).reset()
    assert (r.usage, r.limit) == (-1.0, -1.0)
    assert r == ResourceUsage.unknown()
    assert r.percent_usage() == 0.0


def test_negative_usage_allowed_only_when_unmeasured():
    assert ResourceUsage(-1.0, -1.0).percent_usage() == 0.0
    assert ResourceUsage(-3.0, 0.0).percent_usage() == 0.0
    with pytest.raises(InvalidLoadDataError) as err:
        ResourceUsage(-1.0, 100.0)
    assert err.value.field == "usage" and err.value.value == -1.0
    assert "negative" in str(err.value)


@pytest.mark.parametrize(
    "usage, limit, field",
    [
        (math.nan, 100.0, "usage"),
        (math.inf, 100.0, "usage"),
        (-math.inf, 100.0, "usage"),
        (1.0, math.nan, "limit"),
        (1.0, math.inf, "limit"),
        ("1.0", 100.0, "usage"),
        (None, 100.0, "usage"),
        (True, 100.0, "usage"),
        (1.0, [100], "limit"),
    ],
)
def test_bad_numbers_rejected(usage, limit, field):
    with pytest.raises(InvalidLoadDataError) as err:
        ResourceUsage(usage, limit)
    assert err.value.field == field
    assert err.value.http_status == 400


def test_float32_overflow_rejected():
    with pytest.raises(InvalidLoadDataError, match="32-bit"):
        ResourceUsage(1e39, 1.0)  # float32(1e39) is inf
    with pytest.raises(InvalidLoadDataError, match="32-bit"):
        ResourceUsage(1e30, 1e-30)  # ratio overflows
    with pytest.raises(InvalidLoadDataError, match="32-bit"):
        ResourceUsage(1.0, 1e-50)  # limit underflows to 0 in float32 -> division by zero


def test_ints_accepted_and_normalised():
    r = ResourceUsage(1, 4)
    assert isinstance(r.usage, float) and r.usage == 1.0 and r.percent_usage() == 25.0


def test_immutable():
    r = ResourceUsage(1.0, 2.0)
    with pytest.raises(AttributeError):
        r.usage = 5.0  # type: ignore[misc]


def test_resource_json_round_trip_and_paths():
    assert ResourceUsage(7.31, 800.0).to_json() == {"usage": 7.31, "limit": 800.0}
    assert ResourceUsage.from_json({"usage": 7.31, "limit": 800.0}) == ResourceUsage(7.31, 800.0)
    assert ResourceUsage.from_json({}) == ResourceUsage(0.0, 0.0)  # Jackson: missing -> 0
    assert ResourceUsage.from_json({"usage": None, "limit": 5}) == ResourceUsage(0.0, 5.0)
    assert ResourceUsage.from_json({"usage": 1, "limit": 2, "extra": "ignored"}) == ResourceUsage(1.0, 2.0)
    with pytest.raises(InvalidLoadDataError) as err:
        ResourceUsage.from_json({"usage": "NaN", "limit": 800.0}, "cpu")  # Jackson writes NaN as "NaN"
    assert err.value.field == "cpu.usage" and err.value.value == "NaN"
    with pytest.raises(InvalidLoadDataError) as err:
        ResourceUsage.from_json({"usage": -5.0, "limit": 800.0}, "cpu")
    assert err.value.field == "cpu.usage"
    with pytest.raises(InvalidLoadDataError) as err:
        ResourceUsage.from_json([1, 2], "cpu")  # type: ignore[arg-type]
    assert err.value.field == "cpu"


def test_system_resource_usage_defaults_unknown_and_json():
    s = SystemResourceUsage()
    assert s.cpu == ResourceUsage(-1.0, -1.0) and s.bandwidth_out == ResourceUsage.unknown()
    s = SystemResourceUsage(cpu=ResourceUsage(80, 800), bandwidth_in=ResourceUsage(1, 10))
    doc = s.to_json()
    assert list(doc) == ["bandwidthIn", "bandwidthOut", "cpu", "memory", "directMemory"]
    assert SystemResourceUsage.from_json(doc) == s
    with pytest.raises(InvalidLoadDataError) as err:
        SystemResourceUsage.from_json({"directMemory": {"usage": math.nan, "limit": 1}})
    assert err.value.field == "directMemory.usage"
    with pytest.raises(InvalidLoadDataError):
        SystemResourceUsage(cpu=80.0)  # type: ignore[arg-type]


def test_weights_defaults_are_pulsar_4x():
    assert ResourceWeights() == ResourceWeights(1.0, 0.0, 0.0, 1.0, 1.0)


def test_weights_from_config_object():
    conf = SimpleNamespace(
        loadBalancerCPUResourceWeight=0.5,
        loadBalancerMemoryResourceWeight=0.25,
        loadBalancerDirectMemoryResourceWeight=2,
        loadBalancerBandwidthInResourceWeight=3.0,
        loadBalancerBandwidthOutResourceWeight=1.0,
        loadBalancerBandwithOutResourceWeight=4.0,  # old misspelled key, used: new one is 1.0
    )
    w = ResourceWeights.from_config(conf)
    assert w == ResourceWeights(0.5, 0.25, 2.0, 3.0, 4.0)
    assert ResourceWeights.from_config(SimpleNamespace()) == ResourceWeights()
    # a non-1.0 new key wins over a non-1.0 old key
    both = SimpleNamespace(
        loadBalancerBandwidthInResourceWeight=0.3, loadBalancerBandwithInResourceWeight=0.7
    )
    assert ResourceWeights.from_config(both).bandwidth_in == 0.3


@pytest.mark.parametrize("bad", [math.nan, math.inf, -0.5, "1", True])
def test_bad_weights_name_the_pulsar_key(bad):
    with pytest.raises(InvalidConfigError) as err:
        ResourceWeights(cpu=bad)
    assert err.value.key == "loadBalancerCPUResourceWeight"


def test_weights_from_service_config():
    from brokerlb.config import ServiceConfig

    assert ResourceWeights.from_config(ServiceConfig()) == ResourceWeights()
    conf = ServiceConfig(loadBalancerCPUResourceWeight=0.5, loadBalancerDirectMemoryResourceWeight=1.0)
    assert ResourceWeights.from_config(conf) == ResourceWeights(0.5, 0.0, 1.0, 1.0, 1.0)


def test_float32_percent_is_numpys_float32_arithmetic_bit_for_bit() -> None:
    """The struct-rounded double arithmetic equals numpy's float32 one, edges included
    (zero, subnormal, beyond float32's range, a limit that rounds to 0, infinity)."""
    import math
    import random

    import numpy as np

    from brokerlb.model.resources import float32_percent

    def java(usage: float, limit: float) -> float:
        if not limit > 0:
            return 0.0
        with np.errstate(all="ignore"):
            return float((np.float32(usage) / np.float32(limit)) * np.float32(100))

    edges = [0.0, -0.0, 1e-45, 1e-40, 1.2e-38, 1e-30, 1e-3, 1.0, 7.31, 99.99, 1e6, 3.4e38, 3.5e38, 1e300]
    edges += [math.inf, -1.0, -5e-40]
    rng = random.Random(11)
    cases = [(u, lim) for u in edges for lim in edges]
    cases += [
        (rng.random() * 10 ** rng.randrange(-45, 40), rng.random() * 10 ** rng.randrange(-45, 40))
        for _ in range(5000)
    ]
    cases += [(rng.uniform(0, 1e4), 100.0 * rng.randrange(1, 64)) for _ in range(5000)]
    for usage, limit in cases:
        expected, got = java(usage, limit), float32_percent(usage, limit)
        if math.isnan(expected):
            assert math.isnan(got), (usage, limit)
        else:
            assert got == expected and math.copysign(1, got) == math.copysign(1, expected), (usage, limit)
