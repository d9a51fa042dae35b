"""Resource usage of a broker host: Pulsar's ``ResourceUsage`` and ``SystemResourceUsage``.

A :class:`ResourceUsage` is one measured resource, ``usage`` out of ``limit``
(JSON ``{"usage": 7.31, "limit": 800.0}``). Units, as Pulsar's host-usage
collectors report them: cpu is percent summed over cores with ``limit = 100 *
cores``; memory and direct memory are MB used of MB max; bandwidth in/out are
Kbit/s of the NIC speed.

``percent_usage()`` is computed in 32-bit floats exactly as Pulsar's Java
``float percentUsage()`` does, then widened to a Python float, so thresholds
compare bit-for-bit like a Java broker::

    >>> ResourceUsage(7.31, 800.0).percent_usage()
    0.9137499928474426
    >>> ResourceUsage(1.0, 0.0).percent_usage()      # limit <= 0: unknown, Pulsar answers 0
    0.0

Validation (each rule raises :class:`~brokerlb.errors.InvalidLoadDataError`
naming the field and the value):

* ``usage`` and ``limit`` must be finite numbers (NaN and +-inf are refused, so a
  broken collector such as Pulsar issue #382's ``NaN`` CPU cannot reach an average).
* ``limit <= 0`` means "not measured" (Pulsar's ``reset()`` writes -1/-1): accepted,
  and the percentage is 0 as in Pulsar; ``usage`` may then be anything finite.
* With ``limit > 0``, ``usage`` must be ``>= 0`` (a negative measured usage is a broken
  collector), and the 32-bit percentage must be finite (values beyond the float32
  range Pulsar computes in are refused instead of turning into ``inf``).
* ``usage > limit`` is allowed (CPU over 100% happens with ``taskset``, Pulsar #17815).
"""

from __future__ import annotations

import math
import struct
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from brokerlb.errors import InvalidConfigError
from brokerlb.model._validate import JsonObject, check_finite, invalid

__all__ = [
    "ResourceUsage",
    "SystemResourceUsage",
    "ResourceWeights",
    "float32_percent",
]

_F32_HUNDRED = np.float32(100)
_F32 = struct.Struct("f")
_to_f32, _from_f32 = _F32.pack, _F32.unpack
#: the smallest normal float32: below it a result is subnormal (computed by numpy instead)
_F32_MIN_NORMAL = 1.1754943508222875e-38


def float32_percent(usage: float, limit: float) -> float:
    """``limit > 0 ? (float) usage / (float) limit * 100 : 0`` in Java ``float`` arithmetic, widened.

    May return ``inf``/``nan`` for values outside the float32 range; :class:`ResourceUsage`
    refuses those.

    Computed in doubles, each result rounded to float32: a quotient or product of two float32
    values computed in double precision and then rounded to float32 is the correctly rounded
    float32 result (53 >= 2 x 24 + 2 bits), so this is Java's arithmetic bit for bit, at a
    quarter of numpy's scalar cost. Results out of float32's normal range (overflow,
    subnormal) and a limit that rounds to 0 take numpy's path.
    """
    if not limit > 0:
        return 0.0
    try:
        proportion = _from_f32(_to_f32(_from_f32(_to_f32(usage))[0] / _from_f32(_to_f32(limit))[0]))[0]
        if proportion < _F32_MIN_NORMAL and proportion != 0.0:
            raise OverflowError
        return float(_from_f32(_to_f32(proportion * 100.0))[0])
    except (OverflowError, ZeroDivisionError):
        with np.errstate(all="ignore"):
            return float((np.float32(usage) / np.float32(limit)) * _F32_HUNDRED)


@dataclass(frozen=True, slots=True)
class ResourceUsage:
    """One resource: ``usage`` of ``limit``. Immutable; see the module docstring for validation."""

    usage: float = 0.0
    limit: float = 0.0
    _percent: float = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        usage, limit, percent = _checked(self.usage, self.limit, "")
        object.__setattr__(self, "usage", usage)
        object.__setattr__(self, "limit", limit)
        object.__setattr__(self, "_percent", percent)

    @classmethod
    def unknown(cls) -> ResourceUsage:
        """The "not measured" value Pulsar's ``reset()`` writes: usage -1, limit -1 (percent 0)."""
        return cls(-1.0, -1.0)

    def reset(self) -> ResourceUsage:
        """Pulsar's ``reset()``: the -1/-1 value. Returns a new object (this class is immutable)."""
        return self.unknown()

    def percent_usage(self) -> float:
        """Usage in percent of the limit, computed in float32 like Java; 0 when ``limit <= 0``."""
        return self._percent

    def to_json(self) -> dict[str, Any]:
        return {"usage": self.usage, "limit": self.limit}

    @classmethod
    def from_json(cls, data: Mapping[str, Any], path: str = "") -> ResourceUsage:
        """Read ``{"usage", "limit"}``; a missing key is 0 (Jackson on Pulsar's no-arg constructor)."""
        obj = JsonObject(data, path)
        usage = obj.raw("usage")
        limit = obj.raw("limit")
        checked = _checked(0.0 if usage is None else usage, 0.0 if limit is None else limit, path)
        return cls._of_checked(*checked)

    @classmethod
    def _of_checked(cls, usage: float, limit: float, percent: float) -> ResourceUsage:
        """The value of what :func:`_checked` returned (not validated a second time)."""
        value: ResourceUsage = object.__new__(cls)
        object.__setattr__(value, "usage", usage)
        object.__setattr__(value, "limit", limit)
        object.__setattr__(value, "_percent", percent)
        return value


def _checked(usage: Any, limit: Any, path: str) -> tuple[float, float, float]:
    """Validate a usage/limit pair (rules in the module docstring); field names are prefixed by ``path``."""
    usage_field = f"{path}.usage" if path else "usage"
    usage_f = check_finite(usage, usage_field)
    limit_f = check_finite(limit, f"{path}.limit" if path else "limit")
    percent = float32_percent(usage_f, limit_f)
    if limit_f > 0:
        if usage_f < 0:
            raise invalid(usage_field, usage, f"negative usage of a measured resource (limit {limit_f!r})")
        if not math.isfinite(percent):
            raise invalid(usage_field, usage, f"usage/limit {usage_f!r}/{limit_f!r} overflows a 32-bit float")
    return usage_f + 0.0, limit_f + 0.0, percent


_RESOURCE_KEYS = (
    ("bandwidth_in", "bandwidthIn"),
    ("bandwidth_out", "bandwidthOut"),
    ("cpu", "cpu"),
    ("memory", "memory"),
    ("direct_memory", "directMemory"),
)


@dataclass(frozen=True, slots=True)
class SystemResourceUsage:
    """The five host resources a broker samples. Unset ones are "unknown" (-1/-1, as in Pulsar).

    JSON keys (Pulsar's field order): ``bandwidthIn, bandwidthOut, cpu, memory, directMemory``.
    """

    cpu: ResourceUsage = field(default_factory=ResourceUsage.unknown)
    memory: ResourceUsage = field(default_factory=ResourceUsage.unknown)
    direct_memory: ResourceUsage = field(default_factory=ResourceUsage.unknown)
    bandwidth_in: ResourceUsage = field(default_factory=ResourceUsage.unknown)
    bandwidth_out: ResourceUsage = field(default_factory=ResourceUsage.unknown)

    def __post_init__(self) -> None:
        for attr, key in _RESOURCE_KEYS:
            if not isinstance(getattr(self, attr), ResourceUsage):
                raise invalid(key, getattr(self, attr), "expected a ResourceUsage")

    def to_json(self) -> dict[str, Any]:
        return {key: getattr(self, attr).to_json() for attr, key in _RESOURCE_KEYS}

    @classmethod
    def from_json(cls, data: Mapping[str, Any], path: str = "") -> SystemResourceUsage:
        obj = JsonObject(data, path)
        values: dict[str, ResourceUsage] = {}
        for attr, key in _RESOURCE_KEYS:
            sub = obj.obj(key)
            if sub is not None:
                values[attr] = ResourceUsage.from_json(sub.data, sub.path)
        return cls(**values)


@dataclass(frozen=True, slots=True)
class ResourceWeights:
    """The five ``loadBalancer*ResourceWeight`` settings, defaulting to Pulsar 4.x's values.

    Weights must be finite and ``>= 0`` (else :class:`~brokerlb.errors.InvalidConfigError` naming
    the Pulsar key). Defaults:
    ``cpu=1.0, memory=0.0, direct_memory=0.0, bandwidth_in=1.0, bandwidth_out=1.0``, so the
    weighted maximum is ``max(cpu%, bwIn%, bwOut%) / 100`` by default. (Pulsar 2.x/3.0 defaulted
    memory and direct memory to 1.0; pass them explicitly to reproduce that.)
    """

    cpu: float = 1.0
    memory: float = 0.0
    direct_memory: float = 0.0
    bandwidth_in: float = 1.0
    bandwidth_out: float = 1.0

    def __post_init__(self) -> None:
        for name, key in _WEIGHT_KEYS:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
                raise InvalidConfigError(key, value, "must be a finite number")
            if value < 0:
                raise InvalidConfigError(key, value, "must not be negative")
            object.__setattr__(self, name, float(value))

    @classmethod
    def from_config(cls, conf: Any) -> ResourceWeights:
        """Read the weights from any object with Pulsar-named attributes (e.g. ``ServiceConfig``).

        Missing attributes take the 4.x defaults. Bandwidth weights follow Pulsar's getter:
        the ``loadBalancerBandwidth*`` key wins when it is not 1.0, else the misspelled
        deprecated ``loadBalancerBandwith*`` key when it is not 1.0, else 1.0.
        """
        default = cls()

        def get(key: str, fallback: float) -> float:
            value = getattr(conf, key, None)
            return fallback if value is None else value

        def bandwidth(new_key: str, old_key: str) -> float:
            new = get(new_key, 1.0)
            if new != 1.0:
                return new
            old = get(old_key, 1.0)
            return old if old != 1.0 else 1.0

        return cls(
            cpu=get("loadBalancerCPUResourceWeight", default.cpu),
            memory=get("loadBalancerMemoryResourceWeight", default.memory),
            direct_memory=get("loadBalancerDirectMemoryResourceWeight", default.direct_memory),
            bandwidth_in=bandwidth(
                "loadBalancerBandwidthInResourceWeight", "loadBalancerBandwithInResourceWeight"
            ),
            bandwidth_out=bandwidth(
                "loadBalancerBandwidthOutResourceWeight", "loadBalancerBandwithOutResourceWeight"
            ),
        )


_WEIGHT_KEYS = (
    ("cpu", "loadBalancerCPUResourceWeight"),
    ("memory", "loadBalancerMemoryResourceWeight"),
    ("direct_memory", "loadBalancerDirectMemoryResourceWeight"),
    ("bandwidth_in", "loadBalancerBandwidthInResourceWeight"),
    ("bandwidth_out", "loadBalancerBandwidthOutResourceWeight"),
)
