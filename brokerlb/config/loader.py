"""Load a broker.conf file plus ``--set key=value`` overrides into a :class:`ServiceConfig`.

The file and the overrides form one set of properties (an override replaces the file's
value of the same key), which is then read like Pulsar's ``PulsarConfigurationLoader``:
blank values keep defaults (lists become empty, optional values unset), deprecated aliases
are resolved, unknown keys warn. A bad value raises
:class:`~brokerlb.errors.InvalidConfigError` naming the key, the value and where it came
from (file and line, or ``--set``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from brokerlb.config.properties import parse_properties
from brokerlb.config.service_config import ServiceConfig
from brokerlb.errors import InvalidConfigError, UnknownConfigKeyError

__all__ = ["load_broker_conf", "parse_broker_conf", "parse_overrides"]


def parse_broker_conf(text: str) -> tuple[dict[str, str], dict[str, int]]:
    """The properties of a broker.conf text and the line each key was (last) set on."""
    values: dict[str, str] = {}
    lines: dict[str, int] = {}
    for entry in parse_properties(text):
        values[entry.key] = entry.value
        lines[entry.key] = entry.line
    return values, lines


def parse_overrides(overrides: Iterable[str]) -> dict[str, str]:
    """``["k=v", ...]`` (as given to ``--set``) → ``{"k": "v"}``; the value may contain ``=``."""
    result: dict[str, str] = {}
    for item in overrides:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise InvalidConfigError(name.strip() or item, item, "an override must look like key=value")
        result[name.strip()] = value.strip()
    return result


def load_broker_conf(
    path: str | Path | None = None, overrides: Iterable[str] | Mapping[str, Any] = (), *, strict: bool = False
) -> ServiceConfig:
    """Read ``path`` (broker.conf format; None = no file) and apply ``overrides``.

    ``overrides`` is a list of ``"key=value"`` strings (``--set``) or a mapping.
    """
    file_values: dict[str, str] = {}
    lines: dict[str, int] = {}
    source = str(path) if path is not None else None
    if path is not None:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise InvalidConfigError("--config", str(path), f"cannot read the file: {exc.strerror}") from exc
        except UnicodeDecodeError as exc:
            raise InvalidConfigError("--config", str(path), "the file is not UTF-8 text") from exc
        file_values, lines = parse_broker_conf(text)
    override_values = dict(overrides) if isinstance(overrides, Mapping) else parse_overrides(overrides)
    merged: dict[str, Any] = {**file_values, **override_values}
    try:
        return ServiceConfig.from_mapping(merged, strict=strict, source=source)
    except InvalidConfigError as exc:
        raise _locate(exc, source, lines, override_values) from None


def _locate(
    exc: InvalidConfigError, source: str | None, lines: dict[str, int], overrides: Mapping[str, Any]
) -> InvalidConfigError:
    if exc.key in overrides:
        where = "--set"
    elif exc.key in lines:
        where = f"{source}:{lines[exc.key]}"
    else:
        return exc
    if isinstance(exc, UnknownConfigKeyError):
        unknown = UnknownConfigKeyError(exc.key, exc.suggestions)
        unknown.args = (f"{unknown.args[0]} [{where}]",)
        return unknown
    return InvalidConfigError(exc.key, exc.value, f"{exc.why} [{where}]")
