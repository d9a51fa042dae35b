"""The public API: names re-exported from ``brokerlb`` and the purity of the core."""

from __future__ import annotations

import subprocess
import sys

import pytest

import brokerlb

EXPECTED_TOP_LEVEL = {
    "BrokerLBError",
    "NamespaceBundle",
    "NamespaceBundles",
    "NamespaceName",
    "TopicName",
    "__version__",
    "topic_hash",
}


def test_top_level_all_is_pinned():
    assert set(brokerlb.__all__) == EXPECTED_TOP_LEVEL
    for name in brokerlb.__all__:
        assert hasattr(brokerlb, name), name


def test_issue_2_api_shape():
    from brokerlb import NamespaceBundles, NamespaceName, TopicName

    t = TopicName.parse("my-topic")
    assert (t.domain, t.tenant, str(t.namespace), t.local_name, t.partition_index) == (
        "persistent",
        "public",
        "public/default",
        "my-topic",
        -1,
    )
    assert isinstance(t.namespace, NamespaceName)
    nb = NamespaceBundles.from_boundaries("public/default", ["0x00000000", 0x80000000, "0xffffffff"])
    assert nb.boundaries == [0, 0x80000000, 0xFFFFFFFF]
    b = nb.find_bundle(t)
    assert str(b) == "public/default/0x00000000_0x80000000" and b.range == "0x00000000_0x80000000"
    assert nb.to_json() == {"boundaries": ["0x00000000", "0x80000000", "0xffffffff"], "numBundles": 2}
    assert len(nb.split(b, [0x40000000])) == 3
    assert nb.split(b, [0x40000000]).merge(["0x00000000_0x40000000", "0x40000000_0x80000000"]) == nb


#: Modules of the pure core: they must not pull in I/O libraries.
PURE_MODULES = [
    "brokerlb",
    "brokerlb.naming",
    "brokerlb.ring",
    "brokerlb.model",
    "brokerlb.config",
    "brokerlb.errors",
    "brokerlb.clock",
    "brokerlb.java_hash",
]
OPTIONAL_PURE = [
    "brokerlb.loadbalance",
    "brokerlb.ownership",
    "brokerlb.kafka.assignors",
    "brokerlb.kafka.hashing",
    "brokerlb.history",
]
FORBIDDEN = [
    "asyncio",
    "kazoo",
    "httpx",
    "fastapi",
    "starlette",
    "uvicorn",
    "pyspark",
    "matplotlib",
    "socket",
    "aiohttp",
    "websockets",
    "pandas",
]


def _imported_after(module: str) -> set[str]:
    code = (
        f"import sys, importlib; before = set(sys.modules); importlib.import_module({module!r}); "
        "print('\\n'.join(sorted(set(sys.modules) - before)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return set(out.split())


@pytest.mark.parametrize("module", PURE_MODULES + OPTIONAL_PURE)
def test_core_imports_no_io_library(module):
    try:
        __import__(module)
    except ModuleNotFoundError:
        pytest.skip(f"{module} not built yet")
    loaded = _imported_after(module)
    bad = sorted(m for m in loaded if m.split(".")[0] in FORBIDDEN)
    assert not bad, f"{module} imports I/O libraries: {bad}"
