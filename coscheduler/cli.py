"""The ``coscheduler`` command line.

Subcommands:

* ``version``: print the version.
* ``run``: the operator (scheduling loop and PodGroup controller) against a
  cluster. Arrives with the operator issue.
* ``simulate``: replay a workload against the core with no cluster. Arrives
  with the simulator issue.
"""

from __future__ import annotations

import click

from coscheduler import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="coscheduler")
def main() -> None:
    """coscheduler: place each PodGroup all together or not at all."""


@main.command()
def version() -> None:
    """Print the version of coscheduler."""
    click.echo(f"coscheduler {__version__}")
