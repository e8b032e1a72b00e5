"""What ``coscheduler run`` imports before its first request (issue #28).

Each case runs a fresh interpreter, imports what the CLI's ``run`` imports
before it connects, and reads ``sys.modules``: the models, the deciding side,
the other subcommands and the libraries that can wait must not be there.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

#: What ``coscheduler run`` imports before it connects (coscheduler/cli.py's ``run``).
RUN_PATH = """
import coscheduler.cli
from coscheduler.app import run
from coscheduler.runtime.errors import LeadershipLostError
from coscheduler.runtime.eventloop import loop_factory
from coscheduler.runtime.informers.kinds import KINDS
from coscheduler.runtime.logging import configure_logging
from coscheduler.runtime.startup import Startup
"""

#: Imported later, or never on a start that needs none of them.
NOT_BEFORE_THE_FIRST_REQUEST = (
    # the models: the worker thread imports them with the deciding side
    "coscheduler.api.pod",
    "coscheduler.api.podgroup",
    "coscheduler.api.native_podgroup",
    "coscheduler.api.composite",
    "coscheduler.api.queue",
    "coscheduler.api.adapters.base",
    "coscheduler.api.adapters.table",
    "coscheduler.api.adapters.workload",
    # the deciding side
    "coscheduler.operator",
    "coscheduler.core.scheduler",
    "coscheduler.runtime.informers.registry",
    "coscheduler.runtime.leader",
    "numpy",
    # the other subcommands
    "coscheduler.sim.command",
)


def _imported_by(code: str) -> set[str]:
    environment = {
        name: value for name, value in os.environ.items() if not name.lower().endswith("_proxy")
    }
    out = subprocess.run(
        [sys.executable, "-c", code + "\nimport sys, json\nprint(json.dumps(sorted(sys.modules)))"],
        env=environment,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return set(json.loads(out.splitlines()[-1]))


@pytest.fixture(scope="module")
def run_path() -> set[str]:
    return _imported_by(RUN_PATH)


@pytest.mark.parametrize("module", NOT_BEFORE_THE_FIRST_REQUEST)
def test_the_run_path_does_not_import(run_path: set[str], module: str) -> None:
    assert module not in run_path


def test_the_table_of_kinds_names_every_podgroup_api(run_path: set[str]) -> None:
    assert "coscheduler.api.adapters.apis" in run_path


def test_the_deciding_side_imports_what_the_start_left_out() -> None:
    imported = _imported_by(RUN_PATH + "import coscheduler.operator\n")
    assert {"coscheduler.api.adapters.table", "coscheduler.api.pod"} <= imported
