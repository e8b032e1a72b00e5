"""Each kind of fault once, under a small gang workload, with the invariants checked.

The scheduler talks to the API server through the fault proxy
(``e2e/faultproxy.py``) in every test, so that its Bindings' answers are
counted; proxy faults hit only its requests, control-plane faults hit every
client. A run: the gangs arrive while the fault acts (a few seconds), the
fault stops, every gang must run to completion, then the quiet invariants
must hold (``e2e/invariants.py``). The seed of every run is fixed, and
``COSCHEDULER_FAULT_SEED`` replays another.
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from e2e import workloads as w
from e2e.controlplane import Cluster
from e2e.faultproxy import FaultProxy
from e2e.faultrun import ALL_FAULTS, PROXY_FAULTS, control_plane_fault, sample_for
from e2e.invariants import InvariantChecker, double_bindings
from e2e.pki import Pki
from e2e.scheduler import SchedulerProcess
from e2e.waiting import wait_for

pytestmark = pytest.mark.e2e

SEED = int(os.environ.get("COSCHEDULER_FAULT_SEED", "19"))
GANGS = (("a", 4), ("b", 3), ("c", 5))
"""Name and size of each gang: 12 pods of 2 cpu on 4 nodes of 8 cpu (24 of 32 cpu)."""
UNFIT = "unfit"
"""A gang of 2 pods of 12 cpu: no node holds one, so its pods must say why they wait."""
FAULT_SECONDS = 6.0
PARTIAL_BOUND_SECONDS = 45.0
"""How long a gang may stay partly bound once faults stop (backoff, resync, a loaded machine)."""


@pytest.fixture
def proxy(cluster: Cluster, tmp_path: Path) -> Iterator[FaultProxy]:
    running = FaultProxy.start(
        upstream_port=cluster.state.ports["apiserver"], pki=Pki(cluster.pki_dir), directory=tmp_path
    )
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture
def proxied_scheduler(
    proxy: FaultProxy,
    namespace: str,
    podgroup_crd: str,
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> Iterator[SchedulerProcess]:
    """``coscheduler run`` for the test's namespace, through the proxy (not started yet)."""
    process = SchedulerProcess(
        kubeconfig=proxy.kubeconfig,
        log_path=tmp_path / "coscheduler.log",
        args=[
            "--namespace",
            namespace,
            "--no-leader-elect",
            "--backoff-max-seconds",
            "2",
            "--request-timeout-seconds",
            "5",
            "--metrics-port",
            "0",
        ],
    )
    failed_before = request.session.testsfailed
    try:
        yield process
    finally:
        process.stop()
        if request.session.testsfailed > failed_before:
            print(f"\n--- {process.log_path} ---\n{process.log()[-8000:]}")
            print(f"\n--- proxy stats ---\n{proxy.stats()}")


def _create_gangs(cluster: Cluster, namespace: str, pool: str) -> None:
    for name, size in GANGS:
        w.create_podgroup(cluster.api, namespace, name, size)
        w.create_job(
            cluster.api,
            namespace,
            name,
            parallelism=size,
            pool=pool,
            cpu="2",
            group=name,
            run_seconds=2,
        )
    w.create_podgroup(cluster.api, namespace, UNFIT, 2)
    w.create_replicaset(cluster.api, namespace, UNFIT, replicas=2, pool=pool, cpu="12", group=UNFIT)


def _all_gangs_done(cluster: Cluster, namespace: str, checker: InvariantChecker) -> None:
    total = sum(size for _, size in GANGS)

    def succeeded() -> int:
        checker.sample()
        return sum(
            1
            for p in w.list_pods(cluster.api, namespace)
            if p.get("status", {}).get("phase") == "Succeeded"
        )

    wait_for(succeeded, lambda n: n == total, describe=f"all {total} pods Succeeded", timeout=120)


def _judge(checker: InvariantChecker, proxy: FaultProxy) -> None:
    checker.settle(timeout=30)
    stats = proxy.stats()
    conflicts, unknown, violations = double_bindings(stats)
    print(f"faults {stats['faults']}; 409s on Bindings {conflicts}, outcomes unknown {unknown}")
    checker.violations += violations
    assert not checker.violations, "\n".join(str(v) for v in checker.violations)


def _checker(cluster: Cluster, namespace: str) -> InvariantChecker:
    return InvariantChecker(
        cluster.api, lambda: [namespace], partial_bound_seconds=PARTIAL_BOUND_SECONDS
    )


@pytest.mark.partial_gangs(
    reason="while faults last a gang's remaining Bindings wait for an answer; its own "
    "checker allows PARTIAL_BOUND_SECONDS once they stop",
    seconds=FAULT_SECONDS + PARTIAL_BOUND_SECONDS,
)
@pytest.mark.parametrize("kind", ALL_FAULTS)
def test_fault_loses_nothing(
    kind: str,
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    proxy: FaultProxy,
    proxied_scheduler: SchedulerProcess,
) -> None:
    add_nodes(4, cpu="8")
    checker = _checker(cluster, namespace)
    checker.fault_started()
    if kind in PROXY_FAULTS:
        # From the start: watches are opened then (and again only when one ends).
        proxy.inject(list(PROXY_FAULTS[kind]), seed=SEED)
        proxied_scheduler.start()
        _create_gangs(cluster, namespace, pool)
        sample_for(checker, FAULT_SECONDS)
        proxy.calm()
        assert proxy.stats()["faults"].get(kind, 0) > 0, f"no {kind} fault was injected"
    else:
        proxied_scheduler.start()
        _create_gangs(cluster, namespace, pool)
        # It lands while the gangs are being placed (the Job controller makes their pods).
        print(control_plane_fault(cluster, kind, random.Random(SEED)))
    checker.fault_ended()
    _all_gangs_done(cluster, namespace, checker)
    _judge(checker, proxy)
    assert proxied_scheduler.alive(), proxied_scheduler.log()[-3000:]
