import numpy as np
import pytest

from brokerlb.testing.invariants import InvariantViolation
from brokerlb.testing.simulation import assert_load_conserved, assert_topics_in_live_bundles

TOPIC_BUNDLE = np.array([0, 0, 1, 2])
OWNER = np.array([0, 1, 1])
SERVED = np.array([True, True, False])
RATES = {"rate": np.array([1.0, 2.0, 3.0, 4.0])}


def test_conserved():
    assert_load_conserved(RATES, TOPIC_BUNDLE, OWNER, SERVED, {"rate": np.array([3.0, 3.0])}, {"rate": 4.0})


def test_a_broker_with_the_wrong_total_is_named():
    with pytest.raises(InvariantViolation, match="broker 1 carries 4.0 but its bundles' topics sum to 3.0"):
        assert_load_conserved(RATES, TOPIC_BUNDLE, OWNER, SERVED, {"rate": np.array([3.0, 4.0])})


def test_unserved_must_match():
    with pytest.raises(InvariantViolation, match="reported unserved 0.0"):
        assert_load_conserved(
            RATES, TOPIC_BUNDLE, OWNER, SERVED, {"rate": np.array([3.0, 3.0])}, {"rate": 0.0}
        )


def test_topics_in_live_bundles():
    assert_topics_in_live_bundles(
        np.array([0, 1]), np.array([0, 0]), np.array([True, True]), np.array([0, 0])
    )
    with pytest.raises(InvariantViolation, match="split away"):
        assert_topics_in_live_bundles(
            np.array([0, 1]), np.array([0, 0]), np.array([False, True]), np.array([0, 0])
        )
    with pytest.raises(InvariantViolation, match="of namespace 1"):
        assert_topics_in_live_bundles(
            np.array([0, 1]), np.array([0, 0]), np.array([True, True]), np.array([0, 1])
        )
