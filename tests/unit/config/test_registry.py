"""The key registry: declarations, annotations, extension keys, docs, helpers."""

from __future__ import annotations

import subprocess
import sys
import typing
from pathlib import Path

import pytest

from brokerlb.config import (
    KEY_GROUPS,
    REGISTRY,
    Alias,
    InvalidConfigError,
    KeyGroup,
    KeyRegistry,
    ServiceConfig,
    key,
    parse_metadata_store_url,
    short_class_name,
)
from brokerlb.config.aliases import ALIASES, KNOWN_IGNORED_KEYS, fallback
from brokerlb.config.docs import render_markdown
from brokerlb.config.kinds import (
    BOOL,
    INT,
    BoolKind,
    ChoiceKind,
    DoubleKind,
    DurationKind,
    IntKind,
    Kind,
    ListKind,
    OptionalKind,
    StringKind,
)

REPO = Path(__file__).resolve().parents[3]


def _python_type(kind: Kind) -> object:
    if isinstance(kind, OptionalKind):
        return _python_type(kind.inner) | None  # type: ignore[operator]
    if isinstance(kind, BoolKind):
        return bool
    if isinstance(kind, IntKind):
        return int
    if isinstance(kind, DoubleKind | DurationKind):
        return float
    if isinstance(kind, StringKind | ChoiceKind):
        return str
    if isinstance(kind, ListKind):
        return frozenset[str] if kind.unique else tuple[str, ...]
    raise AssertionError(kind)


@pytest.mark.parametrize("group", KEY_GROUPS, ids=lambda g: g.__name__)
def test_annotations_match_kinds(group: type[KeyGroup]) -> None:
    hints = typing.get_type_hints(group)
    names = [n for n, v in vars(group).items() if hasattr(v, "kind")]
    assert names, group
    for name in names:
        assert hints[name] == _python_type(REGISTRY.get(name).kind), name


def test_every_key_is_documented_and_categorised() -> None:
    categories = {g.CATEGORY for g in KEY_GROUPS}
    for config_key in REGISTRY:
        assert config_key.doc.strip(), config_key.name
        assert config_key.category in categories


def test_registry_knows_aliases_and_ignored_keys() -> None:
    assert len(REGISTRY) >= 95
    assert (
        REGISTRY.get("loadBalancerBandwithInResourceWeight").name == "loadBalancerBandwidthInResourceWeight"
    )
    assert REGISTRY.canonical_name("zookeeperServers") == "metadataStoreUrl"
    assert REGISTRY.canonical_name("nope") is None
    assert not (set(REGISTRY.keys) & KNOWN_IGNORED_KEYS)
    assert not ({a.old for a in ALIASES} & KNOWN_IGNORED_KEYS)
    assert [a.old for a in REGISTRY.aliases_of("metadataStoreUrl")] == ["zookeeperServers"]


def test_suggestions() -> None:
    assert REGISTRY.suggest("loadbalancersheddingenabled") == ["loadBalancerSheddingEnabled"]
    assert "loadBalancerSheddingIntervalMinutes" in REGISTRY.suggest("loadBalancerSheddingIntervalMinute")
    assert REGISTRY.suggest("xyz") == []


def test_brokerlb_keys_and_only_they_have_the_prefix() -> None:
    for config_key in REGISTRY:
        assert config_key.is_brokerlb_extension == config_key.category.startswith("brokerlb ")


def test_adding_an_extension_key_takes_one_line() -> None:
    class MoreBrokerlbKeys(KeyGroup):
        CATEGORY = "brokerlb options"
        EXTENSION = True
        brokerlbExampleFlag: bool = key(BOOL, False, "An example option.", dynamic=True)

    registry = KeyRegistry.from_groups((*KEY_GROUPS, MoreBrokerlbKeys), ALIASES)
    added = registry.get("brokerlbExampleFlag")
    assert (added.default, added.dynamic, added.category) == (False, True, "brokerlb options")
    assert "brokerlbExampleFlag" in render_markdown(registry)


def test_registry_rejects_bad_declarations() -> None:
    class Unprefixed(KeyGroup):
        CATEGORY = "x"
        EXTENSION = True
        someOption: int = key(INT, 1, "doc")

    class Squatting(KeyGroup):
        CATEGORY = "x"
        brokerlbThing: int = key(INT, 1, "doc")

    class Twice(KeyGroup):
        CATEGORY = "x"
        loadBalancerEnabled: bool = key(BOOL, True, "doc")

    class BadDefault(KeyGroup):
        CATEGORY = "x"
        somePercentage: int = key(INT, -5, "doc", ge=0)

    for group in (Unprefixed, Squatting):
        with pytest.raises(ValueError, match="brokerlb"):
            KeyRegistry.from_groups([group])
    with pytest.raises(ValueError, match="declared twice"):
        KeyRegistry.from_groups([*KEY_GROUPS, Twice])
    with pytest.raises(InvalidConfigError, match="somePercentage"):
        KeyRegistry.from_groups([BadDefault])
    with pytest.raises(ValueError, match="unknown key"):
        KeyRegistry.from_groups([], [Alias("oldName", "missingKey", fallback)])


def test_docs_file_is_current() -> None:
    docs = REPO / "docs" / "configuration.md"
    assert docs.read_text(encoding="utf-8") == render_markdown(), (
        "docs/configuration.md is stale: run `brokerlb config keys --markdown > docs/configuration.md`"
    )


def test_docs_mention_every_key_alias_and_deviation() -> None:
    text = render_markdown()
    for config_key in REGISTRY:
        assert f"`{config_key.name}`" in text
    for alias in ALIASES:
        assert f"`{alias.old}`" in text
    assert "Pulsar reads whole minutes only" in text


def test_import_does_no_io_and_stays_light() -> None:
    code = (
        "import sys, builtins\n"
        "opened = []\n"
        "real_open = builtins.open\n"
        "builtins.open = lambda *a, **k: opened.append(a) or real_open(*a, **k)\n"
        "import brokerlb.config\n"
        "heavy = {'kazoo', 'httpx', 'fastapi', 'pyspark', 'typer', 'rich', 'numpy'} & set(sys.modules)\n"
        "print(len(opened), sorted(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["0", "[]"]


# ---------------------------------------------------------------- helpers for string keys


@pytest.mark.parametrize(
    ("name", "short"),
    [
        ("org.apache.pulsar.broker.loadbalance.impl.ThresholdShedder", "ThresholdShedder"),
        ("org.apache.pulsar.broker.loadbalance.extensions.scheduler.TransferShedder", "TransferShedder"),
        ("ThresholdShedder", "ThresholdShedder"),
        ("  AvgShedder ", "AvgShedder"),
        ("com.example.Outer$Inner", "Inner"),
    ],
)
def test_short_class_name(name: str, short: str) -> None:
    assert short_class_name(name) == short


def test_short_class_name_of_defaults() -> None:
    conf = ServiceConfig()
    assert short_class_name(conf.loadBalancerLoadSheddingStrategy) == "ThresholdShedder"
    assert short_class_name(conf.loadBalancerLoadPlacementStrategy) == "LeastLongTermMessageRate"
    assert short_class_name(conf.loadManagerClassName) == "ModularLoadManagerImpl"
    with pytest.raises(InvalidConfigError, match="loadBalancerLoadSheddingStrategy"):
        short_class_name("org.example.", key="loadBalancerLoadSheddingStrategy")


@pytest.mark.parametrize(
    ("url", "scheme", "hosts", "chroot", "text"),
    [
        ("memory:", "memory", (), None, "memory:default"),
        ("memory:local", "memory", (), None, "memory:local"),
        ("memory:/local", "memory", (), None, "memory:local"),
        ("zk:127.0.0.1:2181", "zk", (("127.0.0.1", 2181),), None, "zk:127.0.0.1:2181"),
        (
            "zk:h1:2181,h2:2182/pulsar/lb/",
            "zk",
            (("h1", 2181), ("h2", 2182)),
            "/pulsar/lb",
            "zk:h1:2181,h2:2182/pulsar/lb",
        ),
        ("localhost:2181", "zk", (("localhost", 2181),), None, "zk:localhost:2181"),
        ("zk:[::1]:2181", "zk", (("[::1]", 2181),), None, "zk:[::1]:2181"),
    ],
)
def test_parse_metadata_store_url(url: str, scheme: str, hosts: tuple, chroot: str | None, text: str) -> None:
    parsed = parse_metadata_store_url(url)
    assert (parsed.scheme, parsed.hosts, parsed.chroot, str(parsed)) == (scheme, hosts, chroot, text)


def test_default_metadata_store_is_embedded() -> None:
    url = parse_metadata_store_url(ServiceConfig().metadataStoreUrl)
    assert url.scheme == "memory"
    zk = parse_metadata_store_url("zk:h1:2181,h2:2181/c")
    assert zk.connect_string == "h1:2181,h2:2181/c"
