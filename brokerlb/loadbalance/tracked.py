"""A dict that remembers which keys changed: the leader's ``bundle_data`` between refreshes.

The refresh keeps, per broker, which history each reported bundle folds into
(:mod:`brokerlb.loadbalance.fold`). It may reuse that only while ``bundle_data`` still maps those
bundles to the same objects; :class:`TrackedDict` records the keys set or removed since the last
:meth:`~TrackedDict.take_changes`, so the check costs nothing when nothing changed. Reads are
the plain ``dict`` ones (not overridden), so readers pay nothing.

>>> d = TrackedDict(a=1)
>>> d["b"] = 2; d.pop("a"); d.setdefault("b", 3)
1
2
>>> sorted(d.take_changes()), d.take_changes()
(['a', 'b'], set())
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypeVar

__all__ = ["TrackedDict"]

K = TypeVar("K")
V = TypeVar("V")


class TrackedDict(dict[K, V]):
    """A ``dict`` whose mutators log the keys they touch (``None``: everything, after ``clear``)."""

    __slots__ = ("_changes", "_everything")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._changes: set[Any] = set()
        self._everything = False

    def take_changes(self) -> set[K] | None:
        """The keys changed since the last call (``None``: possibly all of them), forgetting them."""
        changes = None if self._everything else self._changes
        self._changes = set()
        self._everything = False
        return changes

    def peek_changes(self) -> set[K] | None:
        """The keys changed since the last :meth:`take_changes` (``None``: possibly all of them),
        kept. The set is the dict's own: read it, do not change it."""
        return None if self._everything else self._changes

    def has_changes(self) -> bool:
        """Whether any key changed since the last :meth:`take_changes`."""
        return self._everything or bool(self._changes)

    def __setitem__(self, key: K, value: V) -> None:
        self._changes.add(key)
        super().__setitem__(key, value)

    def __delitem__(self, key: K) -> None:
        self._changes.add(key)
        super().__delitem__(key)

    def pop(self, key: K, *default: Any) -> Any:
        self._changes.add(key)
        return super().pop(key, *default)

    def popitem(self) -> tuple[K, V]:
        key, value = super().popitem()
        self._changes.add(key)
        return key, value

    def setdefault(self, key: K, default: Any = None) -> Any:
        if key not in self:
            self._changes.add(key)
        return super().setdefault(key, default)

    def update(self, *args: Any, **kwargs: Any) -> None:
        other: dict[Any, Any] = dict(*args, **kwargs)
        self._changes.update(other)
        super().update(other)

    def __ior__(self, other: Iterable[Any]) -> TrackedDict[K, V]:  # type: ignore[override,misc]
        self.update(other)
        return self

    def clear(self) -> None:
        self._everything = True
        super().clear()

    def __reduce__(self) -> Any:
        return (TrackedDict, (dict(self),))
