"""Invariant checkers for the cluster simulator (used by its ``validate`` mode and by tests).

* :func:`assert_load_conserved` -- every topic's traffic is counted exactly once: on the broker
  that serves its bundle, or as unserved when the bundle has no serving owner; so the sum over
  brokers plus the unserved part equals the sum over topics, and each broker's total equals
  the sum over the topics of the bundles it serves.
* :func:`assert_topics_in_live_bundles` -- after splits, every topic maps to a live bundle of
  its own namespace.

Like the other checkers they raise :class:`~brokerlb.testing.invariants.InvariantViolation`
with the numbers they compared.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from brokerlb.testing.invariants import InvariantViolation

__all__ = ["assert_load_conserved", "assert_topics_in_live_bundles"]


def assert_load_conserved(
    topic_values: Mapping[str, np.ndarray],
    topic_bundle: np.ndarray,
    bundle_owner: np.ndarray,
    bundle_served: np.ndarray,
    broker_values: Mapping[str, np.ndarray],
    unserved_values: Mapping[str, float] | None = None,
    *,
    rtol: float = 1e-9,
    label: str = "",
) -> None:
    """Topic load equals the sum over brokers (see the module docstring).

    ``topic_values[q]`` is quantity ``q`` per topic; ``broker_values[q]`` the same quantity per
    broker as the simulator computed it; ``bundle_owner`` the owning broker index per bundle and
    ``bundle_served`` whether that owner serves it now. ``unserved_values[q]``, when given, must
    equal the part of ``q`` on bundles nobody serves.
    """
    where = f" ({label})" if label else ""
    served_topic = bundle_served[topic_bundle]
    owner_of_topic = bundle_owner[topic_bundle]
    for q, per_topic in topic_values.items():
        per_broker = broker_values[q]
        expected = np.bincount(
            owner_of_topic[served_topic], weights=per_topic[served_topic], minlength=len(per_broker)
        )
        scale = max(float(np.abs(per_topic).sum()), 1.0)
        bad = np.flatnonzero(np.abs(expected - per_broker) > rtol * scale)
        if len(bad):
            i = int(bad[0])
            raise InvariantViolation(
                f"{q}{where}: broker {i} carries {float(per_broker[i])!r} but its bundles' topics sum to "
                f"{float(expected[i])!r} ({len(bad)} brokers differ)"
            )
        total = float(per_topic.sum())
        unserved = float(per_topic[~served_topic].sum())
        if abs(total - (float(per_broker.sum()) + unserved)) > rtol * scale:
            raise InvariantViolation(
                f"{q}{where}: topics sum to {total!r} but brokers carry {float(per_broker.sum())!r} "
                f"and unserved bundles {unserved!r}"
            )
        if unserved_values is not None and q in unserved_values:
            if abs(unserved_values[q] - unserved) > rtol * scale:
                raise InvariantViolation(
                    f"{q}{where}: reported unserved {unserved_values[q]!r}, topics say {unserved!r}"
                )


def assert_topics_in_live_bundles(
    topic_bundle: np.ndarray, topic_ns: np.ndarray, bundle_live: np.ndarray, bundle_ns: np.ndarray
) -> None:
    """Every topic is in a live bundle of its namespace."""
    dead = np.flatnonzero(~bundle_live[topic_bundle])
    if len(dead):
        t = int(dead[0])
        raise InvariantViolation(
            f"topic {t} maps to bundle {int(topic_bundle[t])}, which was split away ({len(dead)} topics)"
        )
    wrong = np.flatnonzero(bundle_ns[topic_bundle] != topic_ns)
    if len(wrong):
        t = int(wrong[0])
        raise InvariantViolation(
            f"topic {t} of namespace {int(topic_ns[t])} maps to bundle {int(topic_bundle[t])} of namespace "
            f"{int(bundle_ns[topic_bundle[t]])}"
        )
