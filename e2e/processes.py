"""Start, watch and stop the component processes of a local cluster.

Why each process gets its own session: a component that hangs, or spawns
children, can then be reaped as a whole group without touching anything else
on the machine, and a cluster started by ``e2e.cluster up`` outlives the
command that started it. Processes are stopped only by the PIDs this harness
recorded, after checking that the PID still runs the binary it started (PIDs
get reused).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

STOP_GRACE_SECONDS = 10.0
"""How long a component may take to exit after SIGTERM before it is killed."""

POLL_SECONDS = 0.1


class StartupError(RuntimeError):
    """A component died or did not become ready; the message carries its log's tail."""


def free_port() -> int:
    """Return a TCP port on 127.0.0.1 that is free right now (the kernel picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass(frozen=True)
class ProcessRecord:
    """What is needed to find and stop a component later, even from another command."""

    name: str
    pid: int
    binary: str
    log: str

    def is_running(self) -> bool:
        """True if the PID is alive and still runs our binary (not a reused PID)."""
        try:
            cmdline = Path(f"/proc/{self.pid}/cmdline").read_bytes()
            stat = Path(f"/proc/{self.pid}/stat").read_text()
        except OSError:
            return False
        zombie = stat.rsplit(")", 1)[-1].split()[0] == "Z"
        return not zombie and cmdline.split(b"\0", 1)[0].decode(errors="replace") == self.binary

    def log_tail(self, lines: int = 25) -> str:
        """The last lines of the component's log, for error messages."""
        return tail(Path(self.log), lines)


class Process:
    """A running component started by this harness."""

    def __init__(self, record: ProcessRecord, popen: subprocess.Popen[bytes] | None) -> None:
        self.record = record
        self._popen = popen

    @classmethod
    def start(
        cls,
        name: str,
        argv: Sequence[str],
        *,
        log: Path,
        env: dict[str, str] | None = None,
        die_with_parent: bool = False,
    ) -> Process:
        """Start ``argv`` in a new session with stdout and stderr appended to ``log``.

        With ``die_with_parent`` Linux sends the process SIGTERM when this
        Python process dies, even by SIGKILL, when no finaliser can run.
        """
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("ab") as output:
            popen = subprocess.Popen(
                list(argv),
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=parent_death_signal() if die_with_parent else None,
                env={**os.environ, **(env or {})},
            )
        record = ProcessRecord(name=name, pid=popen.pid, binary=str(argv[0]), log=str(log))
        return cls(record, popen)

    @classmethod
    def adopt(cls, record: ProcessRecord) -> Process:
        """Take over a process started by another command (from the recorded state)."""
        return cls(record, None)

    @property
    def name(self) -> str:
        return self.record.name

    def is_running(self) -> bool:
        if self._popen is not None:
            return self._popen.poll() is None
        return self.record.is_running()

    def exit_code(self) -> int | None:
        return self._popen.poll() if self._popen is not None else None

    def ensure_running(self) -> None:
        """Raise StartupError with the log's tail if the component has exited."""
        if not self.is_running():
            code = self.exit_code()
            how = f"exited with code {code}" if code is not None else "is no longer running"
            raise StartupError(
                f"{self.name} {how}; last lines of {self.record.log}:\n{self.record.log_tail()}"
            )

    def stop(self, grace_seconds: float = STOP_GRACE_SECONDS) -> None:
        """SIGTERM the process group, wait, then SIGKILL it; reap it if it is our child."""
        if not self.is_running():
            self._reap()
            return
        self._signal(signal.SIGTERM)
        self._signal(signal.SIGCONT)  # a paused process acts on SIGTERM only once resumed
        deadline = time.monotonic() + grace_seconds
        while time.monotonic() < deadline:
            if not self.is_running():
                break
            time.sleep(POLL_SECONDS)
        else:
            self._signal(signal.SIGKILL)
            deadline = time.monotonic() + grace_seconds
            while self.is_running() and time.monotonic() < deadline:
                time.sleep(POLL_SECONDS)
        self._reap()

    def pause(self) -> None:
        """SIGSTOP the process group: it neither runs nor answers, its sockets stay open."""
        self._signal(signal.SIGSTOP)

    def resume(self) -> None:
        """SIGCONT what ``pause`` stopped."""
        self._signal(signal.SIGCONT)

    def _signal(self, signum: signal.Signals) -> None:
        # The process leads its own session, so its group id is its pid: this reaches its
        # children too, and nothing else.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.record.pid, signum)

    def _reap(self) -> None:
        if self._popen is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._popen.wait(timeout=1)


def interrupt_on_sigterm() -> None:
    """Make SIGTERM raise KeyboardInterrupt, so that ``finally`` blocks clean up as on Ctrl-C.

    Only when SIGTERM still has its default action (which kills Python at once,
    skipping every finaliser); a handler someone else installed is left alone.
    """
    if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _raise_keyboard_interrupt)


def _raise_keyboard_interrupt(signum: int, frame: object) -> None:
    del frame
    raise KeyboardInterrupt(f"signal {signum}")


def parent_death_signal(signum: int = signal.SIGTERM) -> Callable[[], None]:
    """A ``preexec_fn`` asking Linux (prctl PR_SET_PDEATHSIG) to signal the child when we die."""
    libc = ctypes.CDLL(None, use_errno=True)
    pr_set_pdeathsig = 1

    def preexec() -> None:
        libc.prctl(pr_set_pdeathsig, int(signum), 0, 0, 0)

    return preexec


def wait_until(
    check: Callable[[], bool],
    *,
    timeout: float,
    what: str,
    watch: Sequence[Process] = (),
    last_seen: Callable[[], str] | None = None,
    interval: float = POLL_SECONDS,
) -> None:
    """Poll ``check`` until it holds; fail early if a watched process dies.

    The error says what was awaited, for how long, and what was last seen,
    because "timed out" alone diagnoses nothing.
    """
    deadline = time.monotonic() + timeout
    while True:
        for process in watch:
            process.ensure_running()
        if check():
            return
        if time.monotonic() > deadline:
            seen = f"; last seen: {last_seen()}" if last_seen else ""
            logs = "".join(
                f"\nlast lines of {p.record.log}:\n{p.record.log_tail(10)}" for p in watch
            )
            raise StartupError(f"timed out after {timeout:.0f}s waiting for {what}{seen}{logs}")
        time.sleep(interval)


def tail(path: Path, lines: int = 25) -> str:
    """The last ``lines`` lines of a text file, or a note that there is none."""
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return f"(no log at {path})"
