"""Checks that involve more than one key; each error names the key at fault and its value."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from brokerlb.errors import InvalidConfigError
from brokerlb.ring.split_algorithms import SPECIFIED_POSITIONS_DIVIDE

__all__ = ["CROSS_KEY_CHECKS", "check_cross_key"]

Values = Mapping[str, Any]


def _default_split_algorithm(v: Values) -> None:
    name = v["defaultNamespaceBundleSplitAlgorithm"]
    supported = v["supportedNamespaceBundleSplitAlgorithms"]
    if name == SPECIFIED_POSITIONS_DIVIDE:
        raise InvalidConfigError(
            "defaultNamespaceBundleSplitAlgorithm",
            name,
            "specified_positions_divide needs positions from an admin and cannot be the default",
        )
    if name not in supported:
        raise InvalidConfigError(
            "defaultNamespaceBundleSplitAlgorithm",
            name,
            f"not in supportedNamespaceBundleSplitAlgorithms ({', '.join(supported) or 'empty'})",
        )


def _tombstone_after_in_flight(v: Values) -> None:
    # Pulsar's ServiceUnitStateChannelImpl refuses to start in this case.
    tombstone_ms = v["loadBalancerServiceUnitStateTombstoneDelayTimeInSeconds"] * 1000
    in_flight_ms = v["loadBalancerInFlightServiceUnitStateWaitingTimeInMillis"]
    if tombstone_ms < in_flight_ms:
        raise InvalidConfigError(
            "loadBalancerServiceUnitStateTombstoneDelayTimeInSeconds",
            v["loadBalancerServiceUnitStateTombstoneDelayTimeInSeconds"],
            f"must be at least loadBalancerInFlightServiceUnitStateWaitingTimeInMillis ({in_flight_ms} ms)",
        )


def _some_port(plain: str, tls: str) -> Callable[[Values], None]:
    def check(v: Values) -> None:
        if v[plain] is None and v[tls] is None:
            raise InvalidConfigError(plain, None, f"{plain} and {tls} are both unset; the broker needs one")

    return check


def _not_above(low_key: str, high_key: str) -> Callable[[Values], None]:
    def check(v: Values) -> None:
        low, high = v[low_key], v[high_key]
        if low > high:
            raise InvalidConfigError(low_key, low, f"must not exceed {high_key} ({high})")

    return check


def _authorization_needs_authentication(v: Values) -> None:
    if v["authorizationEnabled"] and not v["authenticationEnabled"]:
        raise InvalidConfigError(
            "authorizationEnabled",
            True,
            "authorization checks the authenticated role: set authenticationEnabled=true too "
            "(Pulsar silently checks nothing in this case)",
        )


CROSS_KEY_CHECKS: tuple[Callable[[Values], None], ...] = (
    _default_split_algorithm,
    _tombstone_after_in_flight,
    _some_port("webServicePort", "webServicePortTls"),
    _some_port("brokerServicePort", "brokerServicePortTls"),
    _not_above("loadBalancerAvgShedderLowThreshold", "loadBalancerAvgShedderHighThreshold"),
    _not_above("pulsarChannelWriteBufferLowWaterMark", "pulsarChannelWriteBufferHighWaterMark"),
    _authorization_needs_authentication,
)


def check_cross_key(values: Values) -> None:
    """Run every cross-key check; raises :class:`InvalidConfigError` on the first failure."""
    for check in CROSS_KEY_CHECKS:
        check(values)
