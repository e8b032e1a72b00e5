"""The client's rate limit serves waiting requests in the order they came."""

from __future__ import annotations

import asyncio
import time

from kubernetes_asyncio.client.configuration import Configuration

from coscheduler.runtime.credentials import AuthorizationHeader
from coscheduler.runtime.kube import Credentials, KubeClient

# No request is sent: only the limiter is exercised; nothing listens here.
NOWHERE = Credentials(
    server="http://127.0.0.1:9",
    ssl_context=None,
    tls_server_name=None,
    headers=AuthorizationHeader(Configuration()),
)


async def test_requests_get_their_turn_first_come_first_served() -> None:
    client = KubeClient(NOWHERE, qps=40, burst=1, timeout=1.0)
    served: list[int] = []

    async def one(index: int) -> None:
        await client.take_turn()
        served.append(index)

    started = time.monotonic()
    await asyncio.gather(*(one(i) for i in range(12)))
    assert served == list(range(12))
    assert time.monotonic() - started >= 10 / 40  # the limit still holds


async def test_a_sibling_has_a_limit_of_its_own() -> None:
    client = KubeClient(NOWHERE, qps=1, burst=1, timeout=1.0)
    reporting = client.sibling()
    await client.take_turn()
    # The first client's bucket is empty now; the sibling's is not.
    await asyncio.wait_for(reporting.take_turn(), timeout=0.5)
