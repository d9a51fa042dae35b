"""Every registered assignor satisfies the assignor protocol (``brokerlb.kafka.assignors.interface``)."""

from __future__ import annotations

import inspect

import pytest

from brokerlb.kafka.assignors import (
    ASSIGNORS,
    GroupAssignment,
    GroupSnapshot,
    PartitionAssignor,
    RebalanceProtocol,
    get_assignor,
)
from brokerlb.kafka.checker import check_assignor_result

GROUP = GroupSnapshot.from_json(
    {
        "members": {"A": {"topics": ["t0", "t1"], "owned": {"t0": [0]}}, "B": {"topics": ["t1"]}},
        "partitions": {"t0": 2, "t1": 3},
    }
)


@pytest.mark.parametrize("name", sorted(ASSIGNORS))
def test_registered_assignor_satisfies_the_protocol(name):
    assignor = get_assignor(name)
    assert isinstance(assignor, PartitionAssignor)
    assert assignor.name == name
    assert isinstance(assignor.protocol, RebalanceProtocol)
    assert list(inspect.signature(assignor.assign).parameters) == ["group"]
    result = assignor.assign(GROUP)
    assert isinstance(result, GroupAssignment)
    check_assignor_result(assignor, GROUP, result)
    assert set(result.assignment) == set(GROUP.members)
    assert assignor.assign(GROUP) == result  # pure: same snapshot, same answer


def test_server_side_assignors_use_the_consumer_protocol():
    server_side = {n for n in ASSIGNORS if get_assignor(n).protocol is RebalanceProtocol.CONSUMER}
    assert server_side == {"uniform", "range-server"}


def test_the_interface_module_is_small_and_base_is_gone():
    import importlib

    interface = importlib.import_module("brokerlb.kafka.assignors.interface")
    assert set(interface.__all__) == {"PartitionAssignor", "RebalanceProtocol"}
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("brokerlb.kafka.assignors.base")
