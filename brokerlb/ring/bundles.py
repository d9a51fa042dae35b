"""Namespace bundles: the hash ring of a namespace, as Pulsar's ``NamespaceBundles``.

A namespace's bundles come from a sorted boundary array ``p[0..n]`` with
``p[0] = 0x00000000`` and ``p[n] = 0xffffffff``. Bundle ``i`` covers
``[p[i], p[i+1])``; the last bundle is closed, ``[p[n-1], 0xffffffff]``, so a
hash equal to ``0xffffffff`` belongs to it.

Bundles are named ``{namespace}/0x%08x_0x%08x`` (e.g.
``public/default/0x00000000_0x40000000``); ``BundlesData`` JSON is
``{"boundaries": ["0x00000000", ...], "numBundles": N}``.

>>> b = NamespaceBundles.create("public/default", 4)
>>> str(b.find_bundle("persistent://public/default/my-topic"))
'public/default/0x00000000_0x40000000'
>>> [f"0x{x:08x}" for x in NamespaceBundles.create("t/ns", 3).boundaries]
['0x00000000', '0x55555555', '0xaaaaaaaa', '0xffffffff']
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from brokerlb.errors import (
    BundleNotFoundError,
    InvalidBundleRangeError,
    InvalidBundlesError,
    InvalidMergeError,
    InvalidSplitError,
)
from brokerlb.naming import NamespaceName, TopicName
from brokerlb.ring.hashing import FULL_LOWER_BOUND, FULL_UPPER_BOUND, MAX_BUNDLES, topic_hash, topic_hashes

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "NamespaceBundle",
    "NamespaceBundles",
    "FULL_RANGE",
    "format_boundary",
    "format_range",
    "parse_boundary",
    "parse_range",
    "equal_boundaries",
    "validate_num_bundles",
]

FULL_RANGE = "0x00000000_0xffffffff"


def format_boundary(value: int) -> str:
    """``"0x%08x"``: lower-case hex, zero-padded to 8 digits."""
    return f"0x{value:08x}"


def format_range(lower: int, upper: int) -> str:
    return f"0x{lower:08x}_0x{upper:08x}"


_DECODE = re.compile(r"([+-]?)(0[xX]|#|0(?=\d))?([0-9a-fA-F]+)")


def parse_boundary(value: int | str) -> int:
    """A boundary from an int or a string read as Java's ``Long.decode`` does.

    ``"0x40000000"``, ``"#40000000"``, ``"1073741824"`` (and octal ``"010"``).
    The value must lie in ``[0, 0xffffffff]``.
    """
    if isinstance(value, bool):
        raise InvalidBundlesError(f"Invalid bundle boundary {value!r}: not a number")
    if isinstance(value, int):
        number = value
    elif isinstance(value, str):
        m = _DECODE.fullmatch(value.strip())
        if not m:
            raise InvalidBundlesError(f"Invalid bundle boundary {value!r}: not a number")
        sign, prefix, digits = m.groups()
        base = 16 if prefix in ("0x", "0X", "#") else 8 if prefix == "0" else 10
        try:
            number = int(digits, base)
        except ValueError:
            raise InvalidBundlesError(f"Invalid bundle boundary {value!r}: not a number") from None
        if sign == "-":
            number = -number
    else:
        raise InvalidBundlesError(f"Invalid bundle boundary {value!r}: not a number")
    if not FULL_LOWER_BOUND <= number <= FULL_UPPER_BOUND:
        raise InvalidBundlesError(
            f"Invalid bundle boundary {value!r}: outside the hash range [0x00000000, 0xffffffff]"
        )
    return number


def parse_range(range_str: str) -> tuple[int, int]:
    """``"0x00000000_0x40000000"`` → ``(0, 0x40000000)``; the range must be non-empty."""
    if not isinstance(range_str, str) or "_" not in range_str:
        raise InvalidBundleRangeError(
            f"Invalid bundle range '{range_str}': expected <lower>_<upper>, e.g. 0x00000000_0x40000000"
        )
    lo_s, _, hi_s = range_str.partition("_")
    try:
        lower, upper = parse_boundary(lo_s), parse_boundary(hi_s)
    except InvalidBundlesError as exc:
        raise InvalidBundleRangeError(f"Invalid bundle range '{range_str}': {exc}") from exc
    if lower >= upper:
        raise InvalidBundleRangeError(
            f"Invalid bundle range '{range_str}': lower bound is not below upper bound"
        )
    return lower, upper


def validate_num_bundles(num_bundles: object) -> int:
    """``num_bundles`` if it is an int in ``(0, 2**32]``, else :class:`InvalidBundlesError` (HTTP 400)."""
    if (
        isinstance(num_bundles, bool)
        or not isinstance(num_bundles, int)
        or not 0 < num_bundles <= MAX_BUNDLES
    ):
        raise InvalidBundlesError(
            f"Invalid number of bundles {num_bundles!r}. Number of bundles has to be in the range of (0, 2^32]."
        )
    return num_bundles


def equal_boundaries(num_bundles: int) -> list[int]:
    """Pulsar's ``PoliciesUtil.getBundles(n)``: ``seg = 2**32 // n``; the last boundary is 0xffffffff."""
    validate_num_bundles(num_bundles)
    seg = MAX_BUNDLES // num_bundles
    bounds = [i * seg for i in range(num_bundles)]
    bounds.append(FULL_UPPER_BOUND)
    # With n = 2^32 the last segment start equals 0xffffffff: keep the ranges non-empty.
    if len(bounds) >= 2 and bounds[-2] == bounds[-1]:
        bounds.pop(-2)
    return bounds


@dataclass(frozen=True, slots=True, init=False)
class NamespaceBundle:
    """One bundle: ``[lower, upper)``, or ``[lower, 0xffffffff]`` when it is the last one.

    Validated on construction, as Pulsar's ``NamespaceBundle`` constructor checks its key range:
    ``0x00000000 <= lower < upper <= 0xffffffff`` (a non-empty range of the hash ring) and a
    :class:`~brokerlb.naming.NamespaceName` (a namespace string is parsed). The upper bound is
    inclusive exactly when it is ``0xffffffff`` (Pulsar: "Upper Endpoint should be exclusive
    unless it is 0xffffffff"), so only the last bundle of a namespace covers that hash. A bad
    range raises :class:`~brokerlb.errors.InvalidBundleRangeError` (HTTP 412): an invalid bundle
    cannot be built.

    Equality is namespace and range; ordering is Pulsar's ``compareTo``: by namespace name, then
    by lower bound, and two distinct overlapping bundles (a parent and its child) do not compare.

    >>> b = NamespaceBundle.parse("public/default/0x00000000_0x40000000")
    >>> b.includes("persistent://public/default/my-topic"), b < NamespaceBundle.parse("public/default/0x40000000_0x80000000")
    (True, True)
    """

    namespace: NamespaceName
    lower: int
    upper: int
    #: ``str(self)`` once asked for (the bundle's name keys the ownership table a lookup reads)
    _name: str | None = field(default=None, init=False, compare=False, repr=False)

    def __init__(self, namespace: NamespaceName | str, lower: int, upper: int) -> None:
        if (
            type(lower) is not int
            or type(upper) is not int
            or not FULL_LOWER_BOUND <= lower < upper <= FULL_UPPER_BOUND
            or type(namespace) is not NamespaceName
        ):
            namespace, lower, upper = _checked_bundle(namespace, lower, upper)
        _set = object.__setattr__
        _set(self, "namespace", namespace)
        _set(self, "lower", lower)
        _set(self, "upper", upper)
        _set(self, "_name", None)

    @classmethod
    def parse(cls, name: str) -> NamespaceBundle:
        """``"tenant/ns/0x00000000_0x40000000"`` → a bundle (the namespace is before the last ``/``)."""
        if not isinstance(name, str) or "/" not in name:
            raise InvalidBundleRangeError(
                f"Invalid bundle name '{name}': expected <tenant>/<namespace>/<range>"
            )
        ns, _, rng = name.rpartition("/")
        lower, upper = parse_range(rng)
        return cls(NamespaceName.parse(ns), lower, upper)

    def compare_to(self, other: NamespaceBundle) -> int:
        """Pulsar's ``NamespaceBundle.compareTo``: namespace names (as strings), then the lower
        bounds; 0 for equal bundles; two distinct bundles whose ranges overlap raise
        :class:`~brokerlb.errors.InvalidBundleRangeError` ("can't compare two key ranges with
        non-empty intersection")."""
        mine, theirs = str(self.namespace), str(other.namespace)
        if mine != theirs:
            return -1 if mine < theirs else 1
        if self == other:
            return 0
        if self.lower < other._end and other.lower < self._end:
            raise InvalidBundleRangeError(
                f"Can't compare bundles {self} and {other}: their key ranges overlap"
            )
        return -1 if self.lower < other.lower else 1

    def __lt__(self, other: NamespaceBundle) -> bool:
        return self.compare_to(other) < 0

    def __le__(self, other: NamespaceBundle) -> bool:
        return self.compare_to(other) <= 0

    def __gt__(self, other: NamespaceBundle) -> bool:
        return self.compare_to(other) > 0

    def __ge__(self, other: NamespaceBundle) -> bool:
        return self.compare_to(other) >= 0

    @property
    def _end(self) -> int:
        """The first hash after the bundle (``upper``, or ``upper + 1`` for the last bundle)."""
        return self.upper + 1 if self.upper == FULL_UPPER_BOUND else self.upper

    @property
    def upper_inclusive(self) -> bool:
        return self.upper == FULL_UPPER_BOUND

    @property
    def range(self) -> str:
        return format_range(self.lower, self.upper)

    @property
    def is_full(self) -> bool:
        return self.lower == FULL_LOWER_BOUND and self.upper == FULL_UPPER_BOUND

    @property
    def can_split(self) -> bool:
        """Pulsar's ``canSplitBundle``: ``upper - lower > 1``."""
        return self.upper - self.lower > 1

    @property
    def size(self) -> int:
        """Number of hash values the bundle covers."""
        return self.upper - self.lower + (1 if self.upper_inclusive else 0)

    def includes_hash(self, h: int) -> bool:
        return self.lower <= h < self.upper or (h == self.upper and self.upper_inclusive)

    def includes(self, topic: TopicName | str) -> bool:
        """The topic is in this bundle's namespace and its hash falls in the range."""
        t = TopicName.parse(topic)
        return t.namespace == self.namespace and self.includes_hash(topic_hash(str(t)))

    def __str__(self) -> str:
        name = self._name
        if name is None:
            name = f"{self.namespace}/0x{self.lower:08x}_0x{self.upper:08x}"
            object.__setattr__(self, "_name", name)
        return name

    def sort_key(self) -> tuple[str, int]:
        return (str(self.namespace), self.lower)


class NamespaceBundles:
    """The bundles of one namespace. Immutable: ``split`` and ``merge`` return new objects."""

    __slots__ = ("namespace", "_bounds", "_bundles", "_ns_prefix")

    def __init__(self, namespace: NamespaceName | str, boundaries: Sequence[int]) -> None:
        self.namespace = NamespaceName.parse(namespace)
        bounds = list(boundaries)
        _validate_boundaries(bounds)
        self._bounds: tuple[int, ...] = tuple(bounds)
        self._bundles: tuple[NamespaceBundle, ...] = tuple(
            NamespaceBundle(self.namespace, bounds[i], bounds[i + 1]) for i in range(len(bounds) - 1)
        )
        self._ns_prefix = (f"persistent://{self.namespace}/", f"non-persistent://{self.namespace}/")

    # ------------------------------------------------------------------ constructors
    @classmethod
    def create(cls, namespace: NamespaceName | str, num_bundles: int) -> NamespaceBundles:
        """``num_bundles`` equal bundles; ``num_bundles`` must be in ``(0, 2**32]``."""
        return cls(namespace, equal_boundaries(num_bundles))

    @classmethod
    def from_boundaries(
        cls, namespace: NamespaceName | str, boundaries: Iterable[int | str]
    ) -> NamespaceBundles:
        """Boundaries as ints or ``"0x…"`` strings; sorted and de-duplicated as Pulsar does.

        The first must be ``0x00000000`` and the last ``0xffffffff``.
        """
        if isinstance(boundaries, (str, bytes)) or not isinstance(boundaries, Iterable):
            raise InvalidBundlesError(f"Invalid bundle boundaries {boundaries!r}: expected a list")
        values = sorted({parse_boundary(b) for b in boundaries})
        if len(values) < 2:
            raise InvalidBundlesError(
                f"Invalid bundle boundaries {list(boundaries)!r}: at least two boundaries are needed"
            )
        if values[0] != FULL_LOWER_BOUND or values[-1] != FULL_UPPER_BOUND:
            raise InvalidBundlesError(
                "Input bundles do not cover the whole hash range. "
                f"first:{format_boundary(values[0])}, last:{format_boundary(values[-1])}"
            )
        return cls(namespace, values)

    @classmethod
    def from_json(
        cls, namespace: NamespaceName | str, data: Mapping[str, Any] | None, default_num_bundles: int = 4
    ) -> NamespaceBundles:
        """From ``BundlesData`` JSON, with Pulsar's rules for missing parts.

        No data → ``default_num_bundles``; ``numBundles > 0`` without boundaries → equal
        bundles; boundaries given → :meth:`from_boundaries` (``numBundles`` is derived).
        """
        if data is None:
            return cls.create(namespace, default_num_bundles)
        if not isinstance(data, Mapping):
            raise InvalidBundlesError(f"Invalid bundles data {data!r}: expected a JSON object")
        boundaries = data.get("boundaries")
        num = data.get("numBundles", 0)
        if boundaries:
            return cls.from_boundaries(namespace, boundaries)
        if num is None:
            num = 0
        if isinstance(num, bool) or not isinstance(num, int):
            raise InvalidBundlesError(f"Invalid numBundles {num!r}: expected an integer")
        if num > 0:
            return cls.create(namespace, num)
        return cls.create(namespace, default_num_bundles)

    # ------------------------------------------------------------------ views
    @property
    def boundaries(self) -> list[int]:
        return list(self._bounds)

    @property
    def bundles(self) -> list[NamespaceBundle]:
        return list(self._bundles)

    @property
    def num_bundles(self) -> int:
        return len(self._bundles)

    def __len__(self) -> int:
        return len(self._bundles)

    def __iter__(self) -> Iterator[NamespaceBundle]:
        return iter(self._bundles)

    def __contains__(self, bundle: object) -> bool:
        if isinstance(bundle, str):
            try:
                bundle = self.get_bundle(bundle)
            except (BundleNotFoundError, InvalidBundleRangeError):
                return False
            return True
        return bundle in self._bundles

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, NamespaceBundles)
            and self.namespace == other.namespace
            and self._bounds == other._bounds
        )

    def __hash__(self) -> int:
        return hash((self.namespace, self._bounds))

    def __repr__(self) -> str:
        return f"NamespaceBundles({str(self.namespace)!r}, numBundles={len(self)})"

    def to_json(self) -> dict[str, Any]:
        """``BundlesData``: ``{"boundaries": ["0x00000000", ...], "numBundles": N}``."""
        return {"boundaries": [format_boundary(b) for b in self._bounds], "numBundles": len(self._bundles)}

    # ------------------------------------------------------------------ lookup
    def index_of_hash(self, h: int) -> int:
        """Index of the bundle holding hash ``h`` (a hash of 0xffffffff goes to the last bundle)."""
        i = bisect_right(self._bounds, h) - 1
        return i if i < len(self._bundles) else len(self._bundles) - 1

    def bundle_for_hash(self, h: int) -> NamespaceBundle:
        if not FULL_LOWER_BOUND <= h <= FULL_UPPER_BOUND:
            raise InvalidBundleRangeError(f"Hash {h!r} is outside [0x00000000, 0xffffffff]")
        return self._bundles[self.index_of_hash(h)]

    def find_bundle(self, topic: TopicName | str) -> NamespaceBundle:
        """The bundle a topic maps to: CRC-32 of the full name, binary search of the boundaries.

        A string already in full form (``domain://tenant/ns/local``) is hashed as given
        (after a cheap namespace check); other strings are parsed first.
        """
        if type(topic) is TopicName:  # what lookups pass: a parsed (cached) name, its hash kept
            namespace = topic.namespace
            if namespace is not self.namespace and namespace != self.namespace:
                raise BundleNotFoundError(f"Topic {topic} is not in namespace {self.namespace}")
            h = topic.ring_hash
        elif isinstance(topic, str) and self._is_full_name_here(topic):
            h = topic_hash(topic)
        else:
            h = self._checked(TopicName.parse(topic)).ring_hash
        i = bisect_right(self._bounds, h) - 1  # index_of_hash, inlined
        bundles = self._bundles
        return bundles[i] if i < len(bundles) else bundles[-1]

    def _is_full_name_here(self, name: str) -> bool:
        """``name`` is already a canonical full name of a topic in this namespace (a local name
        of only whitespace goes the parsing way, which rejects a blank one)."""
        for prefix in self._ns_prefix:
            if name.startswith(prefix):
                local = name[len(prefix) :]
                return (
                    bool(local)
                    and not local.isspace()
                    and (self.namespace.cluster is not None or "/" not in local)
                )
        return False

    def _checked(self, topic: TopicName) -> TopicName:
        if topic.namespace != self.namespace:
            raise BundleNotFoundError(f"Topic {topic} is not in namespace {self.namespace}")
        return topic

    def find_bundle_indices(self, full_names: Sequence[str] | Iterable[str]) -> np.ndarray:
        """Bundle index for each full topic name, vectorised (numpy ``searchsorted``).

        Names are hashed as given: pass full names (``TopicName`` strings).
        """
        import numpy as np

        hashes = topic_hashes(full_names)
        bounds = np.asarray(self._bounds, dtype=np.int64)
        idx = np.searchsorted(bounds, hashes, side="right") - 1
        np.minimum(idx, len(self._bundles) - 1, out=idx)
        return idx

    def get_bundle(self, bundle: str | NamespaceBundle | tuple[int, int]) -> NamespaceBundle:
        """A current bundle by range string, full name, ``(lower, upper)`` or bundle object.

        Raises :class:`BundleNotFoundError` when the namespace has no such bundle
        (Pulsar's ``validateBundle``).
        """
        if isinstance(bundle, NamespaceBundle):
            if bundle.namespace != self.namespace:
                raise BundleNotFoundError(f"Bundle {bundle} is not in namespace {self.namespace}")
            lower, upper = bundle.lower, bundle.upper
        elif isinstance(bundle, tuple):
            lower, upper = bundle
        elif isinstance(bundle, str):
            rng = bundle.rpartition("/")[2] if "/" in bundle else bundle
            if "/" in bundle and NamespaceName.parse(bundle.rpartition("/")[0]) != self.namespace:
                raise BundleNotFoundError(f"Bundle {bundle} is not in namespace {self.namespace}")
            lower, upper = parse_range(rng)
        else:
            raise InvalidBundleRangeError(f"Invalid bundle {bundle!r}")
        i = bisect_right(self._bounds, lower) - 1
        if 0 <= i < len(self._bundles) and self._bounds[i] == lower and self._bounds[i + 1] == upper:
            return self._bundles[i]
        raise BundleNotFoundError(
            f"Bundle range {format_range(lower, upper)} not found in namespace {self.namespace}"
        )

    # ------------------------------------------------------------------ changes
    def split(self, bundle: str | NamespaceBundle, boundaries: Iterable[int | str]) -> NamespaceBundles:
        """Split ``bundle`` at ``boundaries``, each strictly inside ``(lower, upper)``.

        k distinct boundaries give k+1 children. Raises :class:`InvalidSplitError`
        when the bundle cannot split (``upper - lower <= 1``) or a boundary is outside.
        """
        target = self.get_bundle(bundle)
        try:
            points = sorted({parse_boundary(b) for b in boundaries})
        except InvalidBundlesError as exc:
            raise InvalidSplitError(f"Split bundle {target} failed: {exc}") from exc
        if not points:
            raise InvalidSplitError(f"Split bundle {target} failed: no split boundary given")
        if not target.can_split:
            raise InvalidSplitError(f"Split bundle {target} failed: the bundle range is too small to split")
        outside = [format_boundary(p) for p in points if not target.lower < p < target.upper]
        if outside:
            raise InvalidSplitError(
                f"Split bundle {target} failed: boundaries {', '.join(outside)} are not strictly inside "
                f"({format_boundary(target.lower)}, {format_boundary(target.upper)})"
            )
        i = self._bounds.index(target.lower)
        new = list(self._bounds[: i + 1]) + points + list(self._bounds[i + 1 :])
        return NamespaceBundles(self.namespace, new)

    def merge(self, bundles: Iterable[str | NamespaceBundle]) -> NamespaceBundles:
        """Merge two or more adjacent bundles into one (beyond Pulsar, which cannot merge).

        The bundles must be current bundles of this namespace and form one contiguous run.
        """
        targets = sorted({self.get_bundle(b) for b in bundles}, key=lambda b: b.lower)
        if len(targets) < 2:
            raise InvalidMergeError(
                f"Merge in namespace {self.namespace} needs at least two distinct bundles, got {len(targets)}"
            )
        for left, right in zip(targets, targets[1:], strict=False):
            if left.upper != right.lower:
                raise InvalidMergeError(
                    f"Bundles {left.range} and {right.range} of namespace {self.namespace} are not adjacent"
                )
        inner = {b.lower for b in targets[1:]}
        return NamespaceBundles(self.namespace, [b for b in self._bounds if b not in inner])

    def merged_bundle(self, bundles: Iterable[str | NamespaceBundle]) -> NamespaceBundle:
        """The bundle that :meth:`merge` of ``bundles`` creates."""
        targets = [self.get_bundle(b) for b in bundles]
        merged = self.merge(targets)
        return merged.get_bundle((min(b.lower for b in targets), max(b.upper for b in targets)))


def _checked_bundle(namespace: object, lower: object, upper: object) -> tuple[NamespaceName, int, int]:
    """The slow path of :class:`NamespaceBundle`'s constructor: accept a namespace string and
    int-like bounds (``numpy`` integers), reject everything else with the reason."""
    if isinstance(namespace, str):
        namespace = NamespaceName.parse(namespace)
    elif not isinstance(namespace, NamespaceName):
        raise InvalidBundleRangeError(f"Invalid bundle namespace {namespace!r}: expected a namespace name")
    bounds = []
    for value in (lower, upper):
        index = getattr(value, "__index__", None)
        if isinstance(value, bool) or index is None:
            raise InvalidBundleRangeError(f"Invalid bundle bound {value!r}: not an integer")
        bounds.append(index())
    low, high = bounds
    where = f"Invalid bundle range {namespace}/{_hex(low)}_{_hex(high)}"
    if not (FULL_LOWER_BOUND <= low <= FULL_UPPER_BOUND and FULL_LOWER_BOUND <= high <= FULL_UPPER_BOUND):
        raise InvalidBundleRangeError(f"{where}: outside the hash range [0x00000000, 0xffffffff]")
    if low >= high:
        raise InvalidBundleRangeError(f"{where}: lower bound is not below upper bound")
    return namespace, low, high


def _hex(value: int) -> str:
    return format_boundary(value) if value >= 0 else str(value)


def _validate_boundaries(bounds: list[int]) -> None:
    if len(bounds) < 2:
        raise InvalidBundlesError(f"Invalid bundle boundaries {bounds!r}: at least two boundaries are needed")
    if bounds[0] != FULL_LOWER_BOUND or bounds[-1] != FULL_UPPER_BOUND:
        raise InvalidBundlesError(
            "Input bundles do not cover the whole hash range. "
            f"first:{format_boundary(bounds[0])}, last:{format_boundary(bounds[-1])}"
        )
    for a, b in zip(bounds, bounds[1:], strict=False):
        if not isinstance(a, int) or a >= b:
            raise InvalidBundlesError(f"Invalid bundle boundaries: {a!r} is not below {b!r}")
