"""Fixtures of the runtime's unit tests: a scripted API server and a client of it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from coscheduler.runtime.kube import KubeClient
from tests.runtime.apiserver import FakeApiServer


@dataclass
class FakeClock:
    """A monotonic clock that moves only when a test moves it."""

    now: float = 1_000.0
    #: Called once, at the next read, then forgotten: lets a test act at an exact moment.
    at_next_read: Callable[[], object] | None = None

    def __call__(self) -> float:
        if self.at_next_read is not None:
            action, self.at_next_read = self.at_next_read, None
            action()
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
