"""The topic hash: IEEE CRC-32 of the full UTF-8 topic name, as an unsigned 32-bit int.

Pulsar's ``NamespaceService`` builds its bundle factory with Guava's
``Hashing.crc32()``; ``padToLong()`` makes it the unsigned value in
``[0, 0xffffffff]``. The string hashed is ``TopicName.toString()`` -- the full
name with domain, each partition with its ``-partition-N`` suffix. The rule is
written once, in :func:`brokerlb.naming.topic_hash` (a parsed ``TopicName`` carries
its hash as ``ring_hash``); this module re-exports it with the vectorised form.

>>> hex(topic_hash("persistent://public/default/my-topic"))
'0x2bad45f7'
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING
from zlib import crc32

from brokerlb.naming import topic_hash

if TYPE_CHECKING:
    import numpy as np

__all__ = ["topic_hash", "topic_hashes", "FULL_LOWER_BOUND", "FULL_UPPER_BOUND", "MAX_BUNDLES"]

FULL_LOWER_BOUND = 0x00000000
FULL_UPPER_BOUND = 0xFFFFFFFF
#: Pulsar's ``MAX_BUNDLES = 1 << 32``.
MAX_BUNDLES = 1 << 32


def topic_hashes(full_names: Iterable[str], count: int = -1) -> np.ndarray:
    """Vectorised :func:`topic_hash` over many names: an ``int64`` array.

    ``count`` (the number of names, when known) lets numpy allocate once.
    """
    import numpy as np

    if count < 0 and isinstance(full_names, Sequence):
        count = len(full_names)
    return np.fromiter(map(crc32, map(str.encode, full_names)), dtype=np.int64, count=count)
