"""Broker configuration: Pulsar's broker.conf keys, names and defaults (pure; no I/O at import).

* :class:`ServiceConfig` -- immutable typed config; attributes named like Pulsar's keys
  (``conf.loadBalancerBrokerOverloadedThresholdPercentage``).
* :func:`load_broker_conf` -- read a broker.conf file plus ``key=value`` overrides.
* :data:`REGISTRY` -- every key (:class:`ConfigKey`: kind, default, doc, dynamic flag,
  category, deprecation), the deprecated aliases and the ignored Pulsar keys.
* :func:`short_class_name`, :func:`is_extensible_load_manager`, :func:`parse_metadata_store_url` --
  helpers for string keys.

Keys are declared in ``keys_*.py``; brokerlb's own keys (prefix ``brokerlb``) in
:mod:`brokerlb.config.keys_brokerlb`. The reference table is docs/configuration.md.
"""

from brokerlb.config.kinds import Kind
from brokerlb.config.loader import load_broker_conf, parse_broker_conf, parse_overrides
from brokerlb.config.names import (
    EXTENSIBLE_LOAD_MANAGER,
    EXTENSIBLE_LOAD_MANAGER_CLASS,
    MODULAR_LOAD_MANAGER_CLASS,
    MetadataStoreUrl,
    is_extensible_load_manager,
    parse_metadata_store_url,
    short_class_name,
)
from brokerlb.config.registry import BROKERLB_PREFIX, Alias, ConfigKey, KeyGroup, KeyRegistry, key
from brokerlb.config.service_config import KEY_GROUPS, REGISTRY, ServiceConfig
from brokerlb.errors import (
    DeprecatedConfigKeyWarning,
    InvalidConfigError,
    UnknownConfigKeyError,
    UnknownConfigKeyWarning,
)

__all__ = [
    "BROKERLB_PREFIX",
    "KEY_GROUPS",
    "REGISTRY",
    "Alias",
    "ConfigKey",
    "DeprecatedConfigKeyWarning",
    "InvalidConfigError",
    "KeyGroup",
    "KeyRegistry",
    "Kind",
    "MetadataStoreUrl",
    "ServiceConfig",
    "UnknownConfigKeyError",
    "UnknownConfigKeyWarning",
    "key",
    "load_broker_conf",
    "parse_broker_conf",
    "parse_metadata_store_url",
    "parse_overrides",
    "short_class_name",
    "is_extensible_load_manager",
    "EXTENSIBLE_LOAD_MANAGER",
    "EXTENSIBLE_LOAD_MANAGER_CLASS",
    "MODULAR_LOAD_MANAGER_CLASS",
]
