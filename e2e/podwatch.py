"""A watch of every pod, kept as a timeline for :mod:`e2e.gangs`, in a thread of its own.

It lists the pods, then watches from the list's resourceVersion, so nothing
between the two is lost; :meth:`PodWatch.start` returns once the watch is
established, so whatever a test creates afterwards is seen. A cut stream is
resumed from the last version seen; a version too old to resume (410) is
listed again, the differences recorded as events (their exact order is lost;
``gaps`` says so). Pods are kept slimmed (:func:`e2e.gangs.slim`).
"""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import threading
import time
from collections.abc import Callable

from e2e.api import ApiClient, ApiError, Json
from e2e.gangs import PodEvent, slim

PODS = "/api/v1/pods"
RECONNECT_PAUSE_SECONDS = 0.2


def _version(pod: Json) -> int:
    try:
        return int(pod["metadata"]["resourceVersion"])
    except (KeyError, TypeError, ValueError):
        return 0


def _uid(pod: Json) -> str:
    meta = pod.get("metadata") or {}
    return str(meta.get("uid") or f"{meta.get('namespace')}/{meta.get('name')}")


class PodWatch:
    """Every pod event of the cluster from :meth:`start` to :meth:`stop`, with its time seen."""

    def __init__(self, api: ApiClient, *, clock: Callable[[], float] | None = None) -> None:
        self.api = api
        origin = time.monotonic()
        self.clock = clock or (lambda: time.monotonic() - origin)
        """Seconds since the watch was made, unless told otherwise: reports read as offsets."""
        self.events: list[PodEvent] = []
        self.started_at = 0.0
        self.gaps: list[str] = []
        self._live: dict[str, tuple[int, Json]] = {}
        """uid -> (resourceVersion, slimmed pod) of every pod the watch believes exists."""
        self._version = "0"
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._connection: http.client.HTTPSConnection | None = None
        self._response: http.client.HTTPResponse | None = None
        self._thread: threading.Thread | None = None

    # -- recording ------------------------------------------------------------------------------

    def _record(self, kind: str, pod: Json) -> None:
        small = slim(pod)
        with self._lock:
            self.events.append(PodEvent(self.clock(), kind, small))
            if kind == "DELETED":
                self._live.pop(_uid(pod), None)
            else:
                self._live[_uid(pod)] = (_version(pod), small)

    def _list(self) -> None:
        """List every pod: the first time, the trace's opening; after a 410, the differences."""
        listed = self.api.get(PODS)
        first = self._thread is None
        seen = set()
        for pod in listed.get("items", []):
            seen.add(_uid(pod))
            known = self._live.get(_uid(pod))
            if known is None or known[0] != _version(pod):
                self._record("ADDED" if first or known is None else "MODIFIED", pod)
        for uid, (_, pod) in list(self._live.items()):
            if uid not in seen:
                self._record("DELETED", pod)
        self._version = str(listed["metadata"]["resourceVersion"])

    def _open(self) -> None:
        path = f"{PODS}?watch=1&allowWatchBookmarks=true&resourceVersion={self._version}"
        self._connection, self._response = self.api.open_stream(path)

    def start(self) -> PodWatch:
        """List, then open the watch; returns once it is established."""
        self._list()
        self.started_at = self.clock()
        self._open()
        self._thread = threading.Thread(target=self._run, name="pod-watch", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stopping.is_set():
            try:
                if self._response is None:
                    self._open()
                self._follow()
            except ApiError as error:
                if error.status == 410:
                    self.gaps.append(f"resourceVersion {self._version} expired: listed again")
                    self._relist()
            except (OSError, http.client.HTTPException, ValueError):
                pass  # a cut stream or a server restarting: resume from the last version seen
            self._close()
            self._stopping.wait(RECONNECT_PAUSE_SECONDS)

    def _relist(self) -> None:
        with contextlib.suppress(OSError, http.client.HTTPException, ApiError):
            self._list()

    def _follow(self) -> None:
        assert self._response is not None
        while not self._stopping.is_set():
            line = self._response.readline()
            if not line:
                return  # the server ended the watch
            event = json.loads(line)
            kind, obj = event.get("type"), event.get("object") or {}
            if kind == "ERROR":
                raise ApiError("WATCH", PODS, int(obj.get("code") or 500), json.dumps(obj))
            self._version = str(obj["metadata"]["resourceVersion"])
            if kind in ("ADDED", "MODIFIED", "DELETED"):
                self._record(str(kind), obj)

    def _close(self) -> None:
        connection, self._connection, self._response = self._connection, None, None
        if connection is not None:
            connection.close()

    # -- ending ---------------------------------------------------------------------------------

    def caught_up(self) -> bool:
        """Has the watch seen everything a list shows now (and every deletion before it)?"""
        listed = self.api.get(PODS)
        at = int(listed["metadata"]["resourceVersion"])
        now = {_uid(pod): _version(pod) for pod in listed.get("items", [])}
        with self._lock:
            live = {uid: version for uid, (version, _) in self._live.items()}
        behind = any(live.get(uid, -1) < version for uid, version in now.items())
        missed_deletion = any(uid not in now and version <= at for uid, version in live.items())
        return not (behind or missed_deletion)

    def drain(self, *, timeout: float = 5.0) -> bool:
        """Wait (bounded) until the watch has caught up with a fresh list; False if not."""
        deadline = self.clock() + timeout
        while True:
            with contextlib.suppress(OSError, http.client.HTTPException, ApiError):
                if self.caught_up():
                    return True
            if self.clock() >= deadline:
                return False
            time.sleep(0.1)

    def stop(self) -> None:
        self._stopping.set()
        connection = self._connection
        if connection is not None and connection.sock is not None:
            # Wakes the thread's blocking read; it then sees the stop and leaves.
            with contextlib.suppress(OSError):
                connection.sock.shutdown(socket.SHUT_RDWR)
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._close()

    def timeline(self, until: float | None = None) -> list[PodEvent]:
        """The events seen so far (up to ``until``, if given), in the order seen."""
        with self._lock:
            return [e for e in self.events if until is None or e.at <= until]
