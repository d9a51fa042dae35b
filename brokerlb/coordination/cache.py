"""A watch-fed mirror of a subtree: reads become memory reads.

:class:`TreeCache` watches the children of every directory node below ``root``
and the data of every leaf (a predicate decides what is a leaf), so that
``cache.get(path)`` answers from memory. Listeners hear about every leaf that
appears, changes or disappears. The broker registry mirrors
``/loadbalance/brokers`` with it, the ownership cache mirrors ``/namespace``.

The mirror is eventually consistent: a change shows up after the watch event
arrives (sub-millisecond on loopback ZooKeeper, one loop turn in memory).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine, Iterator
from functools import partial
from typing import Any

from brokerlb.coordination.store import MetadataStore, Node, join_path
from brokerlb.coordination.watches import ChildrenWatch, DataWatch

__all__ = ["TreeCache", "LeafListener"]

logger = logging.getLogger(__name__)

#: ``listener(path, node)``: a leaf appeared or changed (``node``) or went away (``None``).
LeafListener = Callable[[str, Node | None], None]


class TreeCache:
    """Mirror of the leaves under ``root``.

    ``is_leaf(path, depth)`` says whether the node at ``path`` (``depth`` levels
    below ``root``) is a leaf, whose data is cached; other nodes are directories,
    whose children are watched, down to ``max_depth``.
    """

    def __init__(
        self, store: MetadataStore, root: str, *, is_leaf: Callable[[str, int], bool], max_depth: int = 8
    ) -> None:
        self.store = store
        self.root = root
        self._is_leaf = is_leaf
        self._max_depth = max_depth
        self._dirs: dict[str, ChildrenWatch] = {}
        self._kids: dict[str, set[str]] = {}
        self._leaf_watches: dict[str, DataWatch] = {}
        self._leaves: dict[str, Node] = {}
        self._listeners: list[LeafListener] = []
        self._pending: set[asyncio.Task[object]] = set()
        self._started = False

    # ------------------------------------------------------------------ reading
    def get(self, path: str) -> Node | None:
        return self._leaves.get(path)

    def __contains__(self, path: object) -> bool:
        return path in self._leaves

    def __len__(self) -> int:
        return len(self._leaves)

    def items(self) -> Iterator[tuple[str, Node]]:
        return iter(list(self._leaves.items()))

    def paths(self) -> list[str]:
        return sorted(self._leaves)

    def add_listener(self, listener: LeafListener) -> Callable[[], None]:
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    # ------------------------------------------------------------------ life cycle
    async def start(self) -> TreeCache:
        """Start watching; returns when the current tree has been loaded."""
        if not self._started:
            self._started = True
            self._watch_dir(self.root, 0)
        await self.settled()
        return self

    async def settled(self) -> None:
        """Wait until every watch started so far has delivered its first value."""
        while self._pending:
            await asyncio.gather(*list(self._pending), return_exceptions=True)

    def close(self) -> None:
        for watch in list(self._dirs.values()) + list(self._leaf_watches.values()):
            watch.cancel()
        for task in self._pending:
            task.cancel()
        self._dirs.clear()
        self._kids.clear()
        self._leaf_watches.clear()
        self._leaves.clear()
        self._started = False

    # ------------------------------------------------------------------ internals
    def _spawn(self, coro: Coroutine[Any, Any, object], name: str) -> None:
        task: asyncio.Task[object] = asyncio.create_task(coro, name=name)
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    def _watch_dir(self, path: str, depth: int) -> None:
        watch = self.store.watch_children(path, partial(self._on_children, path, depth))
        self._dirs[path] = watch
        self._kids[path] = set()
        self._spawn(watch.start(), f"tree-cache dir {path}")

    def _watch_leaf(self, path: str) -> None:
        watch = self.store.watch_data(path, partial(self._on_leaf, path))
        self._leaf_watches[path] = watch
        self._spawn(watch.start(), f"tree-cache leaf {path}")

    def _on_children(self, path: str, depth: int, names: list[str] | None) -> None:
        if path not in self._dirs:
            return
        known = self._kids[path]
        current = set(names or ())
        for name in sorted(current - known):
            child = join_path(path, name)
            if self._is_leaf(child, depth + 1):
                self._watch_leaf(child)
            elif depth + 1 < self._max_depth:
                self._watch_dir(child, depth + 1)
        for name in sorted(known - current):
            self._forget(join_path(path, name))
        self._kids[path] = current

    def _on_leaf(self, path: str, node: Node | None) -> None:
        if path not in self._leaf_watches:
            return
        if node is None:
            if self._leaves.pop(path, None) is not None:
                self._emit(path, None)
        else:
            self._leaves[path] = node
            self._emit(path, node)

    def _forget(self, path: str) -> None:
        leaf = self._leaf_watches.pop(path, None)
        if leaf is not None:
            leaf.cancel()
            if self._leaves.pop(path, None) is not None:
                self._emit(path, None)
        directory = self._dirs.pop(path, None)
        if directory is not None:
            directory.cancel()
            for name in sorted(self._kids.pop(path, set())):
                self._forget(join_path(path, name))

    def _emit(self, path: str, node: Node | None) -> None:
        for listener in list(self._listeners):
            try:
                listener(path, node)
            except Exception:
                logger.exception("Tree cache listener failed for %s", path)
