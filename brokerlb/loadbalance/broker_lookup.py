"""``BrokerLookupData``: what a broker registers with the extensible load manager (PIP-192).

Each broker writes one under ``/loadbalance/brokers/{brokerId}`` (broker registry). The
decision engine reads the version (``BrokerVersionFilter``), the topic-domain flags, the
load-manager class (``BrokerLoadManagerClassFilter``) and the URLs. JSON keys are Pulsar's::

    {"webServiceUrl": "http://b1:8080", "pulsarServiceUrl": "pulsar://b1:6650",
     "persistentTopicsEnabled": true, "nonPersistentTopicsEnabled": true,
     "loadManagerClassName": "org.apache.pulsar.broker.loadbalance.extensions.ExtensibleLoadManagerImpl",
     "startTimestamp": 1690940955211, "brokerVersion": "3.1.0"}

Missing keys take Pulsar's defaults (flags ``true``, strings ``None``); other keys are kept
in ``extra`` and written back.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from brokerlb.errors import InvalidSnapshotError

__all__ = ["BrokerLookupData"]

_TEXT_FIELDS = (
    ("web_service_url", "webServiceUrl"),
    ("web_service_url_tls", "webServiceUrlTls"),
    ("pulsar_service_url", "pulsarServiceUrl"),
    ("pulsar_service_url_tls", "pulsarServiceUrlTls"),
    ("load_manager_class_name", "loadManagerClassName"),
    ("broker_version", "brokerVersion"),
)


@dataclass(frozen=True, slots=True)
class BrokerLookupData:
    """A broker's registration in the extensible load manager's broker registry."""

    web_service_url: str | None = None
    web_service_url_tls: str | None = None
    pulsar_service_url: str | None = None
    pulsar_service_url_tls: str | None = None
    persistent_topics_enabled: bool = True
    non_persistent_topics_enabled: bool = True
    load_manager_class_name: str | None = None
    start_timestamp: int = 0
    broker_version: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = dict(self.extra)
        for attr, key in _TEXT_FIELDS:
            if getattr(self, attr) is not None:
                out[key] = getattr(self, attr)
        out["persistentTopicsEnabled"] = self.persistent_topics_enabled
        out["nonPersistentTopicsEnabled"] = self.non_persistent_topics_enabled
        out["startTimestamp"] = self.start_timestamp
        return out

    @classmethod
    def from_json(cls, data: Any, path: str = "") -> BrokerLookupData:
        if not isinstance(data, Mapping):
            raise InvalidSnapshotError("expected a JSON object", path=path or None, value=data)
        values: dict[str, Any] = {}
        for attr, key in _TEXT_FIELDS:
            value = data.get(key)
            if value is not None and not isinstance(value, str):
                raise InvalidSnapshotError("expected a string", path=f"{path}.{key}", value=value)
            values[attr] = value
        for attr, key in (
            ("persistent_topics_enabled", "persistentTopicsEnabled"),
            ("non_persistent_topics_enabled", "nonPersistentTopicsEnabled"),
        ):
            value = data.get(key, True)
            if not isinstance(value, bool):
                raise InvalidSnapshotError("expected true or false", path=f"{path}.{key}", value=value)
            values[attr] = value
        start = data.get("startTimestamp", 0)
        if isinstance(start, bool) or not isinstance(start, int) or start < 0:
            raise InvalidSnapshotError("expected an integer >= 0", path=f"{path}.startTimestamp", value=start)
        known = {key for _, key in _TEXT_FIELDS} | {
            "persistentTopicsEnabled",
            "nonPersistentTopicsEnabled",
            "startTimestamp",
        }
        extra = {k: v for k, v in data.items() if k not in known}
        return cls(**values, start_timestamp=start, extra=extra)
