"""The client's rate limit serves waiting requests in the order they came."""

from __future__ import annotations

import asyncio
import time
from typing import Any, cast

from coscheduler.runtime.kube import KubeClient


async def test_requests_get_their_turn_first_come_first_served() -> None:
    # No request is sent: only the limiter is exercised, so no API client is needed.
    client = KubeClient(cast(Any, None), qps=40, burst=1, timeout=1.0)
    served: list[int] = []

    async def one(index: int) -> None:
        await client.take_turn()
        served.append(index)

    started = time.monotonic()
    await asyncio.gather(*(one(i) for i in range(12)))
    assert served == list(range(12))
    assert time.monotonic() - started >= 10 / 40  # the limit still holds


async def test_a_sibling_has_a_limit_of_its_own() -> None:
    client = KubeClient(cast(Any, None), qps=1, burst=1, timeout=1.0)
    reporting = client.sibling()
    await client.take_turn()
    # The first client's bucket is empty now; the sibling's is not.
    await asyncio.wait_for(reporting.take_turn(), timeout=0.5)
