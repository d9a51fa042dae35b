"""Semantic versions as Pulsar's broker-version filter reads them (jsemver ``Version.valueOf``).

Strict SemVer 2.0.0: ``MAJOR.MINOR.PATCH[-pre.release][+build.meta]``; ``3.1.0-SNAPSHOT``
is valid, ``3.1`` or ``v3.1.0`` are not (:func:`parse_version` returns ``None``).

* :meth:`Version.precedence_key` orders by SemVer precedence: numbers, then a pre-release
  sorts before the release, identifiers compare numerically or in ASCII order, numeric
  identifiers before alphanumeric ones, a shorter prefix first. Build metadata is ignored,
  so ``1.2.0+a`` and ``1.2.0+b`` are *equal* (jsemver's ``equals``).
* :func:`build_aware_key` is jsemver's ``BUILD_AWARE_ORDER``, used to find the newest version:
  at equal precedence a version with build metadata sorts after one without, and build
  identifiers compare like pre-release ones. (Pulsar only uses it to pick the maximum.)

>>> sorted(["1.10.0", "1.2.0", "1.2.0-SNAPSHOT"], key=lambda v: parse_version(v).precedence_key())
['1.2.0-SNAPSHOT', '1.2.0', '1.10.0']
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Version", "parse_version", "build_aware_key"]

_IDENT = r"(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)"
_SEMVER = re.compile(
    r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    rf"(?:-({_IDENT}(?:\.{_IDENT})*))?"
    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?"
)


def _ident_key(ident: str) -> tuple[int, int, str]:
    return (0, int(ident), "") if ident.isdigit() else (1, 0, ident)


@dataclass(frozen=True, slots=True)
class Version:
    """A parsed semantic version."""

    major: int
    minor: int
    patch: int
    pre_release: tuple[str, ...] = ()
    build: tuple[str, ...] = ()

    def precedence_key(self) -> tuple[object, ...]:
        """Key for SemVer precedence (build metadata ignored)."""
        release = (self.major, self.minor, self.patch)
        if not self.pre_release:
            return (release, 1, ())
        return (release, 0, tuple(_ident_key(i) for i in self.pre_release))

    def __str__(self) -> str:
        text = f"{self.major}.{self.minor}.{self.patch}"
        if self.pre_release:
            text += "-" + ".".join(self.pre_release)
        if self.build:
            text += "+" + ".".join(self.build)
        return text


def parse_version(text: str | None) -> Version | None:
    """The version in ``text``, or ``None`` when it is missing or not strict SemVer."""
    if not text:
        return None
    match = _SEMVER.fullmatch(text.strip())
    if match is None:
        return None
    major, minor, patch, pre, build = match.groups()
    return Version(
        int(major),
        int(minor),
        int(patch),
        tuple(pre.split(".")) if pre else (),
        tuple(build.split(".")) if build else (),
    )


def build_aware_key(version: Version) -> tuple[object, ...]:
    """jsemver ``BUILD_AWARE_ORDER`` as a sort key (see the module docstring)."""
    build = (1, tuple(_ident_key(i) for i in version.build)) if version.build else (0, ())
    return (version.precedence_key(), build)
