"""``coscheduler run`` as a real process against the local control plane.

Tests start the scheduler exactly as a user would, from its console script,
with its own log file; they can stop it politely (SIGTERM) or kill it
(SIGKILL) to prove that a restart completes what a crash interrupted.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path

from e2e.waiting import wait_for

__all__ = ["SchedulerProcess", "StartScheduler", "console_script"]


def console_script() -> list[str]:
    script = Path(sys.executable).with_name("coscheduler")
    return [str(script)] if script.exists() else [sys.executable, "-m", "coscheduler.cli"]


class SchedulerProcess:
    """One ``coscheduler run`` process; its log is ``log_path``."""

    def __init__(
        self,
        *,
        kubeconfig: Path,
        log_path: Path,
        args: Sequence[str] = (),
        env: dict[str, str] | None = None,
    ) -> None:
        self.kubeconfig = kubeconfig
        self.log_path = log_path
        self.args = list(args)
        self.env = env or {}
        self._process: subprocess.Popen[bytes] | None = None
        self.port: int | None = None
        #: The dashboard's port, when it was started with ``--dashboard``.
        self.dashboard_port: int | None = None

    def start(self, *, wait_ready: bool = True) -> SchedulerProcess:
        argv = [
            *console_script(),
            "run",
            "--kubeconfig",
            str(self.kubeconfig),
            "--metrics-address",
            "127.0.0.1",
            "--log-format",
            "json",
            *self.args,
        ]
        log = self.log_path.open("ab")
        self._process = subprocess.Popen(
            argv,
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, **self.env},
            start_new_session=True,
        )
        log.close()
        if wait_ready:
            self.wait_ready()
        return self

    @property
    def pid(self) -> int:
        assert self._process is not None
        return self._process.pid

    def alive(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def wait_ready(self, timeout: float = 60.0) -> None:
        """Until the process logs that it schedules (it holds the Lease and has listed)."""

        def scheduling() -> bool:
            if not self.alive():
                raise AssertionError(f"coscheduler exited early:\n{self.log()[-3000:]}")
            return '"event": "scheduling"' in self.log()

        wait_for(
            scheduling,
            describe=f"coscheduler to start scheduling (log {self.log_path})",
            timeout=timeout,
        )
        self.port = self._served_port("serving")
        self.dashboard_port = self._served_port("dashboard")

    def _served_port(self, event: str) -> int | None:
        for line in self.log().splitlines():
            if f'"event": "{event}"' in line and '"port":' in line:
                return int(line.split('"port":')[1].split(",")[0].split("}")[0])
        return None

    def metrics(self) -> str:
        assert self.port is not None, "the process did not report its port"
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=5) as answer:
            return str(answer.read().decode())

    def stop(self, timeout: float = 15.0) -> int | None:
        """SIGTERM, then SIGKILL if it does not exit in time; the exit code of a clean exit."""
        if self._process is None or self._process.poll() is not None:
            return None if self._process is None else self._process.returncode
        self._process.send_signal(signal.SIGTERM)
        try:
            return self._process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            return None

    def kill(self) -> None:
        """SIGKILL: a crash, with no chance to release anything."""
        if self._process is None or self._process.poll() is not None:
            return
        self._process.kill()
        self._process.wait(timeout=10)
        # Give the kernel a moment to close its sockets.
        time.sleep(0.1)


#: The ``start_scheduler`` fixture: ``start_scheduler(*flags, wait_ready=..., leader_elect=...)``.
StartScheduler = Callable[..., SchedulerProcess]
