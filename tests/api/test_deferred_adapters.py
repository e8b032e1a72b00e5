"""The other projects' adapters are named by module and imported on first use (issue #28)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from coscheduler.api.adapters import ADAPTERS, apis, t9k, volcano, xk8s
from coscheduler.api.adapters.deferred import DeferredAdapter
from coscheduler.api.podgroup import PodGroupStatus


def test_each_deferred_row_names_the_module_whose_adapter_serves_its_api() -> None:
    deferred = [adapter for adapter in ADAPTERS if isinstance(adapter, DeferredAdapter)]
    assert [row.api for row in deferred] == [apis.XK8S, apis.VOLCANO, apis.T9K]
    assert [row.load() for row in deferred] == [xk8s.ADAPTER, volcano.ADAPTER, t9k.ADAPTER]


def test_a_deferred_adapter_answers_as_its_module_s() -> None:
    row = DeferredAdapter(apis.VOLCANO, "coscheduler.api.adapters.volcano")
    raw = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "g", "namespace": "ns", "uid": "u"},
        "spec": {"minMember": 2},
    }
    group = row.parse(raw)
    assert group.spec.min_member == 2
    assert group.api == apis.VOLCANO
    assert row.shared is volcano.ADAPTER.shared
    assert row.stored_form({}) == volcano.ADAPTER.stored_form({})
    assert row.conclude(PodGroupStatus()) == volcano.ADAPTER.conclude(PodGroupStatus())


def test_a_row_naming_the_wrong_module_says_so() -> None:
    row = DeferredAdapter(apis.T9K, "coscheduler.api.adapters.volcano")
    with pytest.raises(RuntimeError, match="not"):
        row.load()


def test_the_start_path_imports_none_of_them() -> None:
    # A fresh interpreter: this process imported them above.
    code = (
        "import sys, coscheduler.app, coscheduler.operator\n"
        "print(sorted(m for m in sys.modules if m.rpartition('.')[2] in "
        "('xk8s', 'volcano', 't9k') or m.startswith('cel_expr_python')))"
    )
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run(
        [sys.executable, "-P", "-c", code],
        capture_output=True, text=True, check=True, env={"PYTHONPATH": str(root)},
    ).stdout  # fmt: skip
    assert out.strip() == "[]"
