"""Fixtures of the runtime's unit tests: a scripted API server and a client of it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from coscheduler.runtime.kube import KubeClient
from tests.runtime.apiserver import FakeApiServer


@dataclass
class FakeClock:
    """A monotonic clock that moves only when a test moves it."""

    now: float = 1_000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


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
def clock() -> FakeClock:
    return FakeClock()
