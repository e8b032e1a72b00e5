"""A forward proxy that only tunnels (HTTP CONNECT), in-process, on 127.0.0.1.

What ``HTTPS_PROXY`` names in many clusters: the client asks it to open a TCP
connection to the API server and then speaks TLS through it. Used to check
that coscheduler's client tunnels through one; it records each
CONNECT's target and Proxy-Authorization, and relays bytes both ways.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field
from types import TracebackType

__all__ = ["ConnectProxy"]


@dataclass
class ConnectProxy:
    """``async with ConnectProxy() as proxy``: ``proxy.url`` to give as HTTP(S)_PROXY."""

    #: Each CONNECT: its target and its Proxy-Authorization header ("" for none).
    tunnels: list[tuple[str, str]] = field(default_factory=list)
    _server: asyncio.Server | None = None
    _tasks: set[asyncio.Task[None]] = field(default_factory=set)

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"

    async def __aenter__(self) -> ConnectProxy:
        self._server = await asyncio.start_server(self._tunnel, "127.0.0.1", 0)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        assert self._server is not None
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _tunnel(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
            method, target, _ = head[0].split(" ", 2)
            authorization = next(
                (line.split(":", 1)[1].strip() for line in head[1:]
                 if line.lower().startswith("proxy-authorization:")),
                "",
            )  # fmt: skip
            self.tunnels.append((target, authorization))
            if method != "CONNECT":
                writer.write(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")
                return
            host, _, port = target.rpartition(":")
            upstream_reader, upstream_writer = await asyncio.open_connection(host, int(port))
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            try:
                await asyncio.gather(
                    _relay(reader, upstream_writer), _relay(upstream_reader, writer)
                )
            finally:
                upstream_writer.close()
        except (OSError, asyncio.IncompleteReadError, ValueError):
            pass
        finally:
            self._tasks.discard(task)
            writer.close()


async def _relay(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
    with contextlib.suppress(OSError):
        while data := await source.read(65536):
            sink.write(data)
            await sink.drain()
    with contextlib.suppress(OSError):
        sink.write_eof()
