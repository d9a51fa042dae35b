"""The broker.conf file format: Java ``.properties``, as Pulsar reads it (``Properties.load``).

* a line whose first non-blank character is ``#`` or ``!`` is a comment; blank lines
  are skipped;
* the key ends at the first unescaped ``=``, ``:`` or white space; white space around
  the separator is skipped (``key = value``, ``key: value`` and ``key value`` all work);
* a line ending in an odd number of backslashes continues on the next line (leading
  white space of the continuation is dropped);
* escapes ``\\t \\n \\r \\f \\uXXXX`` are decoded, any other escaped character stands
  for itself (``\\=``, ``\\:``, ``\\\\``, ``\\ ``).

Pulsar then trims each value, so trailing white space does not matter either. The last
occurrence of a key wins.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["PropertyLine", "parse_properties", "format_properties", "escape_key", "escape_value"]

_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_SEPARATORS = "=:"
_WHITESPACE = " \t\f"


@dataclass(frozen=True)
class PropertyLine:
    """One ``key=value`` entry and the (first) line number it was read from."""

    key: str
    value: str
    line: int


def parse_properties(text: str) -> list[PropertyLine]:
    """Every entry of a properties text, in file order (duplicates kept; later ones win)."""
    entries: list[PropertyLine] = []
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        start = index
        logical = lines[index].lstrip(_WHITESPACE)
        index += 1
        if not logical or logical[0] in "#!":
            continue
        while _continues(logical) and index < len(lines):
            logical = logical[:-1] + lines[index].lstrip(_WHITESPACE)
            index += 1
        if _continues(logical):
            logical = logical[:-1]
        key, value = _split(logical)
        entries.append(PropertyLine(key, value, start + 1))
    return entries


def _continues(line: str) -> bool:
    trailing = len(line) - len(line.rstrip("\\"))
    return trailing % 2 == 1


def _split(line: str) -> tuple[str, str]:
    """Split a logical line into unescaped key and value."""
    i = 0
    while i < len(line):
        c = line[i]
        if c == "\\":
            i += 2
            continue
        if c in _SEPARATORS or c in _WHITESPACE:
            break
        i += 1
    key_part = line[:i]
    rest = line[i:].lstrip(_WHITESPACE)
    if rest[:1] and rest[0] in _SEPARATORS:
        rest = rest[1:].lstrip(_WHITESPACE)
    return _unescape(key_part), _unescape(rest)


def _unescape(text: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c != "\\" or i + 1 >= len(text):
            out.append(c)
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "u" and _is_hex4(text[i + 2 : i + 6]):
            out.append(chr(int(text[i + 2 : i + 6], 16)))
            i += 6
            continue
        out.append(_ESCAPES.get(nxt, nxt))
        i += 2
    return "".join(out)


def _is_hex4(text: str) -> bool:
    return len(text) == 4 and all(c in "0123456789abcdefABCDEF" for c in text)


def escape_key(key: str) -> str:
    return "".join("\\" + c if c in "=: \t#!\\" else _escape_control(c) for c in key)


def escape_value(value: str) -> str:
    out = []
    for i, c in enumerate(value):
        if c == "\\":
            out.append("\\\\")
        elif c in _WHITESPACE and i == 0:
            out.append("\\" + c if c == " " else _escape_control(c))
        else:
            out.append(_escape_control(c))
    return "".join(out)


def _escape_control(c: str) -> str:
    for letter, char in _ESCAPES.items():
        if c == char:
            return "\\" + letter
    return c


def format_properties(pairs: Iterable[tuple[str, str]], header: str | None = None) -> str:
    """Write ``key=value`` lines that :func:`parse_properties` reads back exactly."""
    lines = [f"# {header}"] if header else []
    lines.extend(f"{escape_key(k)}={escape_value(v)}" for k, v in pairs)
    return "\n".join(lines) + "\n"
