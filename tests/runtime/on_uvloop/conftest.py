"""The tests of this directory run on uvloop's event loop, the one ``coscheduler run`` uses.

The other unit tests keep asyncio's own loop; these repeat the key cases of
the transport, the proxied client and the health server on uvloop (whose transports
and TLS are its own, not asyncio's), and add TLS, which the others do not
speak.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping

import pytest
import uvloop


def pytest_asyncio_loop_factories(
    config: pytest.Config, item: pytest.Item
) -> Mapping[str, Callable[[], asyncio.AbstractEventLoop]]:
    return {"uvloop": uvloop.new_event_loop}
