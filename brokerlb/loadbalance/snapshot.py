"""Cluster snapshots: the planner's input, as JSON with Pulsar's field names (docs/snapshot.md).

:func:`parse_snapshot` validates a snapshot document and builds a
:class:`~brokerlb.loadbalance.view.ClusterView`; :func:`snapshot_to_json` writes one back
(``parse_snapshot(snapshot_to_json(v))`` gives an equal view). A bad field raises
:class:`~brokerlb.errors.InvalidSnapshotError` whose ``path`` names it, e.g.
``brokers[b1:8080].localData.cpu.usage`` or ``config.loadBalancerSheddingEnabled``.

The data are taken as given: ``bundleData``, time averages and ``brokerLoadData`` are already
aggregated. Two conveniences fill what is left out:

* a broker without ``timeAverageData`` gets Pulsar's sums over its ``lastStats`` bundles
  (unknown bundles count 50 msg/s and 50 000 B/s, in and out);
* a ``bundleData`` window without ``maxSamples`` is a full window (10 short / 1000 long
  samples); without ``numSamples`` it counts as full too (a settled history).

A broker entry may be the bare ``LocalBrokerData`` instead of ``{"localData": ...}``.
Top-level keys starting with ``_`` and ``description``/``comment``/``name``/``source`` are
ignored (room for notes); any other unknown key is an error, so a typo never goes unseen.

Accepted with a **warning** (what Pulsar accepts, but brokerlb does not use as written): a
``config`` key of Pulsar's ``ServiceConfiguration`` that brokerlb does not model (BookKeeper,
managed ledger, TLS, ...), and a window whose ``numSamples`` exceeds its ``maxSamples`` (kept as
given; the next sample caps it, as in Pulsar). Warnings go to ``warn`` when given (the planner
puts them in its answer), else they are issued as :class:`~brokerlb.errors.SnapshotWarning`.
:func:`snapshot_from_load_reports` builds a snapshot from ``pulsar-admin broker-stats
load-report`` files.
"""

from __future__ import annotations

import json
import re
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from brokerlb.config import ServiceConfig
from brokerlb.errors import (
    InvalidConfigError,
    InvalidLoadDataError,
    InvalidSnapshotError,
    SnapshotWarning,
    UnknownConfigKeyError,
)
from brokerlb.loadbalance.broker_lookup import BrokerLookupData
from brokerlb.loadbalance.policies import FailureDomain, NamespaceIsolationData, NamespacePolicy
from brokerlb.loadbalance.view import ClusterView
from brokerlb.model import (
    NUM_LONG_SAMPLES,
    NUM_SHORT_SAMPLES,
    BrokerData,
    BrokerLoadData,
    BundleData,
    BundleLoadData,
    LoadData,
    LocalBrokerData,
    NamespaceBundleStats,
    TimeAverageBrokerData,
    TopBundlesLoadData,
)

__all__ = [
    "SNAPSHOT_KEYS",
    "parse_snapshot",
    "load_snapshot",
    "read_snapshot_text",
    "snapshot_to_json",
    "snapshot_from_load_reports",
]

T = TypeVar("T")

#: Top-level keys of a snapshot document.
SNAPSHOT_KEYS = (
    "now",
    "config",
    "brokers",
    "bundleData",
    "recentlyUnloadedBundles",
    "recentlyUnloadedBrokers",
    "namespacePolicies",
    "isolationPolicies",
    "failureDomains",
    "brokerLoadData",
    "topBundlesLoadData",
    "brokerLookupData",
    "ownership",
)
_NOTE_KEYS = frozenset({"description", "comment", "name", "source"})
_BROKER_KEYS = ("localData", "timeAverageData", "preallocatedBundleData")
_LOAD_DATA_WHY = re.compile(r"^Invalid load data: .*? = .*?: (?P<why>[^:]+)$", re.S)


# --------------------------------------------------------------------------- reading


def read_snapshot_text(text: str, source: str = "snapshot") -> Any:
    """Decode JSON text; broken JSON raises :class:`InvalidSnapshotError` with the position."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidSnapshotError(f"{source} is not valid JSON: {exc}") from exc


def load_snapshot(path: str | Path, *, now_ms: int | None = None) -> ClusterView:
    """Read and parse a snapshot file."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise InvalidSnapshotError(f"cannot read snapshot file {path}: {exc.strerror or exc}") from exc
    return parse_snapshot(read_snapshot_text(text, str(path)), now_ms=now_ms)


def parse_snapshot(
    data: Any, *, now_ms: int | None = None, warn: Callable[[str], None] | None = None
) -> ClusterView:
    """Validate a snapshot document and build the view.

    ``now_ms`` is the clock to use when the snapshot has no ``now`` (the caller reads its
    clock; this function never does). Neither given -> error. ``warn`` receives one sentence per
    value accepted with a warning (module docstring); without it they are issued as
    :class:`~brokerlb.errors.SnapshotWarning`.
    """
    notes: list[str] = []
    view = _parse(data, now_ms, notes)
    for note in notes:
        if warn is not None:
            warn(note)
        else:
            warnings.warn(note, SnapshotWarning, stacklevel=2)
    return view


def _parse(data: Any, now_ms: int | None, notes: list[str]) -> ClusterView:
    doc = _object(data, "")
    unknown = [k for k in doc if k not in SNAPSHOT_KEYS and k not in _NOTE_KEYS and not k.startswith("_")]
    if unknown:
        raise InvalidSnapshotError(
            f"unknown key(s) {', '.join(map(repr, sorted(unknown)))}; known: {', '.join(SNAPSHOT_KEYS)}"
        )
    now = doc.get("now", now_ms)
    if now is None:
        raise InvalidSnapshotError("no 'now' in the snapshot and no clock given", path="now")
    now = _timestamp(now, "now")
    config = _config(doc.get("config"), notes)

    def bundle_data_of(item: Any, path: str) -> BundleData:
        return _bundle_data(item, path, notes)

    bundle_data = _map(doc, "bundleData", bundle_data_of)
    brokers = _map(doc, "brokers", lambda item, path: _broker(item, path, bundle_data, notes))
    recently_unloaded = _map(doc, "recentlyUnloadedBundles", _timestamp)
    return ClusterView(
        config=config,
        now_ms=now,
        load_data=LoadData(brokers, bundle_data, recently_unloaded),
        broker_load_data=_map(doc, "brokerLoadData", _model(BrokerLoadData.from_json)),
        top_bundles=_map(doc, "topBundlesLoadData", _top_bundles),
        broker_lookup_data=_map(doc, "brokerLookupData", BrokerLookupData.from_json),
        ownership=_map(doc, "ownership", _text),
        recently_unloaded_brokers=_map(doc, "recentlyUnloadedBrokers", _timestamp),
        namespace_policies={
            ns: NamespacePolicy.from_json(ns, item, f"namespacePolicies[{ns}]")
            for ns, item in _entries(doc, "namespacePolicies")
        },
        isolation_policies=_map(doc, "isolationPolicies", NamespaceIsolationData.from_json),
        failure_domains=_map(doc, "failureDomains", FailureDomain.from_json),
    )


def _object(data: Any, path: str) -> Mapping[str, Any]:
    if not isinstance(data, Mapping):
        raise InvalidSnapshotError("expected a JSON object", path=path or None, value=_short(data))
    return data


def _short(value: Any) -> Any:
    text = repr(value)
    return value if len(text) <= 80 else f"{text[:77]}..."


def _entries(doc: Mapping[str, Any], key: str) -> list[tuple[str, Any]]:
    value = doc.get(key)
    if value is None:
        return []
    obj = _object(value, key)
    for name in obj:
        if not isinstance(name, str):
            raise InvalidSnapshotError("keys must be strings", path=key, value=name)
    return list(obj.items())


def _map(doc: Mapping[str, Any], key: str, read: Callable[[Any, str], T]) -> dict[str, T]:
    return {name: read(item, f"{key}[{name}]") for name, item in _entries(doc, key)}


def _model(read: Callable[[Any, str], T]) -> Callable[[Any, str], T]:
    """Wrap a ``brokerlb.model`` reader: its InvalidLoadDataError becomes InvalidSnapshotError."""

    def wrapped(item: Any, path: str) -> T:
        try:
            return read(item, path)
        except InvalidLoadDataError as exc:
            match = _LOAD_DATA_WHY.match(str(exc))
            why = match.group("why") if match else str(exc)
            raise InvalidSnapshotError(why, path=exc.field or path, value=_short(exc.value)) from exc

    return wrapped


def _timestamp(value: Any, path: str) -> int:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidSnapshotError(
            "expected a time in ms since the epoch (integer >= 0)", path=path, value=_short(value)
        )
    return value


def _text(value: Any, path: str) -> str:
    if not isinstance(value, str) or not value:
        raise InvalidSnapshotError("expected a non-empty string", path=path, value=_short(value))
    return value


def _config(value: Any, notes: list[str]) -> ServiceConfig:
    if value is None:
        return ServiceConfig()
    overrides = _object(value, "config")
    ignored = ServiceConfig.registry.ignored
    for key in overrides:
        if str(key).strip() in ignored:
            notes.append(f"config.{key}: a Pulsar key brokerlb does not model; accepted and ignored")
    try:
        return ServiceConfig.from_mapping(overrides, strict=True, source="snapshot config")
    except UnknownConfigKeyError as exc:
        raise InvalidSnapshotError(str(exc), path=f"config.{exc.key}") from exc
    except InvalidConfigError as exc:
        raise InvalidSnapshotError(exc.why, path=f"config.{exc.key}", value=exc.value) from exc


def _filled_window(window: Any, max_samples: int) -> Any:
    if not isinstance(window, Mapping) or "maxSamples" in window and "numSamples" in window:
        return window
    filled = dict(window)
    filled.setdefault("maxSamples", max_samples)
    filled.setdefault("numSamples", filled["maxSamples"])
    return filled


def _bundle_data(item: Any, path: str, notes: list[str]) -> BundleData:
    obj = dict(_object(item, path))
    for key, size in (("shortTermData", NUM_SHORT_SAMPLES), ("longTermData", NUM_LONG_SAMPLES)):
        if obj.get(key) is not None:
            obj[key] = _filled_window(obj[key], size)
    data = _model(BundleData.from_json)(obj, path)
    for key, window in (("shortTermData", data.short_term_data), ("longTermData", data.long_term_data)):
        if window.num_samples > window.max_samples:
            notes.append(
                f"{path}.{key}.numSamples = {window.num_samples} exceeds maxSamples {window.max_samples}: "
                "accepted as Pulsar does (a full window; the next sample caps the count)"
            )
    return data


def _broker(item: Any, path: str, bundle_data: Mapping[str, BundleData], notes: list[str]) -> BrokerData:
    obj = _object(item, path)
    if "localData" not in obj:
        if any(key in obj for key in _BROKER_KEYS):
            raise InvalidSnapshotError("'localData' is required", path=f"{path}.localData")
        obj = {"localData": obj}  # a bare LocalBrokerData
    unknown = [k for k in obj if k not in _BROKER_KEYS and not k.startswith("_")]
    if unknown:
        raise InvalidSnapshotError(
            f"unknown key(s) {', '.join(map(repr, sorted(unknown)))}; known: {', '.join(_BROKER_KEYS)}",
            path=path,
        )
    local = _model(LocalBrokerData.from_json)(obj["localData"], f"{path}.localData")
    if obj.get("timeAverageData") is not None:
        time_average = _model(TimeAverageBrokerData.from_json)(
            obj["timeAverageData"], f"{path}.timeAverageData"
        )
    else:
        time_average = TimeAverageBrokerData.of(
            local.last_stats, bundle_data, NamespaceBundleStats.new_default()
        )
    preallocated = _map(
        obj, "preallocatedBundleData", lambda data, where: _bundle_data(data, f"{path}.{where}", notes)
    )
    return BrokerData(local, time_average, {b: d for b, d in preallocated.items()})


def _top_bundles(item: Any, path: str) -> TopBundlesLoadData:
    if isinstance(item, Mapping):
        return _model(TopBundlesLoadData.from_json)(item, path)
    if not isinstance(item, list):
        raise InvalidSnapshotError("expected a list of {bundleName, stats}", path=path, value=_short(item))
    read = _model(BundleLoadData.from_json)
    return TopBundlesLoadData([read(entry, f"{path}[{i}]") for i, entry in enumerate(item)])


# --------------------------------------------------------------------------- writing


def snapshot_to_json(view: ClusterView) -> dict[str, Any]:
    """The snapshot document of ``view`` (config: only the keys that differ from the defaults)."""
    load = view.load_data
    out: dict[str, Any] = {"now": view.now_ms, "config": view.config.to_dict(changed_only=True)}
    out["brokers"] = {
        broker: {
            "localData": data.local_data.to_json(),
            "timeAverageData": data.time_average_data.to_json(),
            "preallocatedBundleData": {b: d.to_json() for b, d in data.preallocated_bundle_data.items()},
        }
        for broker, data in load.broker_data.items()
    }
    out["bundleData"] = {bundle: data.to_json() for bundle, data in load.bundle_data.items()}
    out["recentlyUnloadedBundles"] = dict(load.recently_unloaded_bundles)
    out["recentlyUnloadedBrokers"] = dict(view.recently_unloaded_brokers)
    out["namespacePolicies"] = {ns: p.to_json() for ns, p in view.namespace_policies.items()}
    out["isolationPolicies"] = {name: p.to_json() for name, p in view.isolation_policies.items()}
    out["failureDomains"] = {name: d.to_json() for name, d in view.failure_domains.items()}
    out["brokerLoadData"] = {b: d.to_json() for b, d in view.broker_load_data.items()}
    out["topBundlesLoadData"] = {
        b: [e.to_json() for e in t.top_bundles_load_data] for b, t in view.top_bundles.items()
    }
    out["brokerLookupData"] = {b: d.to_json() for b, d in view.broker_lookup_data.items()}
    out["ownership"] = dict(view.ownership)
    return out


# --------------------------------------------------------------------------- load reports


def snapshot_from_load_reports(directory: str | Path, *, now_ms: int | None = None) -> dict[str, Any]:
    """A snapshot document from ``pulsar-admin broker-stats load-report`` outputs, one JSON file per broker.

    The broker id is the ``host:port`` of the report's ``webServiceUrl`` (Pulsar's broker
    id), or the file name without ``.json`` when the report has no URL. Bundle histories are
    what the leader has after folding each report once (Pulsar's ``updateAll`` on a fresh
    leader: the default history, then this sample), and the time averages follow from them.
    ``now`` is ``now_ms`` if given, else the newest ``lastUpdate`` of the reports.
    """
    from brokerlb.loadbalance.refresh import LeaderLoadState, refresh

    folder = Path(directory)
    if not folder.is_dir():
        raise InvalidSnapshotError(f"load-report directory {directory} does not exist or is not a directory")
    files = sorted(p for p in folder.iterdir() if p.suffix == ".json" and p.is_file())
    if not files:
        raise InvalidSnapshotError(f"no *.json load reports in {directory}")
    reports: dict[str, LocalBrokerData] = {}
    for file in files:
        try:
            raw = read_snapshot_text(file.read_text(encoding="utf-8"), str(file))
        except OSError as exc:
            raise InvalidSnapshotError(f"cannot read {file}: {exc.strerror or exc}") from exc
        report = _model(LocalBrokerData.from_json)(raw, file.name)
        broker = _broker_id(report) or file.stem
        if broker in reports:
            raise InvalidSnapshotError(f"two load reports for broker {broker} ({file.name})", path=file.name)
        reports[broker] = report
    state = LeaderLoadState()
    refresh(state, reports)
    newest = max((r.last_update for r in reports.values()), default=0)
    view = ClusterView(now_ms=now_ms if now_ms is not None else newest, load_data=state.load_data)
    return snapshot_to_json(view)


def _broker_id(report: LocalBrokerData) -> str | None:
    from urllib.parse import urlsplit

    for url in (report.web_service_url, report.web_service_url_tls):
        if url:
            try:
                netloc = urlsplit(url).netloc
            except ValueError:
                continue
            if netloc:
                return netloc
    return None
