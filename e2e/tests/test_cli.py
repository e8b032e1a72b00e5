"""The command line starts a detached cluster once, manages its nodes and stops it cleanly."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from e2e.controlplane import ClusterState
from e2e.processes import ProcessRecord, interrupt_on_sigterm

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]


def _cli(state_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "e2e.cluster", "--state-dir", str(state_dir), *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )


@pytest.fixture
def state_dir(tmp_path: Path) -> Iterator[Path]:
    """A state directory of its own, so this test never touches the developer's .e2e/."""
    directory = tmp_path / "state"
    interrupt_on_sigterm()  # so that `down` below runs even if CI terminates the session
    try:
        yield directory
    finally:
        _cli(directory, "down")


def test_up_kubectl_nodes_status_down(state_dir: Path) -> None:
    up = _cli(state_dir, "up", "--nodes", "2", "--cpu", "4", "--memory", "8Gi", "--gang-api")
    assert up.returncode == 0, up.stderr
    kubeconfig = Path(up.stdout.strip())
    assert kubeconfig == state_dir / "kubeconfig"
    assert kubeconfig.is_file()
    state = ClusterState.load(state_dir)
    assert state is not None
    records = [ProcessRecord(**p) for p in state.processes]
    assert [r.name for r in records] == [
        "etcd",
        "kube-apiserver",
        "kube-controller-manager",
        "kwok",
    ]

    again = _cli(state_dir, "up")
    assert again.returncode == 1
    assert "already running" in again.stderr

    nodes = _cli(state_dir, "kubectl", "get", "nodes", "-o", "json")
    assert nodes.returncode == 0, nodes.stderr
    items = json.loads(nodes.stdout)["items"]
    assert sorted(n["metadata"]["name"] for n in items) == ["kwok-node-0", "kwok-node-1"]
    assert {n["status"]["allocatable"]["cpu"] for n in items} == {"4"}

    added = _cli(state_dir, "nodes", "add", "--count", "1", "--gpus", "2")
    assert added.returncode == 0, added.stderr
    assert added.stdout.split() == ["kwok-node-2"]
    removed = _cli(state_dir, "nodes", "remove", "kwok-node-0")
    assert removed.returncode == 0, removed.stderr

    status = _cli(state_dir, "status")
    assert status.returncode == 0, status.stdout
    assert "nodes: 2 (2 Ready)" in status.stdout

    gang = _cli(
        state_dir, "kubectl", "api-resources", "--api-group=scheduling.k8s.io", "-o", "name"
    )
    assert "workloads.scheduling.k8s.io" in gang.stdout.split()

    down = _cli(state_dir, "down")
    assert down.returncode == 0, down.stderr
    assert not any(r.is_running() for r in records)
    assert not Path(state.data_dir).exists()
    assert _cli(state_dir, "status").stdout.strip() == "down"
