import doctest

import pytest

import brokerlb.kafka.hashing
import brokerlb.kafka.partitioner
import brokerlb.kafka.pulsar_routing


@pytest.mark.parametrize(
    "module", [brokerlb.kafka.hashing, brokerlb.kafka.partitioner, brokerlb.kafka.pulsar_routing]
)
def test_docstring_examples(module):
    result = doctest.testmod(module)
    assert result.attempted > 0 and result.failed == 0
