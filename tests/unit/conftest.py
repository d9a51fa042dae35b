"""Fixtures shared by the unit tests."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest

from brokerlb.coordination import MemoryMetadataStore, MemoryServer


@pytest.fixture
async def store() -> AsyncIterator[MemoryMetadataStore]:
    """A started client of a fresh embedded metadata store of the test's own."""
    s = MemoryMetadataStore(MemoryServer(f"unit-{uuid.uuid4().hex[:8]}"))
    await s.start()
    yield s
    await s.close()
