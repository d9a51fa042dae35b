"""Pulsar's admin flows on one broker: namespaces, bundles, topics, partitioned topics, dynamic configuration."""
