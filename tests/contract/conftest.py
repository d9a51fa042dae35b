"""Storage engines under one contract: each test runs against every engine."""

from __future__ import annotations

import itertools
import uuid

import pytest

from brokerlb.storage import open_storage

_names = itertools.count()

ENGINES = ["memory", "sqlite", pytest.param("postgresql", marks=pytest.mark.postgresql)]


@pytest.fixture(params=ENGINES)
async def engine(request, tmp_path):
    kind = request.param
    if kind == "memory":
        url = f"memory:contract-{next(_names)}-{uuid.uuid4().hex[:6]}"
    elif kind == "sqlite":
        url = f"sqlite:{tmp_path / 'store'}"
    else:
        server = request.getfixturevalue("pg_server")
        url = server.new_database_url()
    store = open_storage(url)
    await store.start()
    try:
        yield store
    finally:
        await store.close()
