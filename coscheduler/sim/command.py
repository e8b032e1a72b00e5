"""``coscheduler simulate``: replay a workload offline, or generate one.

``coscheduler simulate FILE`` is short for ``coscheduler simulate replay
FILE``. This module imports only click at import time: NumPy, the core and
matplotlib load when a command runs, so ``coscheduler --help`` stays fast.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import click

from coscheduler.core.strategy import Strategy

__all__ = ["simulate"]

_POLICIES = ("both", "gang", "baseline")


class _ReplayByDefault(click.Group):
    """A group whose first argument, when not a subcommand, is replay's FILE."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ctx.help_option_names:
            args = ["replay", *args]
        return super().parse_args(ctx, args)


@click.group(cls=_ReplayByDefault)
def simulate() -> None:
    """Compare gang scheduling with a one-pod-at-a-time baseline, offline.

    \b
      coscheduler simulate FILE [--json] [--plot out.png]
      coscheduler simulate generate --nodes 100 --gangs 500 -o workload.yaml

    FILE describes a cluster and a workload, and may define queues (see
    manifests/examples/simulate/). Nothing talks to Kubernetes: the same
    core that `coscheduler run` uses places the pods in simulated time.
    With queues, each queue's cpu share and fair share are reported too.
    """


@simulate.command()
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--policy",
    type=click.Choice(_POLICIES),
    default="both",
    show_default=True,
    help="replay with our gang planner, the baseline, or both",
)
@click.option(
    "--strategy",
    type=click.Choice([s.value for s in Strategy]),
    default="most-allocated",
    show_default=True,
    help="node ranking, for both policies",
)
@click.option("--json", "as_json", is_flag=True, help="print JSON instead of the table")
@click.option(
    "--plot",
    type=click.Path(dir_okay=False, writable=True, path_type=Path),
    help="write utilization over time, the wait CDF (and share per queue) to this PNG",
)
@click.option(
    "--domain-key",
    help="report the share of started gangs placed within one value of this node label",
)
@click.option(
    "--ignore-topology",
    is_flag=True,
    help="drop the gangs' topology and onePer, to see what keeping them costs",
)
def replay(
    file: Path,
    policy: str,
    strategy: str,
    as_json: bool,
    plot: Path | None,
    domain_key: str | None,
    ignore_topology: bool,
) -> None:
    """Replay FILE under each policy and compare them."""
    from coscheduler.sim import replay as replaying
    from coscheduler.sim import report
    from coscheduler.sim.model import ScenarioError, load_scenario

    try:
        scenario = load_scenario(file)
    except ScenarioError as error:
        raise click.ClickException(str(error)) from None
    if ignore_topology:
        scenario = scenario.without_topology()
    labels = {node.name: node.labels for node in scenario.nodes}
    chosen = [p for p in replaying.Policy if policy in ("both", p.value)]
    results = []
    summaries = []
    for each in chosen:
        started = time.perf_counter()
        result = replaying.replay(scenario, each, Strategy(strategy))
        elapsed = time.perf_counter() - started
        summaries.append(report.summarize(result, elapsed, domain_key, labels))
        results.append(result)
    if plot is not None:
        from coscheduler.sim.plot import PlotUnavailableError, write_plot

        try:
            write_plot(results, plot, title=file.name)
        except PlotUnavailableError as error:
            raise click.ClickException(str(error)) from None
    if as_json:
        document: dict[str, Any] = {
            "scenario": {
                "file": str(file),
                "nodes": len(scenario.nodes),
                "gangs": len(scenario.gangs),
                "pods": scenario.pods,
                "cpuCapacity": scenario.cpu_capacity / 1000,
                **({"queues": [q.name for q in scenario.queues]} if scenario.queues else {}),
            },
            "strategy": strategy,
            "policies": {s.policy: report.to_json(s) for s in summaries},
        }
        if plot is not None:
            document["plot"] = str(plot)
        click.echo(json.dumps(document, indent=2))
        return
    click.echo(
        f"{file}: {len(scenario.gangs):,} gangs ({scenario.pods:,} pods) on "
        f"{len(scenario.nodes):,} nodes ({scenario.cpu_capacity / 1000:,g} cpu), {strategy}"
    )
    click.echo()
    click.echo(report.render_table(summaries))
    queues = report.render_queues(summaries)
    if queues:
        click.echo()
        click.echo(queues)
    click.echo()
    took = ", ".join(f"{s.policy} {s.replay_seconds:.2f} s" for s in summaries)
    click.echo(f"replayed in {took}" + (f"; plot written to {plot}" if plot else ""))


def _numbers(text: str, kind: type[int] | type[str]) -> tuple[Any, ...]:
    items = tuple(part.strip() for part in text.split(",") if part.strip())
    if not items:
        raise click.BadParameter(f"expected a comma-separated list, got {text!r}")
    if kind is int:
        try:
            values = tuple(int(item) for item in items)
        except ValueError:
            raise click.BadParameter(f"expected integers, got {text!r}") from None
        if any(v < 1 for v in values):
            raise click.BadParameter(f"sizes are at least 1, got {text!r}")
        return values
    return items


def _range(text: str) -> tuple[float, float]:
    low, _, high = text.partition("-")
    try:
        lo, hi = float(low), float(high or low)
    except ValueError:
        raise click.BadParameter(f"expected MIN-MAX seconds, got {text!r}") from None
    if not 0 < lo <= hi:
        raise click.BadParameter(f"expected 0 < MIN <= MAX, got {text!r}")
    return lo, hi


@simulate.command()
@click.option("--nodes", type=click.IntRange(min=1), default=100, show_default=True)
@click.option("--node-cpu", default="32", show_default=True, help="allocatable cpu per node")
@click.option("--node-memory", default="128Gi", show_default=True)
@click.option("--gangs", type=click.IntRange(min=1), default=500, show_default=True)
@click.option("--sizes", default="1,2,4,8,16,32", show_default=True, help="gang sizes to draw")
@click.option("--pod-cpu", default="500m,1,2,4", show_default=True, help="per-pod cpu to draw")
@click.option("--pod-memory", default="1Gi,2Gi,4Gi,8Gi", show_default=True)
@click.option("--priorities", default="0", show_default=True, help="priorities to draw")
@click.option(
    "--min-member-fraction",
    type=click.FloatRange(min=0, max=1, min_open=True),
    default=1.0,
    show_default=True,
    help="minMember = ceil(size x this)",
)
@click.option(
    "--arrival-rate",
    type=click.FloatRange(min=0, min_open=True),
    default=0.5,
    show_default=True,
    help="gangs per second (Poisson)",
)
@click.option("--run-seconds", default="60-900", show_default=True, help="MIN-MAX, uniform")
@click.option("--seed", type=int, default=1, show_default=True)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, writable=True, path_type=Path),
    help="write here instead of standard output",
)
def generate(**options: Any) -> None:
    """Write a synthetic scenario: equal nodes, gangs arriving at random."""
    from coscheduler.api.quantity import QuantityError, to_milli
    from coscheduler.sim.generate import GeneratorSettings, command_line, render
    from coscheduler.sim.generate import generate as make

    for flag, values in (
        ("--node-cpu", [options["node_cpu"]]),
        ("--node-memory", [options["node_memory"]]),
        ("--pod-cpu", _numbers(options["pod_cpu"], str)),
        ("--pod-memory", _numbers(options["pod_memory"], str)),
    ):
        for value in values:
            try:
                to_milli(value)
            except QuantityError as error:
                raise click.BadParameter(str(error), param_hint=flag) from None
    try:
        priorities = tuple(int(p) for p in _numbers(options["priorities"], str))
    except ValueError:
        raise click.BadParameter("expected integers", param_hint="--priorities") from None
    low, high = _range(options["run_seconds"])
    settings = GeneratorSettings(
        nodes=options["nodes"],
        node_cpu=options["node_cpu"],
        node_memory=options["node_memory"],
        gangs=options["gangs"],
        sizes=_numbers(options["sizes"], int),
        pod_cpus=_numbers(options["pod_cpu"], str),
        pod_memories=_numbers(options["pod_memory"], str),
        priorities=priorities,
        min_member_fraction=options["min_member_fraction"],
        arrival_rate=options["arrival_rate"],
        run_seconds_min=low,
        run_seconds_max=high,
        seed=options["seed"],
    )
    text = render(make(settings), command_line(settings))
    if options["output"] is None:
        click.echo(text, nl=False)
    else:
        options["output"].write_text(text)
        click.echo(
            f"wrote {settings.gangs:,} gangs on {settings.nodes:,} nodes to {options['output']}"
        )
