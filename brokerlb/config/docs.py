"""Render the key registry as ``docs/configuration.md`` (``brokerlb config keys --markdown``)."""

from __future__ import annotations

from typing import Any

from brokerlb.config.registry import ConfigKey, KeyRegistry
from brokerlb.config.service_config import KEY_GROUPS, REGISTRY

__all__ = ["render_markdown", "format_default", "format_value", "key_rows"]

_INTRO = """\
# brokerlb configuration

brokerlb reads Pulsar's `broker.conf`: the same key names, the same defaults (Pulsar 4.x,
`ServiceConfiguration` read at apache/pulsar commit 0023b9371b30), the same file format.
This page is generated from the key registry (`brokerlb/config/keys_*.py`) by
`brokerlb config keys --markdown > docs/configuration.md`; a unit test keeps it current.

```bash
brokerlb config show --config broker.conf --set loadBalancerSheddingIntervalMinutes=0.05
brokerlb config show --json                    # every effective value as JSON
brokerlb config keys                           # this table in the terminal
```

```python
from brokerlb.config import ServiceConfig, load_broker_conf

conf = load_broker_conf("broker.conf", overrides=["clusterName=test"])
conf.loadBalancerBrokerOverloadedThresholdPercentage  # 85
conf.with_overrides({"loadBalancerSheddingEnabled": False})
```

## Reading values

* **File format**: Java properties as Pulsar loads them -- `key=value` (also `key: value`
  and `key value`), `#` and `!` comment lines, blank lines, `\\` line continuation and
  escapes; values are trimmed; the last occurrence of a key wins. `--set key=value`
  overrides the file.
* **Blank values** behave as in Pulsar: a scalar key keeps its default, a list becomes
  empty, an optional value becomes unset (e.g. `webServicePortTls=` = no TLS port).
* **Booleans**: `true` or `false` in any case. *brokerlb rejects anything else*; Java
  would silently read e.g. `yes` as false.
* **Numbers**: `int`/`long` are decimal integers in the Java range; `double` is a finite
  decimal number (NaN and infinities are refused). The bounds in the table are brokerlb's
  (Pulsar has none on these keys): a value outside them -- a negative percentage, a zero
  interval -- is refused with an error naming the key and the value. The intervals of
  periodic tasks have a floor in seconds whatever their unit (`>= 0.5 s` in the table):
  `loadBalancerSheddingIntervalMinutes=1e-9` would run the leader's cycle without pause.
* **Intervals**: *brokerlb deviation* -- keys in minutes (`...Minutes`) and the extensible
  manager's keys in seconds (`...InSeconds`) also take fractions, e.g.
  `loadBalancerSheddingIntervalMinutes=0.05` runs shedding every 3 seconds. Whole numbers
  read exactly as in Pulsar.
* **Lists** are comma-separated; items are trimmed and empty items dropped.
* **Strategy keys** (`loadManagerClassName`, `loadBalancerLoadSheddingStrategy`,
  `loadBalancerLoadPlacementStrategy`, ...) take Pulsar's class name or its short name
  (`ThresholdShedder`); the decision engine resolves them (`short_class_name`).
* **Unknown keys** warn (`UnknownConfigKeyWarning`, with the closest known names) and are
  ignored; Pulsar keys brokerlb does not model (BookKeeper, managed ledger, TLS, ...) are
  skipped silently. `ServiceConfig(key=...)` in code and `from_mapping(..., strict=True)`
  raise `UnknownConfigKeyError` instead.
* **Checks across keys**: `defaultNamespaceBundleSplitAlgorithm` must be one of
  `supportedNamespaceBundleSplitAlgorithms` and not `specified_positions_divide`;
  `loadBalancerServiceUnitStateTombstoneDelayTimeInSeconds` × 1000 must be at least
  `loadBalancerInFlightServiceUnitStateWaitingTimeInMillis` (Pulsar's channel refuses to
  start otherwise); one of `webServicePort`/`webServicePortTls` and one of
  `brokerServicePort`/`brokerServicePortTls` must be set;
  `loadBalancerAvgShedderLowThreshold` must not exceed `loadBalancerAvgShedderHighThreshold`.
* **Dynamic** keys (column "dyn") are those Pulsar lets `pulsar-admin brokers
  update-dynamic-config` change at run time; `with_overrides(..., dynamic_only=True)`
  refuses the others. An update is checked as strictly as broker.conf at start-up (kind,
  bounds, cross-key rules, `loadManagerClassName`) and its strategy name must resolve; a
  value refused is answered 412 naming why, and nothing changes on any broker. *brokerlb
  deviation*: at start-up an unknown `loadBalancerLoadSheddingStrategy` falls back to the
  default as in Pulsar, at run time it is refused; `loadManagerClassName` must name one of the
  two load managers brokerlb implements (Pulsar fails later, when it loads the class).
"""


def format_value(config_key: ConfigKey, value: Any) -> str:
    """A value as broker.conf would spell it; ``(unset)`` for None, ``(empty)`` for ``[]``."""
    if value is None:
        return "(unset)"
    text = config_key.to_text(value)
    return text if text else "(empty)"


def format_default(config_key: ConfigKey) -> str:
    return format_value(config_key, config_key.default)


def key_rows(registry: KeyRegistry = REGISTRY) -> list[dict[str, Any]]:
    """One JSON-friendly row per key (for ``brokerlb config keys --json``)."""
    rows = []
    for k in registry:
        rows.append(
            {
                "key": k.name,
                "type": k.kind.name,
                "default": k.to_json(k.default),
                "dynamic": k.dynamic,
                "category": k.category,
                "doc": k.doc,
                "required": k.required,
                "deprecated": k.deprecated,
                "constraints": k.describe_constraints() or None,
                "unit": k.unit,
                "deviation": k.deviation,
                "aliases": [a.old for a in registry.aliases_of(k.name)],
            }
        )
    return rows


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _doc_cell(k: ConfigKey, registry: KeyRegistry) -> str:
    parts = [k.doc]
    if k.required:
        parts.append("**Required.**")
    if k.deprecated:
        parts.append(f"**Deprecated**: {k.deprecated}.")
    for alias in registry.aliases_of(k.name):
        parts.append(f"Old name `{alias.old}`: {alias.explanation}.")
    if k.deviation:
        parts.append(f"*brokerlb*: {k.deviation}")
    return _cell(" ".join(parts))


def render_markdown(registry: KeyRegistry = REGISTRY) -> str:
    out = [_INTRO]
    by_category = registry.by_category()
    for group in KEY_GROUPS:
        keys = by_category.get(group.CATEGORY, [])
        if not keys:
            continue
        out.append(f"## {group.CATEGORY}\n")
        if group.INTRO:
            out.append(f"{group.INTRO}\n")
        out.append("| key | type | default | bounds | dyn | description |")
        out.append("|---|---|---|---|---|---|")
        for k in keys:
            default = _cell(format_default(k))
            out.append(
                f"| `{k.name}` | `{k.kind.name}` | `{default}` | {k.describe_constraints()} | "
                f"{'yes' if k.dynamic else ''} | {_doc_cell(k, registry)} |"
            )
        out.append("")
    out.append("## Deprecated aliases\n")
    out.append("| old key | key | resolution |")
    out.append("|---|---|---|")
    for alias in registry.aliases.values():
        out.append(f"| `{alias.old}` | `{alias.new}` | {_cell(alias.explanation)} |")
    out.append("")
    out.append("## Pulsar keys read and ignored\n")
    out.append(
        "These keys of Pulsar's `ServiceConfiguration` are accepted without a warning and "
        "have no effect in brokerlb:\n"
    )
    out.append(", ".join(f"`{name}`" for name in sorted(registry.ignored)) + "\n")
    return "\n".join(out)
