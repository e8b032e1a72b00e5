"""A fault-injecting proxy between a client (coscheduler) and the local kube-apiserver.

Run as its own process (``python -m e2e.faultproxy ...``, started by
:class:`FaultProxy`): it listens on 127.0.0.1 with TLS (the API server's own
serving certificate, so a kubeconfig that trusts the cluster's CA needs only
another port), forwards every request to the real API server over TLS as the
cluster's admin, and misbehaves as its rules say. A second, plain-HTTP port
on 127.0.0.1 takes the rules (``PUT /rules``), drops them (``DELETE /rules``)
and tells what happened (``GET /stats``).

Why our own and not an existing tool: toxiproxy works on TCP bytes, so it
cannot answer a *Binding* with 503 while letting the pod watch through, nor
cut a watch after its third event, nor answer a watch with 410 Gone;
mitmproxy could, but it is a large dependency and a second process model for
a few hundred lines of aiohttp the project already depends on.

What a rule can do to the requests it matches (by verb and resource):

* ``status``: answer 429, 500 or 503 without forwarding (a Status body; 429
  carries ``Retry-After: 1``);
* ``lost_answer``: forward, then answer 500 instead of the real answer (the
  request took effect; the client does not know);
* ``reset``: close the connection without an answer, without forwarding;
* ``delay``: wait ``seconds`` before forwarding;
* ``stall``: wait ``seconds`` (a hung server), then close without an answer;
* ``cut_watch``: forward a watch and cut the connection after ``events``
  lines of it;
* ``gone``: answer a watch with 200 and one ERROR event of code 410
  (Expired), as the API server does when a resourceVersion is too old.

The two watch faults also meet the watches already open when the rules
change (at their next line): a scheduler's watches last minutes.

Every rule fires on a ``share`` of its matches, at most ``max_count`` times,
never on the first ``after`` requests of a verb and resource (so a test can
let one eviction through and refuse the next).
Whether the n-th request of a verb and resource is hit is a hash of (seed,
rule, verb, resource, n): the same seed makes the same choices for the same
sequence of requests per resource, so a failing run replays (up to the
order in which concurrent requests of one resource arrive). Waits are capped
(``MAX_WAIT_SECONDS``). Answers that were forwarded but could not be
delivered (the client had gone, or a ``lost_answer``) are counted by verb,
resource and status, so a later 409 on a Binding can be told from a
double binding.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import ssl
import sys
import urllib.request
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import aiohttp
from aiohttp import web

from e2e.api import write_kubeconfig
from e2e.pki import Pki
from e2e.processes import Process, free_port, wait_until

FaultKind = Literal["status", "lost_answer", "reset", "delay", "stall", "cut_watch", "gone"]
FAULT_KINDS: tuple[FaultKind, ...] = (
    "status",
    "lost_answer",
    "reset",
    "delay",
    "stall",
    "cut_watch",
    "gone",
)
MAX_WAIT_SECONDS = 30.0
"""No delay or stall lasts longer: every fault is bounded in time."""

UPSTREAM_TIMEOUT_SECONDS = 60.0
"""A plain request's limit upstream; watches have no total limit (the server ends them)."""

_HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
    }
)


@dataclass(frozen=True)
class Rule:
    """One kind of misbehaviour, for the requests it matches."""

    kind: FaultKind
    share: float
    verbs: tuple[str, ...] = ()
    """Kubernetes verbs (get, list, watch, create, update, patch, delete); empty: all."""
    resources: tuple[str, ...] = ()
    """Resources with subresource (pods, pods/binding, leases, podgroups); empty: all."""
    status: int = 503
    seconds: float = 2.0
    events: int = 3
    max_count: int = 1_000
    after: int = 0
    """The first ``after`` requests of each verb and resource pass untouched."""

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> Rule:
        kind = raw["kind"]
        if kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault kind {kind!r}; one of {', '.join(FAULT_KINDS)}")
        rule = cls(
            kind=kind,
            share=float(raw.get("share", 1.0)),
            verbs=tuple(raw.get("verbs", ())),
            resources=tuple(raw.get("resources", ())),
            status=int(raw.get("status", 503)),
            seconds=min(float(raw.get("seconds", 2.0)), MAX_WAIT_SECONDS),
            events=int(raw.get("events", 3)),
            max_count=int(raw.get("max_count", 1_000)),
            after=int(raw.get("after", 0)),
        )
        if not 0.0 <= rule.share <= 1.0:
            raise ValueError(f"share must be within [0, 1], not {rule.share}")
        return rule

    def matches(self, verb: str, resource: str) -> bool:
        return (not self.verbs or verb in self.verbs) and (
            not self.resources or resource in self.resources
        )


@dataclass(frozen=True)
class RequestKind:
    """A request as Kubernetes authorises it: a verb on a resource (with subresource)."""

    verb: str
    resource: str

    @classmethod
    def of(cls, method: str, path: str, query: dict[str, str]) -> RequestKind:
        parts = [p for p in path.split("/") if p]
        # /api/v1/... or /apis/<group>/<version>/...
        rest = parts[2:] if parts[:1] == ["api"] else parts[3:] if parts[:1] == ["apis"] else []
        if rest[:1] == ["namespaces"] and len(rest) >= 3:
            rest = rest[2:]  # a namespaced resource
        resource = rest[0] if rest else (parts[0] if parts else "")
        named = len(rest) >= 2
        if len(rest) >= 3:
            resource = f"{rest[0]}/{rest[2]}"
        verb = {
            "POST": "create",
            "PUT": "update",
            "PATCH": "patch",
            "DELETE": "delete",
        }.get(method, "get")
        if method == "GET":
            if query.get("watch") in ("true", "1"):
                verb = "watch"
            elif not named:
                verb = "list"
        return cls(verb, resource)

    def __str__(self) -> str:
        return f"{self.verb} {self.resource}"


@dataclass
class Stats:
    """What the proxy did, for the checkers and the soak's report."""

    requests: Counter[str] = field(default_factory=Counter)
    faults: Counter[str] = field(default_factory=Counter)
    answers: Counter[str] = field(default_factory=Counter)
    """Upstream answers by ``verb resource status``."""
    undelivered: Counter[str] = field(default_factory=Counter)
    """Forwarded requests whose answer the client never got, by ``verb resource status``."""
    upstream_errors: int = 0
    bindings: dict[str, list[str]] = field(default_factory=dict)
    """Per pod (its binding path), the outcome of each Binding in order of arrival: the
    status, with "undelivered" or "lost" when the client never got it, or "injected ..."."""

    def to_json(self) -> dict[str, Any]:
        # Not dataclasses.asdict: it rebuilds a Counter from its (key, count) pairs as keys.
        return {
            "requests": dict(self.requests),
            "faults": dict(self.faults),
            "answers": dict(self.answers),
            "undelivered": dict(self.undelivered),
            "upstream_errors": self.upstream_errors,
            "bindings": self.bindings,
        }


class Faults:
    """The rules in force, the seeded choice of victims, and the counts."""

    def __init__(self) -> None:
        self.seed = 0
        self.rules: list[Rule] = []
        self.fired: list[int] = []
        self.seen: Counter[str] = Counter()
        self.stats = Stats()
        #: Changes with every new set of rules, so that open watches meet them.
        self.generation = 0

    def set(self, seed: int, rules: list[Rule]) -> None:
        self.generation += 1
        self.seed = seed
        self.rules = rules
        self.fired = [0] * len(rules)
        self.seen = Counter()

    def clear(self) -> None:
        self.rules = []
        self.fired = []

    def choose(self, kind: RequestKind, *, open_watch: bool = False) -> Rule | None:
        """The rule that hits this request, if any (the first that fires).

        ``open_watch``: a watch already streaming meets new rules; only the watch
        faults (cut, 410) can hit it, drawn as for the next request of its kind.
        """
        key = str(kind)
        if not open_watch:
            self.stats.requests[key] += 1
        number = self.seen[key]
        self.seen[key] += 1
        for index, rule in enumerate(self.rules):
            if self.fired[index] >= rule.max_count or not rule.matches(kind.verb, kind.resource):
                continue
            if number < rule.after:
                continue
            watch_fault = rule.kind in ("cut_watch", "gone")
            if (watch_fault and kind.verb != "watch") or (open_watch and not watch_fault):
                continue
            if _uniform(self.seed, index, key, number) < rule.share:
                self.fired[index] += 1
                self.stats.faults[rule.kind] += 1
                return rule
        return None


def _uniform(seed: int, rule: int, key: str, number: int) -> float:
    digest = hashlib.blake2b(f"{seed}|{rule}|{key}|{number}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


def _status_body(code: int, reason: str, message: str) -> bytes:
    return json.dumps(
        {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": message,
            "reason": reason,
            "code": code,
        }
    ).encode()


_REASONS = {429: "TooManyRequests", 500: "InternalError", 503: "ServiceUnavailable"}
BINDING = "create pods/binding"
_GONE_EVENT = (
    json.dumps(
        {
            "type": "ERROR",
            "object": json.loads(
                _status_body(410, "Expired", "injected by the fault proxy: too old resourceVersion")
            ),
        }
    ).encode()
    + b"\n"
)


def _ignore(outcome: str) -> None:
    del outcome


class Proxy:
    """The aiohttp application: forward, or misbehave."""

    def __init__(self, upstream: str, pki: Pki) -> None:
        self.upstream = upstream.rstrip("/")
        self.faults = Faults()
        context = ssl.create_default_context(cafile=str(pki.ca_cert))
        context.load_cert_chain(str(pki.admin_cert), str(pki.admin_key))
        self._client_ssl = context
        self._session: aiohttp.ClientSession | None = None

    async def start(self, _: web.Application) -> None:
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(ssl=self._client_ssl, limit=256),
            auto_decompress=False,
        )

    async def stop(self, _: web.Application) -> None:
        if self._session is not None:
            await self._session.close()

    # -- the control port ------------------------------------------------------------------

    async def put_rules(self, request: web.Request) -> web.Response:
        raw = await request.json()
        try:
            rules = [Rule.from_json(r) for r in raw.get("rules", [])]
        except (KeyError, ValueError, TypeError) as error:
            return web.json_response({"error": str(error)}, status=400)
        self.faults.set(int(raw.get("seed", 0)), rules)
        return web.json_response({"rules": len(rules)})

    async def delete_rules(self, _: web.Request) -> web.Response:
        self.faults.clear()
        return web.json_response({"rules": 0})

    async def get_stats(self, _: web.Request) -> web.Response:
        return web.json_response(self.faults.stats.to_json())

    # -- the proxy port --------------------------------------------------------------------

    async def handle(self, request: web.Request) -> web.StreamResponse:
        kind = RequestKind.of(request.method, request.path, dict(request.query))
        rule = self.faults.choose(kind)
        note = self._journal(kind, request.path)
        body = await request.read()
        if rule is not None:
            if rule.kind == "status":
                note(f"injected {rule.status}")
                return self._refuse(rule.status)
            if rule.kind == "reset":
                note("injected reset")
                return _abort(request)
            if rule.kind == "stall":
                note("injected stall")
                await asyncio.sleep(rule.seconds)
                return _abort(request)
            if rule.kind == "gone":
                return await self._gone(request)
            if rule.kind == "delay":
                await asyncio.sleep(rule.seconds)
        try:
            return await self._forward(request, kind, body, rule, note)
        except (aiohttp.ClientError, TimeoutError, OSError):
            # No server (it restarts, or is paused past our limit): the client sees no answer.
            self.faults.stats.upstream_errors += 1
            if kind.verb not in ("get", "list", "watch"):
                # It may have taken effect before the server went: the outcome is unknown.
                self.faults.stats.undelivered[f"{kind} ?"] += 1
            note("upstream error")
            return _abort(request)

    def _journal(self, kind: RequestKind, path: str) -> Callable[[str], None]:
        """For a Binding, a slot in its pod's journal (in order of arrival) to note its outcome."""
        if str(kind) != BINDING:
            return _ignore
        journal = self.faults.stats.bindings.setdefault(path, [])
        index = len(journal)
        journal.append("sent")

        def note(outcome: str) -> None:
            journal[index] = outcome

        return note

    def _refuse(self, code: int) -> web.Response:
        headers = {"Retry-After": "1"} if code == 429 else {}
        reason = _REASONS.get(code, "InternalError")
        return web.Response(
            status=code,
            body=_status_body(code, reason, f"injected by the fault proxy: {code}"),
            content_type="application/json",
            headers=headers,
        )

    async def _gone(self, request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
        await response.prepare(request)
        await response.write(_GONE_EVENT)
        await response.write_eof()
        return response

    async def _forward(
        self,
        request: web.Request,
        kind: RequestKind,
        body: bytes,
        rule: Rule | None,
        note: Callable[[str], None],
    ) -> web.StreamResponse:
        assert self._session is not None
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP_BY_HOP}
        watching = kind.verb == "watch"
        timeout = aiohttp.ClientTimeout(
            total=None if watching else UPSTREAM_TIMEOUT_SECONDS, sock_connect=10
        )
        async with self._session.request(
            request.method,
            f"{self.upstream}{request.rel_url}",
            data=body or None,
            headers=headers,
            timeout=timeout,
            allow_redirects=False,
        ) as upstream:
            answer = f"{kind} {upstream.status}"
            self.faults.stats.answers[answer] += 1
            reply_headers = {
                k: v for k, v in upstream.headers.items() if k.lower() not in _HOP_BY_HOP
            }
            if not watching or upstream.status != 200:
                payload = await upstream.read()
                if rule is not None and rule.kind == "lost_answer":
                    self.faults.stats.undelivered[answer] += 1
                    note(f"{upstream.status} lost")
                    return self._refuse(500)
                if _client_gone(request):
                    self.faults.stats.undelivered[answer] += 1
                    note(f"{upstream.status} undelivered")
                else:
                    note(str(upstream.status))
                return web.Response(status=upstream.status, body=payload, headers=reply_headers)
            response = web.StreamResponse(status=200, headers=reply_headers)
            await response.prepare(request)
            lines = 0
            generation = self.faults.generation
            async for chunk in upstream.content.iter_any():
                if rule is None and generation != self.faults.generation:
                    generation = self.faults.generation
                    rule = self.faults.choose(kind, open_watch=True)
                if rule is not None and rule.kind == "gone":
                    await response.write(_GONE_EVENT)
                    await response.write_eof()
                    return response
                await response.write(chunk)
                if rule is not None and rule.kind == "cut_watch":
                    lines += chunk.count(b"\n")
                    if lines >= rule.events:
                        return _abort(request)
            await response.write_eof()
            return response


def _client_gone(request: web.Request) -> bool:
    transport = request.transport
    return transport is None or transport.is_closing()


def _abort(request: web.Request) -> web.Response:
    """Close the client's connection at once, with no answer (a reset)."""
    transport = request.transport
    if transport is not None:
        transport.abort()
    # aiohttp cannot write to an aborted connection; this answer goes nowhere.
    return web.Response(status=500)


async def serve(*, port: int, control_port: int, upstream: str, pki: Pki) -> None:
    proxy = Proxy(upstream, pki)
    app = web.Application(client_max_size=8 * 1024 * 1024)
    app.on_startup.append(proxy.start)
    app.on_cleanup.append(proxy.stop)
    app.router.add_route("*", "/{tail:.*}", proxy.handle)
    control = web.Application()
    control.router.add_put("/rules", proxy.put_rules)
    control.router.add_delete("/rules", proxy.delete_rules)
    control.router.add_get("/stats", proxy.get_stats)
    runners = [web.AppRunner(app, access_log=None), web.AppRunner(control, access_log=None)]
    for runner in runners:
        await runner.setup()
    await web.TCPSite(runners[0], "127.0.0.1", port, ssl_context=pki.server_context()).start()
    await web.TCPSite(runners[1], "127.0.0.1", control_port).start()
    print(f"fault proxy on 127.0.0.1:{port} -> {upstream}, control on {control_port}", flush=True)
    try:
        await asyncio.Event().wait()
    finally:
        for runner in runners:
            await runner.cleanup()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m e2e.faultproxy", description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--control-port", type=int, required=True)
    parser.add_argument("--upstream", required=True, help="https://127.0.0.1:<API server port>")
    parser.add_argument("--pki-dir", type=Path, required=True)
    args = parser.parse_args(argv)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(
            serve(
                port=args.port,
                control_port=args.control_port,
                upstream=args.upstream,
                pki=Pki(args.pki_dir),
            )
        )
    return 0


class FaultProxy:
    """The harness's handle on a running proxy process: its kubeconfig, rules and counts."""

    def __init__(self, process: Process, *, port: int, control_port: int, kubeconfig: Path) -> None:
        self.process = process
        self.port = port
        self.control_port = control_port
        self.kubeconfig = kubeconfig

    @classmethod
    def start(cls, *, upstream_port: int, pki: Pki, directory: Path) -> FaultProxy:
        """Start a proxy in front of ``upstream_port``; its kubeconfig is in ``directory``."""
        port, control_port = free_port(), free_port()
        process = Process.start(
            "fault-proxy",
            [
                sys.executable,
                "-m",
                "e2e.faultproxy",
                f"--port={port}",
                f"--control-port={control_port}",
                f"--upstream=https://127.0.0.1:{upstream_port}",
                f"--pki-dir={pki.directory}",
            ],
            log=directory / "fault-proxy.log",
            # e2e is not an installed package: run it from this checkout whatever the cwd.
            env={"PYTHONPATH": str(Path(__file__).resolve().parents[1])},
            die_with_parent=True,
        )
        proxy = cls(
            process,
            port=port,
            control_port=control_port,
            kubeconfig=write_kubeconfig(directory / "proxied.kubeconfig", port=port, pki=pki),
        )
        wait_until(proxy._answers, timeout=30, what="the fault proxy to listen", watch=[process])
        return proxy

    def _answers(self) -> bool:
        try:
            self.stats()
        except OSError:
            return False
        return True

    def _control(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.control_port}{path}",
            data=data,
            method=method,
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=10) as answer:
            return json.loads(answer.read())

    def inject(self, rules: list[Rule], *, seed: int) -> None:
        """Replace the rules in force (counts of earlier faults are kept)."""
        self._control("PUT", "/rules", {"seed": seed, "rules": [asdict(r) for r in rules]})

    def calm(self) -> None:
        """No more faults; requests pass untouched."""
        self._control("DELETE", "/rules")

    def stats(self) -> dict[str, Any]:
        stats: dict[str, Any] = self._control("GET", "/stats")
        return stats

    def stop(self) -> None:
        self.process.stop(grace_seconds=5)


if __name__ == "__main__":
    sys.exit(main())
