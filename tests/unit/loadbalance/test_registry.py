"""Strategies by Pulsar class name or short name."""

import pytest

from brokerlb.config import ServiceConfig
from brokerlb.errors import StrategyNotAvailableError, UnknownStrategyError
from brokerlb.loadbalance.registry import (
    EXTENSIONS,
    IMPL,
    StrategyKind,
    StrategySpec,
    default_strategy_name,
    known_names,
    register,
    resolve,
    unloads_split_children,
    unregister,
)

SHED = StrategyKind.SHEDDING


@pytest.mark.parametrize("name", ["ThresholdShedder", f"{IMPL}.ThresholdShedder", "  ThresholdShedder "])
def test_full_and_short_names(name: str) -> None:
    assert resolve(SHED, name).class_name == f"{IMPL}.ThresholdShedder"


def test_transfer_shedder_is_extensible() -> None:
    spec = resolve(SHED, "TransferShedder")
    assert spec.class_name == f"{EXTENSIONS}.scheduler.TransferShedder" and spec.extensible


def test_unknown_name_lists_known_ones() -> None:
    with pytest.raises(UnknownStrategyError) as info:
        resolve(SHED, "FancyShedder")
    assert "FancyShedder" in str(info.value)
    assert "ThresholdShedder" in info.value.known and "AvgShedder" in info.value.known
    assert info.value.http_status == 400


def test_avg_shedder_is_both_a_shedding_and_a_placement_strategy() -> None:
    assert resolve(StrategyKind.PLACEMENT, "AvgShedder").class_name == resolve(SHED, "AvgShedder").class_name
    assert "AvgShedder" in known_names(StrategyKind.PLACEMENT)


def test_a_short_name_cannot_be_taken_twice() -> None:
    with pytest.raises(ValueError, match="already used"):
        register(StrategySpec(SHED, "com.example.ThresholdShedder", "x", "y", "ThresholdShedder"))


def test_missing_module_is_a_clear_error() -> None:
    spec = StrategySpec(
        SHED, "com.example.Missing", "brokerlb.loadbalance.shedding.no_such_module", "X", None
    )
    register(spec)
    try:
        with pytest.raises(StrategyNotAvailableError, match="no_such_module"):
            resolve(SHED, "com.example.Missing").create()
    finally:
        unregister(SHED, "com.example.Missing")
    with pytest.raises(UnknownStrategyError):
        resolve(SHED, "com.example.Missing")


def test_defaults_follow_the_config() -> None:
    conf = ServiceConfig()
    assert default_strategy_name(SHED, conf) == f"{IMPL}.ThresholdShedder"
    assert default_strategy_name(StrategyKind.PLACEMENT, conf) == f"{IMPL}.LeastLongTermMessageRate"
    assert default_strategy_name(StrategyKind.SPLIT, conf) == f"{IMPL}.BundleSplitterTask"
    # the modular manager falls back to OverloadShedder for a class it cannot use
    odd = conf.with_overrides({"loadBalancerLoadSheddingStrategy": "TransferShedder"})
    assert default_strategy_name(SHED, odd) == f"{IMPL}.OverloadShedder"
    # the extensible manager runs TransferShedder unless an extensible strategy is configured
    ext = conf.with_overrides({"loadManagerClassName": f"{EXTENSIONS}.ExtensibleLoadManagerImpl"})
    assert default_strategy_name(SHED, ext) == f"{EXTENSIONS}.scheduler.TransferShedder"
    assert (
        default_strategy_name(StrategyKind.PLACEMENT, ext)
        == f"{EXTENSIONS}.strategy.LeastResourceUsageWithWeight"
    )
    assert default_strategy_name(StrategyKind.SPLIT, ext) == (
        f"{EXTENSIONS}.strategy.DefaultNamespaceBundleSplitStrategyImpl"
    )


@pytest.mark.parametrize(
    ("placement", "auto_unload", "manager", "unloads"),
    [
        ("LeastLongTermMessageRate", True, "ModularLoadManagerImpl", True),
        ("AvgShedder", True, "ModularLoadManagerImpl", True),
        ("LeastLongTermMessageRate", False, "ModularLoadManagerImpl", False),
        # brokerlb places a split child back where its parent was: the unload would only reconnect
        ("brokerlb", True, "ModularLoadManagerImpl", False),
        # the extensible manager's split gives the children to the parent's owner
        ("LeastLongTermMessageRate", True, "ExtensibleLoadManagerImpl", False),
    ],
)
def test_the_children_of_a_split_are_unloaded_unless_brokerlb_places_them(
    placement: str, auto_unload: bool, manager: str, unloads: bool
) -> None:
    conf = ServiceConfig().with_overrides(
        {
            "loadBalancerLoadPlacementStrategy": placement,
            "loadBalancerAutoUnloadSplitBundlesEnabled": auto_unload,
            "loadManagerClassName": manager,
        }
    )
    assert unloads_split_children(conf) is unloads
