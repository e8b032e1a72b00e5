"""A small asynchronous client of the benchmark cluster's API server (aiohttp + orjson).

The runner creates thousands of objects and watches every pod of the run while the peer
schedules, on the same two cores; it must cost little and cost the same whichever peer
runs. So: raw JSON, orjson, one session with a bounded pool of connections, and no
generated models.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import AsyncIterator, Awaitable
from pathlib import Path
from typing import Any

import aiohttp
import orjson

from e2e.pki import Pki

Json = dict[str, Any]


class ApiError(RuntimeError):
    def __init__(self, method: str, path: str, status: int, body: bytes) -> None:
        self.status = status
        try:
            message = orjson.loads(body).get("message", body.decode(errors="replace"))
        except (orjson.JSONDecodeError, AttributeError):
            message = body.decode(errors="replace")
        super().__init__(f"{method} {path} -> {status}: {message}")


class Kube:
    """HTTPS to 127.0.0.1:port as the cluster's admin."""

    def __init__(self, port: int, pki_dir: Path, *, connections: int = 32) -> None:
        self.port = port
        self.pki_dir = pki_dir
        pki = Pki(pki_dir)
        context = ssl.create_default_context(cafile=str(pki.ca_cert))
        context.load_cert_chain(str(pki.admin_cert), str(pki.admin_key))
        self.base = f"https://127.0.0.1:{port}"
        self._connector = aiohttp.TCPConnector(ssl=context, limit=connections)
        self.session = aiohttp.ClientSession(
            connector=self._connector,
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=10),
            json_serialize=lambda o: orjson.dumps(o).decode(),
        )

    async def close(self) -> None:
        await self.session.close()

    async def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        ok: tuple[int, ...] = (200, 201, 202),
        content_type: str = "application/json",
        time_limit: float = 60.0,
    ) -> Json:
        data = orjson.dumps(body) if body is not None else None
        headers = {"Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = content_type
        async with self.session.request(
            method,
            self.base + path,
            data=data,
            headers=headers,
            timeout=aiohttp.ClientTimeout(total=time_limit),
        ) as response:
            raw = await response.read()
            if response.status not in ok:
                raise ApiError(method, path, response.status, raw)
            return orjson.loads(raw) if raw else {}

    async def create(self, path: str, body: Json) -> Json:
        return await self.request("POST", path, body)

    async def get(self, path: str) -> Json:
        return await self.request("GET", path)

    async def text(self, path: str) -> str:
        async with self.session.get(self.base + path, timeout=aiohttp.ClientTimeout(total=60)) as r:
            body = await r.read()
            if r.status != 200:
                raise ApiError("GET", path, r.status, body)
            return body.decode()

    async def watch(self, path: str, resource_version: str) -> AsyncIterator[Json]:
        """Yield watch events (decoded) of ``path`` from ``resource_version`` until it ends."""
        sep = "&" if "?" in path else "?"
        url = (
            f"{self.base}{path}{sep}watch=1&allowWatchBookmarks=true"
            f"&resourceVersion={resource_version}&timeoutSeconds=3600"
        )
        async with self.session.get(url, timeout=aiohttp.ClientTimeout(total=None)) as response:
            if response.status != 200:
                raise ApiError("WATCH", path, response.status, await response.read())
            buffer = b""
            async for chunk in response.content.iter_any():
                buffer += chunk
                while True:
                    newline = buffer.find(b"\n")
                    if newline < 0:
                        break
                    line, buffer = buffer[:newline], buffer[newline + 1 :]
                    if line.strip():
                        yield orjson.loads(line)


async def gather_limited(coroutines: list[Awaitable[Any]], limit: int) -> list[Any]:
    """Run coroutines with at most ``limit`` in flight; results in order, first error raised."""
    semaphore = asyncio.Semaphore(limit)

    async def one(coroutine: Any) -> Any:
        async with semaphore:
            return await coroutine

    tasks = [asyncio.ensure_future(one(c)) for c in coroutines]
    try:
        return await asyncio.gather(*tasks)
    finally:
        for task in tasks:
            if not task.done():
                task.cancel()
        with contextlib.suppress(Exception):
            await asyncio.gather(*tasks, return_exceptions=True)
