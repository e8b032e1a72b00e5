"""The ``coscheduler`` command line.

Subcommands:

* ``version``: print the version.
* ``run``: the operator (scheduling loop and PodGroup controller). Every flag
  has a ``COSCHEDULER_*`` environment variable; a flag given wins.
* ``simulate``: replay a workload against the core with no cluster, gang
  planner against a one-pod-at-a-time baseline (:mod:`coscheduler.sim`).
* ``queue``: the pending groups in the order the next pass tries them, read
  from a running scheduler's ``/debug/queue``.
* ``dashboard``: the read-only web page of queues, the line and the room,
  served by a process that only reads the cluster (``run --dashboard`` serves
  the same page from the scheduler).

The other subcommands' modules are imported when they run (``simulate`` is
named by its module, :class:`LazyGroup`).
"""

from __future__ import annotations

import asyncio
import importlib
import json
import signal
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Sequence
from typing import Any

import click
from pydantic import ValidationError

import coscheduler
from coscheduler.api import validation
from coscheduler.app import run as run_operator
from coscheduler.runtime.errors import LeadershipLostError
from coscheduler.runtime.eventloop import loop_factory
from coscheduler.runtime.logging import configure_logging
from coscheduler.runtime.settings import SettingDoc, Settings, documented_settings
from coscheduler.runtime.startup import Startup


class LazyGroup(click.Group):
    """A group whose ``lazy`` subcommands are named by ``module:attribute`` and imported
    only when asked for (run, or listed by ``--help``)."""

    def __init__(self, *args: Any, lazy: dict[str, str] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = dict(lazy or {})

    def list_commands(self, context: click.Context) -> list[str]:
        return sorted({*super().list_commands(context), *self.lazy})

    def get_command(self, context: click.Context, name: str) -> click.Command | None:
        if name not in self.lazy:
            return super().get_command(context, name)
        module, _, attribute = self.lazy[name].partition(":")
        command = getattr(importlib.import_module(module), attribute)
        if not isinstance(command, click.Command):
            raise TypeError(f"{self.lazy[name]} is not a click command")
        return command


def _print_version(context: click.Context, _: click.Parameter, given: bool) -> None:
    if given and not context.resilient_parsing:
        click.echo(f"coscheduler, version {coscheduler.__version__}")
        context.exit()


@click.group(
    cls=LazyGroup,
    # `coscheduler simulate`: offline replay and workload generator.
    lazy={"simulate": "coscheduler.sim.command:simulate"},
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_print_version,
    help="Show the version and exit.",
)
def main() -> None:
    """coscheduler: place each PodGroup all together or not at all."""


@main.command()
def version() -> None:
    """Print the version of coscheduler."""
    click.echo(f"coscheduler {coscheduler.__version__}")


#: Columns of ``coscheduler queue``: heading, and the row's field.
_QUEUE_COLUMNS = (
    ("POSITION", "clusterPosition"),
    ("QUEUE", "queue"),
    ("IN-QUEUE", "queuePosition"),
    ("NAMESPACE", "namespace"),
    ("NAME", "name"),
    ("KIND", "kind"),
    ("PRIORITY", "priority"),
    ("STATE", "state"),
    ("REASON", "reason"),
)


def queue_table(rows: Sequence[dict[str, Any]]) -> str:
    """``/debug/queue``'s rows as aligned columns, in the order given."""
    cells = [[heading for heading, _ in _QUEUE_COLUMNS]]
    for row in rows:
        cells.append(
            ["" if row.get(field) is None else str(row[field]) for _, field in _QUEUE_COLUMNS]
        )
    widths = [max(len(line[index]) for line in cells) for index in range(len(_QUEUE_COLUMNS))]
    return "\n".join(
        "   ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
        for line in cells
    )


@main.command()
@click.option("--namespace", "-n", default=None, help="only the groups of this namespace")
@click.option("--queue", "-q", "queue_name", default=None, help="only the groups of this queue")
@click.option(
    "--endpoint",
    default="http://127.0.0.1:10251",
    envvar="COSCHEDULER_ENDPOINT",
    show_default=True,
    help="the scheduler's metrics address, where /debug/queue is served",
)
@click.option("--output", "-o", type=click.Choice(["table", "json"]), default="table")
def queue(namespace: str | None, queue_name: str | None, endpoint: str, output: str) -> None:
    """List the pending groups in the order the next pass tries them.

    POSITION is the place across the cluster, IN-QUEUE within the group's queue
    (1 is tried first); filters choose rows and keep their numbers.
    """
    query = {k: v for k, v in (("namespace", namespace), ("queue", queue_name)) if v}
    url = f"{endpoint.rstrip('/')}/debug/queue"
    if query:
        url += "?" + urllib.parse.urlencode(query)
    try:
        with urllib.request.urlopen(url, timeout=10) as answer:
            body = json.load(answer)
    except urllib.error.HTTPError as error:
        detail = error.read().decode(errors="replace").strip()
        raise click.ClickException(f"{url}: HTTP {error.code} {detail}") from None
    except (urllib.error.URLError, OSError) as error:
        raise click.ClickException(f"{url}: {error}") from None
    rows = body.get("groups", [])
    if output == "json":
        click.echo(json.dumps(rows, indent=2))
    elif rows:
        click.echo(queue_table(rows))
    else:
        click.echo("no pending groups")


def _param(doc: SettingDoc) -> str:
    """The click parameter that carries one setting: its path, so none collide."""
    return "__".join(doc.path)


def _overrides(values: dict[str, Any]) -> dict[str, Any]:
    """Nested settings from the flags that were given (None and () mean not given)."""
    result: dict[str, Any] = {}
    for doc in documented_settings():
        value = values.get(_param(doc))
        if value is None or value == ():
            continue
        target = result
        for part in doc.path[:-1]:
            target = target.setdefault(part, {})
        target[doc.path[-1]] = value
    return result


def _load_settings(values: dict[str, Any]) -> Settings:
    try:
        return Settings(**_overrides(values))
    except ValidationError as error:
        lines = [f"  {line}" for line in validation.problems(error)]
        raise click.UsageError("invalid settings:\n" + "\n".join(lines)) from None


def _run_options(command: Any) -> Any:
    """One flag per setting, made from the setting's own type, description and default.

    Flags default to None ("not given"), so the environment and then the
    setting's default apply; the help shows that default.
    """
    for doc in reversed(documented_settings()):
        options: dict[str, Any] = {
            "default": None,
            "help": f"{doc.help} [{doc.default.strip('`')}]",
        }
        if doc.repeatable:
            options["multiple"] = True
            options["default"] = ()
        elif doc.choices is not None:
            options["type"] = click.Choice(doc.choices)
        elif doc.kind is not bool:
            options["type"] = doc.kind
        command = click.option(_param(doc), doc.flag, **options)(command)
    return command


@main.command()
@_run_options
def run(**values: Any) -> None:
    """Schedule pods in gangs and keep PodGroup status true."""
    _operate(_load_settings(values), decide=True)


@main.command()
@click.option("--kubeconfig", default=None, help="kubeconfig file (as for run)")
@click.option("--scheduler-name", default=None, help="the schedulerName whose pods are shown")
@click.option("--address", default="127.0.0.1", show_default=True, help="address of the page")
@click.option("--port", default=10252, show_default=True, type=int, help="port of the page")
def dashboard(kubeconfig: str | None, scheduler_name: str | None, address: str, port: int) -> None:
    """Serve the read-only dashboard page (queues, the line, the room) on its own.

    It reads the cluster as a standby does and never writes to it: no Lease,
    no Binding, no status. Its places in line and reasons are its own reading
    of the scheduler's rules and the status the scheduler wrote. Its address
    is logged (the ``dashboard`` line's ``url``).
    """
    settings = _load_settings(
        {
            "kubeconfig": kubeconfig,
            "scheduler_name": scheduler_name,
            "serving__address": "127.0.0.1",  # its probes' port: loopback, any free one
            "serving__port": 0,
            "dashboard__enabled": True,
            "dashboard__address": address,
            "dashboard__port": port,
        }
    )
    _operate(settings, decide=False)


def _operate(settings: Settings, *, decide: bool) -> None:
    """Run :func:`coscheduler.app.run` until a signal, as ``run`` and ``dashboard`` do."""
    configure_logging(settings.log_level, settings.log_format)
    new_loop = loop_factory(settings.event_loop)
    startup = Startup()
    startup.mark("imports")

    async def main_task() -> None:
        task = asyncio.current_task()
        assert task is not None
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, task.cancel)
        await run_operator(settings, startup, decide=decide)

    try:
        with asyncio.Runner(loop_factory=new_loop) as runner:
            runner.run(main_task())
    except asyncio.CancelledError:
        pass
    except LeadershipLostError as error:
        click.echo(f"coscheduler: {error}; exiting so that a fresh start rebuilds state", err=True)
        sys.exit(1)


def run_settings(args: Sequence[str]) -> Settings:
    """The settings ``coscheduler run ARGS`` would start with, without starting anything.

    Parsed by the command's own flags, then validated as at start: an unknown
    flag or a bad value raises ``click.UsageError``. The Helm chart's tests
    check the flags it renders with this.
    """
    assert isinstance(run, click.Command)
    with run.make_context("run", list(args)) as context:
        return _load_settings(context.params)
