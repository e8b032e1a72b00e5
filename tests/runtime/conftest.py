"""Fixtures of the runtime's unit tests: a scripted API server and a client of it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from coscheduler.runtime.kube import KubeClient
from tests.builders import Clock
from tests.runtime.apiserver import FakeApiServer


@pytest.fixture
async def apiserver() -> AsyncIterator[FakeApiServer]:
    async with FakeApiServer() as server:
        yield server


@pytest.fixture
async def kube(apiserver: FakeApiServer, tmp_path: Path) -> AsyncIterator[KubeClient]:
    client = await apiserver.connect(tmp_path)
    yield client
    await client.close()


@pytest.fixture
def clock() -> Clock:
    return Clock()
