"""CPU of one new API-server connection: a full TLS handshake against one that resumes.

    .venv/bin/python -m bench.tls_handshake_cpu [--rounds 5] [--connections 100]

A TLS 1.3 server of the standard library's in a process of its own, with the
e2e cluster's certificates (ECDSA P-256, a client certificate required: the
API server's shape), answers every request. This process opens
``--connections`` connections at once through
:class:`coscheduler.runtime.http1.Http1Pool` on uvloop (``warm``, as at
start, after one request whose session the others may resume), once with a
plain context (every handshake full) and once with the kubeconfig loader's
:func:`coscheduler.runtime.http1.client_context` (each resumes), taking
turns round after round; medians of ``time.process_time`` per connection
are printed (issue #28: a startup trial opens ~100 connections).
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import ssl
import statistics
import tempfile
import time
from pathlib import Path

import uvloop

from coscheduler.runtime.http1 import Http1Pool, client_context
from e2e.pki import Pki, generate

_ANSWER = b"HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\n{}"


def _serve(pki_dir: str, ready: multiprocessing.Queue[int]) -> None:
    pki = Pki(Path(pki_dir))
    context = pki.server_context(client_certs=True)

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while await reader.readuntil(b"\r\n\r\n"):
                writer.write(_ANSWER)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, ssl.SSLError):
            pass
        finally:
            writer.close()

    async def main() -> None:
        server = await asyncio.start_server(handle, "127.0.0.1", 0, ssl=context)
        ready.put(server.sockets[0].getsockname()[1])
        await server.serve_forever()

    uvloop.run(main())


def _context(pki: Pki, *, resuming: bool) -> ssl.SSLContext:
    if resuming:
        context: ssl.SSLContext = client_context(cafile=str(pki.ca_cert))
    else:
        context = ssl.create_default_context(cafile=str(pki.ca_cert))
    context.load_cert_chain(pki.admin_cert, pki.admin_key)
    return context


async def _per_connection(
    port: int, context: ssl.SSLContext, connections: int
) -> tuple[float, int]:
    """CPU seconds of this process per connection opened, and how many resumed a session."""
    pool = Http1Pool(
        f"https://127.0.0.1:{port}",
        ssl_context=context,
        server_hostname="localhost",
        max_connections=connections + 1,
    )
    try:
        await pool.request("POST", "/x", b"", b"{}", within=10)  # a first, full one either way
        started = time.process_time()
        opened = await pool.warm(connections + 1)  # opened together, kept (closing untimed)
        spent = time.process_time() - started
    finally:
        pool.close()
    assert opened == connections
    return spent / connections, pool.resumed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--connections", type=int, default=100)
    args = parser.parse_args()
    spent: dict[str, list[float]] = {"full": [], "resumed": []}
    resumed: dict[str, int] = {"full": 0, "resumed": 0}
    with tempfile.TemporaryDirectory() as directory:
        pki = generate(Path(directory), service_ip="10.96.0.1")
        ready: multiprocessing.Queue[int] = multiprocessing.Queue()
        server = multiprocessing.Process(target=_serve, args=(directory, ready), daemon=True)
        server.start()
        try:
            port = ready.get(timeout=30)
            for round_ in range(args.rounds):
                for name in ("full", "resumed") if round_ % 2 == 0 else ("resumed", "full"):
                    context = _context(pki, resuming=name == "resumed")
                    cpu, reused = uvloop.run(_per_connection(port, context, args.connections))
                    spent[name].append(cpu)
                    resumed[name] += reused
        finally:
            server.terminate()
            server.join()
    for name, values in spent.items():
        print(
            f"{name:8} {statistics.median(values) * 1000:.2f} ms CPU per connection "
            f"(rounds {', '.join(f'{v * 1000:.2f}' for v in values)}; "
            f"{resumed[name]} of {len(values) * args.connections} resumed)"
        )


if __name__ == "__main__":
    main()
