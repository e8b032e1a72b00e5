"""Pytest fixtures over the local control plane, for e2e/tests and the project's tests.

Use from any conftest.py::

    from e2e.fixtures import cluster, kubeconfig, namespace, node_factory  # noqa: F401

Why one cluster per session and a namespace per test: starting a control
plane costs seconds, a namespace milliseconds; tests stay independent as long
as each works in its own namespace and removes the nodes it adds (the
``node_factory`` fixture does). The cluster is built on first use (a cold
build takes minutes and reports its progress) and stopped at the end of the
session, also on failure or Ctrl-C. If any test failed, the components' logs
are copied to ``.e2e/test-logs/`` before the temporary directory is removed.

Environment:
- The API server serves the native gang API of its release (1.35: ``Workload``,
  ``spec.workloadRef``; 1.36 on: ``PodGroup``, ``spec.schedulingGroup``);
  ``COSCHEDULER_E2E_GANG_API=0`` starts it without. ``COSCHEDULER_E2E_JOB_WORKLOADS=1``
  (1.36 on) also has the Job controller make every Job a native gang (``WorkloadWithJob``).
- ``COSCHEDULER_E2E_KEEP=1`` keeps the cluster's state directory (logs, certs).

Every test that uses the cluster is held to the gang invariant (``whole_gangs``,
``e2e/gangs.py``): a watch of every pod runs from before the test creates anything to
its end, and the test fails in teardown if a gang of ours was partially bound longer
than a bind burst (its bindings stalled, or trickled: ``e2e/gangs.py``). A test that
breaks gangs on purpose says so with ``@pytest.mark.partial_gangs(reason=...,
seconds=...)`` (a wider burst) or without ``seconds`` (not checked).
"""

from __future__ import annotations

import contextlib
import http.client
import os
import re
import secrets
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from e2e import build, gangs, nodes
from e2e.api import ApiClient, ApiError, Json
from e2e.cluster import default_state_dir
from e2e.controlplane import Cluster, ClusterOptions
from e2e.podwatch import PodWatch
from e2e.processes import interrupt_on_sigterm
from e2e.waiting import wait_for

NodeFactory = Callable[..., list[str]]


@pytest.fixture(scope="session")
def cluster(request: pytest.FixtureRequest) -> Iterator[Cluster]:
    """A real control plane for the whole session (etcd, kube-apiserver, controllers, KWOK)."""
    # A cold build takes minutes: show its progress through pytest's output capture.
    capture = request.config.pluginmanager.getplugin("capturemanager")
    with capture.global_and_fixture_disabled() if capture else contextlib.nullcontext():
        build.ensure_built()
    interrupt_on_sigterm()  # a CI runner's SIGTERM then unwinds through the finalisers below
    options = ClusterOptions(
        gang_api=os.environ.get("COSCHEDULER_E2E_GANG_API") != "0",
        job_workloads=os.environ.get("COSCHEDULER_E2E_JOB_WORKLOADS") == "1",
    )
    state_dir = Path(tempfile.mkdtemp(prefix="coscheduler-e2e-"))
    failed = True
    try:
        running = Cluster.start(state_dir, options)
        try:
            yield running
        finally:
            running.stop()
        failed = bool(request.session.testsfailed)
    finally:
        if failed:
            _save_logs(state_dir / "logs")
        if os.environ.get("COSCHEDULER_E2E_KEEP") == "1":
            print(f"\n[e2e] cluster state kept in {state_dir}")
        else:
            shutil.rmtree(state_dir, ignore_errors=True)


def _save_logs(logs: Path) -> None:
    """Keep the components' logs of a failed session in .e2e/test-logs/ for diagnosis."""
    if not logs.is_dir():
        return
    saved = default_state_dir() / "test-logs"
    shutil.rmtree(saved, ignore_errors=True)
    shutil.copytree(logs, saved)
    print(f"\n[e2e] component logs of the failed session copied to {saved}")


@pytest.fixture(scope="session")
def kubeconfig(cluster: Cluster) -> Path:
    """Path of an admin kubeconfig for kubectl and kubernetes_asyncio."""
    return cluster.kubeconfig


@pytest.fixture
def namespace(cluster: Cluster, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh namespace named after the test, ready for pods; deleted afterwards."""
    slug = re.sub(r"[^a-z0-9]+", "-", request.node.name.lower()).strip("-")[:40].rstrip("-")
    name = f"t-{slug}-{secrets.token_hex(3)}"
    cluster.api.create(
        "/api/v1/namespaces",
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}},
    )
    # ServiceAccount admission refuses pods until the controller has made `default`.
    wait_for(
        lambda: cluster.api.get_or_none(f"/api/v1/namespaces/{name}/serviceaccounts/default"),
        describe=f"the default ServiceAccount of namespace {name}",
    )
    try:
        yield name
    finally:
        cluster.api.delete(f"/api/v1/namespaces/{name}")


@pytest.fixture
def node_factory(cluster: Cluster) -> Iterator[NodeFactory]:
    """``node_factory(count, cpu=..., memory=..., gpus=..., labels=..., taints=...)`` -> names.

    Nodes are named after the test, made Ready before returning, and deleted
    when the test ends. ``taints`` takes ``key=value:Effect`` strings.
    """
    created: list[str] = []
    prefix = f"n-{secrets.token_hex(3)}-"

    def make(
        count: int = 1,
        *,
        cpu: str = "8",
        memory: str = "32Gi",
        gpus: int = 0,
        pods: int = nodes.DEFAULT_PODS,
        labels: dict[str, str] | None = None,
        taints: tuple[str, ...] = (),
        wait_ready: bool = True,
    ) -> list[str]:
        start = len(created)
        specs = [
            nodes.NodeSpec(
                name=f"{prefix}{start + i}",
                cpu=cpu,
                memory=memory,
                gpus=gpus,
                pods=pods,
                labels=dict(labels or {}),
                taints=tuple(nodes.Taint.parse(t) for t in taints),
            )
            for i in range(count)
        ]
        created.extend(spec.name for spec in specs)
        return cluster.add_nodes(specs, wait_ready=wait_ready)

    try:
        yield make
    finally:
        if created:
            cluster.remove_nodes(created, wait_gone=False)


GROUP_COLLECTIONS = (
    ("scheduling.sigs.k8s.io/v1alpha1", "podgroups"),
    ("scheduling.x-k8s.io/v1alpha1", "podgroups"),
    ("scheduling.volcano.sh/v1beta1", "podgroups"),
    ("scheduler.tensorstack.dev/v1beta1", "podgroups"),
    ("scheduling.k8s.io/v1alpha1", "workloads"),
    ("scheduling.k8s.io/v1beta1", "podgroups"),
    ("scheduling.k8s.io/v1alpha2", "podgroups"),
)
"""(apiVersion, plural) of the kinds that give a gang its minMember (one not served: skipped)."""


OUR_SCHEDULER_NAMES = ("coscheduler", "volcano", "t9k-scheduler")
"""The names tests run coscheduler under (another's, to stand in for it): their gangs are ours."""


class GangCheck:
    """One test's watch of pods and, once the test ends, its gangs' minMember."""

    def __init__(
        self, api: ApiClient, *, burst_seconds: float, scheduler_names: tuple[str, ...]
    ) -> None:
        self.api = api
        self.burst_seconds = burst_seconds
        self.scheduler_names = scheduler_names
        self.watch = PodWatch(api).start()
        self.ended: float | None = None
        self.groups: list[Json] = []
        self.unread: list[str] = []
        """Group kinds that could not be listed (their gangs are not judged)."""

    def test_ended(self) -> None:
        """Called right after the test's body: its end, and the groups before teardown goes."""
        self.ended = self.watch.clock()
        for api_version, plural in GROUP_COLLECTIONS:
            try:
                listed = self.api.get_or_none(f"/apis/{api_version}/{plural}")
            except (OSError, http.client.HTTPException, ApiError) as error:
                self.unread.append(f"{api_version} {plural}: {error}")
                continue
            for item in (listed or {}).get("items", []):
                # Built-in kinds' list items carry no apiVersion: min_members reads it.
                self.groups.append({**item, "apiVersion": api_version})

    def violations(self) -> tuple[list[gangs.PartialGang], bool]:
        """(violations, whether the watch had caught up); stops the watch."""
        assert self.ended is not None
        caught_up = self.watch.drain()
        self.watch.stop()
        found = gangs.partial_gangs(
            self.watch.timeline(until=self.ended),
            gangs.min_members(self.groups),
            scheduler_names=self.scheduler_names,
            burst_seconds=self.burst_seconds,
            start=self.watch.started_at,
            end=self.ended,
        )
        return found, caught_up


GANG_CHECK = pytest.StashKey[GangCheck]()


@pytest.fixture(autouse=True)
def whole_gangs(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fail a test that left a gang of ours partially bound (module docstring).

    Autouse, so it is set up before the test's other fixtures create anything; the
    conftest's ``pytest_runtest_call`` hook marks the end of the test's body, so that
    teardown (namespaces deleted, nodes removed) is not judged.
    """
    marker = request.node.get_closest_marker("partial_gangs")
    if "cluster" not in request.fixturenames or (marker and "seconds" not in marker.kwargs):
        yield
        return
    running: Cluster = request.getfixturevalue("cluster")
    kwargs = marker.kwargs if marker else {}
    check = GangCheck(
        running.api,
        burst_seconds=float(kwargs.get("seconds", gangs.DEFAULT_BURST_SECONDS)),
        scheduler_names=tuple(kwargs.get("scheduler_names", OUR_SCHEDULER_NAMES)),
    )
    request.node.stash[GANG_CHECK] = check
    yield
    if check.ended is None:  # the test's body never ran
        check.watch.stop()
        return
    found, caught_up = check.violations()
    if found:
        lines = [str(violation) for violation in found]
        if not caught_up:
            lines.append("(the pod watch had not caught up with the API server)")
        if check.unread:
            lines.append(f"(not listed: {'; '.join(check.unread)})")
        if check.watch.gaps:
            lines.append(f"(the pod watch had gaps: {'; '.join(check.watch.gaps)})")
        pytest.fail(
            "the gang invariant failed: a gang of ours was partially bound beyond a bind "
            f"burst (bindings over {check.burst_seconds:g}s apart, or too slow: e2e/gangs.py; "
            "seconds since the test's start):\n  " + "\n  ".join(lines),
            pytrace=False,
        )
