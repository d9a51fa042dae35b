"""Which history files Spark's JSON file source reads exactly as ``from_json`` reads their lines.

``ingest`` parses the big kind (topic samples) with the JSON file source, which reads each line's
bytes straight into the parser, instead of the text source + ``from_json``, which copies each line
into a string first. The two agree on every line of a **plain** file -- ASCII only, no ``[``,
no tab -- and only there:

* a line holding a JSON array becomes one row per element in the file source (``[]``: no row at
  all), while ``from_json`` rejects it as one malformed line; a topic sample has no arrays, so a
  ``[`` anywhere sends the file to the text path;
* a tab-only line is skipped by the file source, while the text path (which skips lines blank
  after trimming spaces) rejects it as malformed;
* invalid UTF-8 makes the file source's parser fail, while ``from_json`` decodes it with
  replacement characters.

Files on a remote file system (a URI with a scheme other than ``file``) are not checked and count
as not plain: the text path handles them as before.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlparse

__all__ = ["is_plain_json_lines", "split_plain_files", "local_path"]

_CHUNK = 16 << 20


def local_path(uri: str) -> str | None:
    """The local path of ``uri``, or ``None`` for another file system.

    ``uri`` is a path as Hadoop prints it (``file:/tmp/a b.jsonl``: not percent-encoded, which is
    what Spark's file listing gives) or a plain absolute path. A path that does not name an existing
    file only makes :func:`is_plain_json_lines` say no -- the safe answer.
    """
    if uri.startswith("/"):
        return uri
    parsed = urlparse(uri)
    if parsed.scheme == "file" and parsed.netloc in ("", "localhost"):
        return uri[len("file:") :].removeprefix("//localhost").removeprefix("//")
    return None


def is_plain_json_lines(uri: str) -> bool:
    """True when ``uri`` is a readable local file of ASCII bytes without ``[`` or a tab (module docstring)."""
    path = local_path(uri)
    if path is None or not os.path.isfile(path):
        return False
    try:
        with open(path, "rb") as f:
            while chunk := f.read(_CHUNK):
                if not chunk.isascii() or b"[" in chunk or b"\t" in chunk:
                    return False
    except OSError:
        return False
    return True


def split_plain_files(uris: Iterable[str], threads: int = 4) -> tuple[list[str], list[str]]:
    """``(plain, other)``: ``uris`` split by :func:`is_plain_json_lines`, order kept; files checked in parallel."""
    uris = list(uris)
    with ThreadPoolExecutor(max_workers=max(1, min(threads, len(uris)))) as pool:
        verdicts = list(pool.map(is_plain_json_lines, uris))
    return (
        [u for u, ok in zip(uris, verdicts, strict=True) if ok],
        [u for u, ok in zip(uris, verdicts, strict=True) if not ok],
    )
