"""Regexes from users (isolation policies) matched in linear time with RE2.

Pulsar matches isolation-policy patterns with Java's backtracking engine, so a pattern such
as ``(a+)+$`` takes time exponential in the length of the name it is tried on; in brokerlb
that would stall the broker's event loop on every placement. RE2 (``google-re2``) matches in
time linear in the input for every pattern it accepts. It accepts the regex syntax used for
host, broker and namespace names (classes, alternation, repetition, anchors, groups) and
refuses backreferences and lookaround: such a pattern is refused when the policy is set
(400, naming the pattern and RE2's reason), never tried.

>>> fullmatch("broker-[0-9]+", "broker-12")
True
>>> fullmatch("(a+)+$", "a" * 100_000 + "b")
False
>>> check_pattern("(a)\\\\1", "primary")
Traceback (most recent call last):
...
brokerlb.errors.InvalidInputError: Invalid namespace isolation policy: 'primary' regex '(a)\\\\1' does not compile with the linear-time regex engine (RE2: no backreferences or lookaround): invalid escape sequence: \\1
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import re2

from brokerlb.errors import InvalidInputError

__all__ = ["check_pattern", "compile_pattern", "fullmatch"]

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # errors are raised (and answered), not printed on stderr


def _why(exc: Exception) -> str:
    arg = exc.args[0] if exc.args else exc
    return arg.decode("utf-8", "replace") if isinstance(arg, bytes) else str(arg)


@lru_cache(maxsize=4096)
def compile_pattern(pattern: str) -> Any:
    """The compiled RE2 pattern; raises ``re2.error`` when RE2 refuses it."""
    return re2.compile(pattern, _OPTIONS)


def check_pattern(pattern: str, field: str, what: str = "namespace isolation policy") -> None:
    """Refuse (400) a pattern RE2 cannot compile, naming ``field`` and RE2's reason."""
    try:
        compile_pattern(pattern)
    except re2.error as exc:
        raise InvalidInputError(
            f"Invalid {what}: '{field}' regex {pattern!r} does not compile with the linear-time regex "
            f"engine (RE2: no backreferences or lookaround): {_why(exc)}"
        ) from None


def fullmatch(pattern: str, text: str) -> bool:
    """Whether ``text`` matches ``pattern`` as a whole (Java's ``String.matches``); a refused pattern matches nothing."""
    try:
        compiled = compile_pattern(pattern)
    except re2.error:
        return False
    return compiled.fullmatch(text) is not None
