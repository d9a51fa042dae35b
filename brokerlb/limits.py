"""Bounds on admin input: every rule written once, used by every route that takes such input.

A request that breaks a bound is answered with a 4xx whose reason names the bound and,
where one exists, the config key that sets it:

========================  =========================================  ======================================
input                     bound                                      key
========================  =========================================  ======================================
request body              at most ``httpMaxRequestSize`` bytes       ``httpMaxRequestSize`` (413)
JSON body                 nesting at most ``brokerlbMaxJsonDepth``   ``brokerlbMaxJsonDepth`` (400)
tenant, namespace, topic  each name at most ``brokerlbMaxNameLength``  ``brokerlbMaxNameLength`` (412)
  and other stored names  characters, on every protocol: every HTTP
                          and WebSocket path segment, every topic
                          and namespace of a binary command
bundles of a namespace    1 .. ``loadBalancerNamespaceMaximumBundles``  ``loadBalancerNamespaceMaximumBundles``
                          (``numBundles`` and boundaries)            (400)
bundle boundaries         strictly increasing, no duplicates          ``brokerlbStrictNamespaceBundles`` (400)
partitions of a topic     1 .. ``maxNumPartitionsPerPartitionedTopic``  ``maxNumPartitionsPerPartitionedTopic``
                          (0 = Pulsar's "no limit": Java's int max)   (406)
========================  =========================================  ======================================

>>> limits = InputLimits(max_name_length=8)
>>> limits.check_name("tenant", "short")
>>> limits.check_name("tenant", "much-too-long")
Traceback (most recent call last):
...
brokerlb.errors.InvalidNamespaceNameError: Invalid namespace name 'much-too-long': the tenant is 13 characters long; the limit is 8 (brokerlbMaxNameLength)
>>> InputLimits(max_bundles=128).check_num_bundles(10_000_000)
Traceback (most recent call last):
...
brokerlb.errors.InvalidBundlesError: Invalid number of bundles 10000000: must be in 1..128 (loadBalancerNamespaceMaximumBundles)
>>> json_depth({"a": [[1], []]})
3
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote_plus

from brokerlb.errors import (
    InvalidBundlesError,
    InvalidInputError,
    InvalidNamespaceNameError,
    InvalidTopicNameError,
    NotAcceptableError,
    PreconditionFailedError,
    RequestTooLargeError,
)
from brokerlb.naming import NamespaceName, TopicName

__all__ = ["InputLimits", "json_depth", "parse_json", "shorten", "JAVA_INT_MAX", "MAX_JSON_INT_DIGITS"]

#: Pulsar reads counts into Java ``int``s: a larger number is not a valid request there.
JAVA_INT_MAX = 2**31 - 1
#: paths whose names are not tenants, namespaces or topics (a name beyond the bound there is a 400)
_OUTSIDE_TOPIC_HIERARCHY = (b"/admin/v2/clusters", b"/admin/v2/brokers", b"/admin/v2/broker-stats")
#: a v1 topic name has four parts (tenant, cluster, namespace, local name) after ``non-persistent://``
_MAX_PARTS, _DOMAIN_AND_SEPARATORS = 4, len("non-persistent://")


#: the most digits a JSON integer may have (a Java long has 19; Python refuses more than 4,300 with a
#: message about its own internals)
MAX_JSON_INT_DIGITS = 100


def _json_int(text: str) -> int:
    digits = len(text.lstrip("-"))
    if digits > MAX_JSON_INT_DIGITS:
        raise ValueError(f"a number of {digits} digits is too large (at most {MAX_JSON_INT_DIGITS})")
    return int(text)


def parse_json(data: str | bytes) -> Any:
    """``json.loads`` with integers bounded to :data:`MAX_JSON_INT_DIGITS` digits; ``ValueError`` (its
    message fit for a client) when ``data`` is not JSON. Every JSON a client sends is read with it."""
    return json.loads(data, parse_int=_json_int)


def json_depth(value: Any) -> int:
    """Nesting depth of a decoded JSON value (a scalar is 0, ``[]`` is 1), without recursion."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, depth + 1)
        stack.extend((child, depth + 1) for child in children)
    return deepest


@dataclass(frozen=True, slots=True)
class InputLimits:
    """The bounds (module docstring); ``from_config`` reads them from a :class:`ServiceConfig`."""

    max_request_bytes: int = 1024 * 1024
    max_json_depth: int = 64
    max_name_length: int = 255
    max_bundles: int = 128
    strict_bundles: bool = True
    max_partitions: int = 0

    @classmethod
    def from_config(cls, conf: Any) -> InputLimits:
        return cls(
            max_request_bytes=conf.httpMaxRequestSize,
            max_json_depth=conf.brokerlbMaxJsonDepth,
            max_name_length=conf.brokerlbMaxNameLength,
            max_bundles=conf.loadBalancerNamespaceMaximumBundles,
            strict_bundles=conf.brokerlbStrictNamespaceBundles,
            max_partitions=conf.maxNumPartitionsPerPartitionedTopic,
        )

    # ------------------------------------------------------------------ request bodies
    def check_body_size(self, size: int) -> None:
        """``httpMaxRequestSize`` (-1 = no limit)."""
        if 0 <= self.max_request_bytes < size:
            raise RequestTooLargeError(
                f"The request body is larger than {self.max_request_bytes} bytes (httpMaxRequestSize)"
            )

    def check_json_depth(self, value: Any) -> None:
        if json_depth(value) > self.max_json_depth:
            raise InvalidInputError(self.json_too_deep())

    def json_too_deep(self) -> str:
        return f"The request body nests JSON deeper than {self.max_json_depth} levels (brokerlbMaxJsonDepth)"

    # ------------------------------------------------------------------ names
    def check_name(self, kind: str, value: str) -> None:
        """A tenant, namespace, topic or other stored name (``kind`` says which) within the length bound."""
        limit = self.max_name_length
        if limit <= 0 or len(value) <= limit:
            return
        why = f"the {kind} is {len(value)} characters long; the limit is {limit} (brokerlbMaxNameLength)"
        if kind == "topic":
            raise InvalidTopicNameError(shorten(value), why)
        if kind in ("tenant", "namespace"):
            raise InvalidNamespaceNameError(shorten(value), why)
        raise InvalidInputError(f"Invalid {kind} '{shorten(value)}': {why}")

    def check_path(self, raw_path: bytes) -> None:
        """Every segment of an HTTP or WebSocket request path within the name bound (412), checked
        before any route parses, authenticates or caches anything of it. A segment is a name (tenant,
        namespace, topic, role ...) or shorter (a bundle range, a broker id)."""
        limit = self.max_name_length
        if limit <= 0 or len(raw_path) <= limit:
            return
        for segment in raw_path.split(b"/"):
            if len(segment) > limit:
                text = unquote_plus(segment.decode("latin-1"), errors="replace")
                if len(text) > limit:
                    why = (
                        f"Invalid name '{shorten(text)}': a path segment of {len(text)} characters; "
                        f"names are at most {limit} (brokerlbMaxNameLength)"
                    )
                    # as check_name: 412 in the tenant/namespace/topic hierarchy, 400 elsewhere
                    if raw_path.startswith(_OUTSIDE_TOPIC_HIERARCHY):
                        raise InvalidInputError(why)
                    raise PreconditionFailedError(why)

    def topic(self, name: str) -> TopicName:
        """A topic name from a client (a binary command, a WebSocket path), parsed once its length is
        known to be within the bound: each of tenant, namespace and local name at most
        ``brokerlbMaxNameLength`` characters (412 / the binary protocol's InvalidTopicName)."""
        limit = self.max_name_length
        if limit > 0 and len(name) > _MAX_PARTS * (limit + 1) + _DOMAIN_AND_SEPARATORS:
            raise InvalidTopicNameError(
                shorten(name),
                f"{len(name)} characters is longer than any name within brokerlbMaxNameLength ({limit})",
            )
        topic = TopicName.parse(name)
        if limit > 0:
            self.check_name("tenant", topic.tenant)
            self.check_name("namespace", topic.namespace.local_name)
            self.check_name("topic", topic.local_name)
        return topic

    def namespace(self, name: str) -> NamespaceName:
        """A namespace name from a client, parsed once its length is within the bound."""
        limit = self.max_name_length
        if limit > 0 and len(name) > 3 * (limit + 1):
            raise InvalidNamespaceNameError(
                shorten(name),
                f"{len(name)} characters is longer than any name within brokerlbMaxNameLength ({limit})",
            )
        namespace = NamespaceName.parse(name)
        if limit > 0:
            self.check_name("tenant", namespace.tenant)
            self.check_name("namespace", namespace.local_name)
        return namespace

    # ------------------------------------------------------------------ bundles and partitions
    def check_num_bundles(self, num: int) -> None:
        if not 1 <= num <= self.max_bundles:
            raise InvalidBundlesError(
                f"Invalid number of bundles {num}: must be in 1..{self.max_bundles} "
                "(loadBalancerNamespaceMaximumBundles)"
            )

    def check_boundaries(self, boundaries: Sequence[Any], parse: Any) -> None:
        """At most ``max_bundles + 1`` boundaries; strictly increasing unless ``strict_bundles`` is off.

        ``parse`` turns one boundary (``"0x..."`` or an int) into its integer value.
        """
        if len(boundaries) - 1 > self.max_bundles:
            raise InvalidBundlesError(
                f"Invalid bundle boundaries: {len(boundaries)} boundaries make {len(boundaries) - 1} bundles, "
                f"more than {self.max_bundles} (loadBalancerNamespaceMaximumBundles)"
            )
        if not self.strict_bundles:
            return
        values = [parse(b) for b in boundaries]
        for i, (low, high) in enumerate(zip(values, values[1:], strict=False)):
            if low >= high:
                raise InvalidBundlesError(
                    f"Invalid bundle boundaries: {boundaries[i]!r} at index {i} is not below "
                    f"{boundaries[i + 1]!r}; boundaries must be strictly increasing "
                    "(brokerlbStrictNamespaceBundles=false sorts them as Pulsar does)"
                )

    def check_policies_bundles(self, body: Any, parse: Any) -> None:
        """The ``bundles`` of a create-namespace body (Pulsar's ``Policies``), before anything is stored.

        With ``strict_bundles`` a ``numBundles`` of 0 or less is refused (Pulsar silently uses
        ``defaultNumberOfNamespaceBundles``); the count and the boundaries are bounded either way.
        Shapes (object, list, integer) are checked by the parser that follows.
        """
        bundles = body.get("bundles") if isinstance(body, dict) else None
        if not isinstance(bundles, dict):
            return
        num, boundaries = bundles.get("numBundles"), bundles.get("boundaries")
        if isinstance(boundaries, list) and boundaries:
            self.check_boundaries(boundaries, parse)
        elif isinstance(num, int) and not isinstance(num, bool):
            if num <= 0 and not self.strict_bundles:
                return
            if num <= 0:
                raise InvalidBundlesError(
                    f"Invalid number of bundles {num}: must be in 1..{self.max_bundles} "
                    "(brokerlbStrictNamespaceBundles=false takes defaultNumberOfNamespaceBundles instead, "
                    "as Pulsar does)"
                )
            self.check_num_bundles(num)

    def check_partitions(self, partitions: int) -> None:
        limit = self.max_partitions if self.max_partitions > 0 else JAVA_INT_MAX
        if partitions > limit:
            key = "maxNumPartitionsPerPartitionedTopic" if self.max_partitions > 0 else "a Java int"
            raise NotAcceptableError(f"Number of partitions should be less than or equal to {limit} ({key})")


def shorten(value: str, keep: int = 40) -> str:
    """``value``, or its first ``keep`` characters and its length (what an error message quotes)."""
    return value if len(value) <= keep else f"{value[:keep]}... ({len(value)} characters)"
