"""The ``coscheduler`` command line.

Subcommands:

* ``version``: print the version.
* ``run``: the operator (scheduling loop and PodGroup controller). Every flag
  has a ``COSCHEDULER_*`` environment variable; a flag given wins.
* ``simulate``: replay a workload against the core with no cluster, gang
  planner against a one-pod-at-a-time baseline (:mod:`coscheduler.sim`).
"""

from __future__ import annotations

import asyncio
import signal
import sys
from typing import Any

import click
from pydantic import ValidationError

from coscheduler import __version__
from coscheduler.api import validation
from coscheduler.core.strategy import Strategy
from coscheduler.runtime.settings import LogFormat, LogLevel, Settings
from coscheduler.sim.command import simulate


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="coscheduler")
def main() -> None:
    """coscheduler: place each PodGroup all together or not at all."""


@main.command()
def version() -> None:
    """Print the version of coscheduler."""
    click.echo(f"coscheduler {__version__}")


# `coscheduler simulate`: offline replay and workload generator (coscheduler/sim/command.py).
main.add_command(simulate)


# (flag, settings path, click options) for every setting of `run`.
_RUN_FLAGS: list[tuple[str, tuple[str, ...], dict[str, Any]]] = [
    ("--kubeconfig", ("kubeconfig",), {"help": "kubeconfig file; in-cluster credentials if unset"}),
    (
        "--scheduler-name",
        ("scheduler_name",),
        {"help": "spec.schedulerName to schedule [coscheduler]"},
    ),
    (
        "--namespace",
        ("namespaces",),
        {"multiple": True, "help": "schedule pods of this namespace only (repeatable) [all]"},
    ),
    (
        "--score-strategy",
        ("score_strategy",),
        {
            "type": click.Choice([s.value for s in Strategy]),
            "help": "node ranking [most-allocated]",
        },
    ),
    (
        "--qps",
        ("client", "qps"),
        {
            "type": float,
            "help": "API requests per second, for scheduling and again for reporting [50]",
        },
    ),
    (
        "--burst",
        ("client", "burst"),
        {"type": int, "help": "API requests in a burst, for each as --qps [100]"},
    ),
    (
        "--bind-concurrency",
        ("client", "bind_concurrency"),
        {"type": int, "help": "Bindings in flight [64]"},
    ),
    (
        "--backoff-initial-seconds",
        ("backoff", "initial_seconds"),
        {"type": float, "help": "first retry delay of a group [1]"},
    ),
    (
        "--backoff-max-seconds",
        ("backoff", "max_seconds"),
        {"type": float, "help": "longest retry delay [10]"},
    ),
    (
        "--leader-elect/--no-leader-elect",
        ("leader_election", "enabled"),
        {"default": None, "help": "hold a Lease to schedule [on]"},
    ),
    ("--lease-name", ("leader_election", "lease_name"), {"help": "Lease name [coscheduler]"}),
    (
        "--lease-namespace",
        ("leader_election", "lease_namespace"),
        {"help": "Lease namespace [kube-system]"},
    ),
    (
        "--lease-duration-seconds",
        ("leader_election", "lease_duration_seconds"),
        {"type": float, "help": "[15]"},
    ),
    (
        "--renew-deadline-seconds",
        ("leader_election", "renew_deadline_seconds"),
        {"type": float, "help": "[10]"},
    ),
    (
        "--retry-period-seconds",
        ("leader_election", "retry_period_seconds"),
        {"type": float, "help": "[2]"},
    ),
    (
        "--identity",
        ("leader_election", "identity"),
        {"help": "this replica's name in the Lease [POD_NAME or host-pid]"},
    ),
    (
        "--metrics-address",
        ("serving", "address"),
        {"help": "address of /metrics, /healthz, /readyz [0.0.0.0]"},
    ),
    (
        "--metrics-port",
        ("serving", "port"),
        {"type": int, "help": "port of /metrics, /healthz, /readyz; 0 picks one [10251]"},
    ),
    (
        "--log-level",
        ("log_level",),
        {"type": click.Choice([v.value for v in LogLevel]), "help": "[info]"},
    ),
    (
        "--log-format",
        ("log_format",),
        {"type": click.Choice([v.value for v in LogFormat]), "help": "[json]"},
    ),
]


def _overrides(values: dict[str, Any]) -> dict[str, Any]:
    """Nested settings from the flags that were given (None and () mean not given)."""
    result: dict[str, Any] = {}
    for flag, path, _ in _RUN_FLAGS:
        name = flag.split("/")[0].lstrip("-").replace("-", "_")
        value = values.get(name)
        if value is None or value == ():
            continue
        target = result
        for part in path[:-1]:
            target = target.setdefault(part, {})
        target[path[-1]] = value
    return result


def _load_settings(values: dict[str, Any]) -> Settings:
    try:
        return Settings(**_overrides(values))
    except ValidationError as error:
        lines = [f"  {line}" for line in validation.problems(error)]
        raise click.UsageError("invalid settings:\n" + "\n".join(lines)) from None


def _run_options(command: Any) -> Any:
    for flag, _, options in reversed(_RUN_FLAGS):
        command = click.option(*flag.split(" "), **options)(command)
    return command


@main.command()
@_run_options
def run(**values: Any) -> None:
    """Schedule pods in gangs and keep PodGroup status true."""
    settings = _load_settings(values)
    from coscheduler.app import run as run_operator
    from coscheduler.runtime.leader import LeadershipLostError
    from coscheduler.runtime.logging import configure_logging

    configure_logging(settings.log_level, settings.log_format)

    async def main_task() -> None:
        task = asyncio.current_task()
        assert task is not None
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, task.cancel)
        await run_operator(settings)

    try:
        asyncio.run(main_task())
    except asyncio.CancelledError:
        pass
    except LeadershipLostError as error:
        click.echo(f"coscheduler: {error}; exiting so that a fresh start rebuilds state", err=True)
        sys.exit(1)
