"""MultiKueue (Kueue v0.17.0) across three local control planes: Kueue dispatches, coscheduler
places whole in each worker.

::

    manager (etcd, kube-apiserver, kube-controller-manager, Kueue; no nodes)
      Job "train" (queue "team") -> Workload -> ClusterQueue with the MultiKueue check
        |  MultiKueue copies the Workload to every worker, keeps the first a worker's
        |  Kueue admits, creates the Job there, copies the worker Job's status back
        +---------------------------+
        v                           v
    worker-one (the session's)    worker-two (this module's)
      Kueue + coscheduler + KWOK    Kueue + coscheduler + KWOK

The manager's Kueue reaches each worker with the worker's admin kubeconfig (certificates
inline) in a Secret, through a MultiKueueCluster; a MultiKueueConfig lists both, an
AdmissionCheck of controller ``kueue.x-k8s.io/multikueue`` names that config, and the
manager's ClusterQueue requires that check. The manager's Job controller leaves the Job to
MultiKueue (Kueue's webhook sets ``spec.managedBy``), so no pod runs on the manager.

What MultiKueue copies back from the worker that admitted (Kueue v0.17.0,
``pkg/controller/admissionchecks/multikueue`` and the Job adapter): the worker Job's
``status``, whole, onto the manager's Job; the worker Workload's ``Finished`` condition; and
the check's state (``The workload got reservation on "worker-one"``, ``status.clusterName``).
Not the worker Workload's other conditions nor its events: so coscheduler also puts its
``GangScheduled`` condition on the worker's Job, and that is what the manager's Job shows.

A worker is lost by stopping its control plane; the manager's Kueue keeps the admission for
``workerLostTimeout`` (set short here), then evicts and requeues the Workload, which goes to
the other worker.

Runs only when asked (``COSCHEDULER_E2E_MULTIKUEUE=1``): Kueue is built from its module on
first use, and three control planes and three Kueues start.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from e2e import kueue as k
from e2e import nodes
from e2e import workloads as w
from e2e.api import Json
from e2e.controlplane import Cluster, ClusterOptions
from e2e.podwatch import PodWatch
from e2e.scheduler import SchedulerProcess, StartScheduler
from e2e.tests import helpers as h
from e2e.tests.conftest import CRD, CRD_NAME, QUEUE_CRD, QUEUE_CRD_NAME
from e2e.tests.test_kueue import bound, conditions, create, jobs_path, kueue_job, started_kueue
from e2e.tests.test_with_kueue import CONDITION, no_partial_gang, our_condition
from e2e.waiting import wait_for

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.timeout(1500),
    pytest.mark.skipif(
        os.environ.get("COSCHEDULER_E2E_MULTIKUEUE") != "1",
        reason="three control planes and Kueue built from its module: "
        "COSCHEDULER_E2E_MULTIKUEUE=1 runs it",
    ),
]

WORKER_LOST_SECONDS = 20
"""The manager's ``multiKueue.workerLostTimeout`` (Kueue's default: 15 minutes)."""
ORIGIN = "coscheduler-e2e"
CHECK = "multikueue"
DISPATCH_TIMEOUT_SECONDS = 120.0
WORKER_SETTINGS = k.KueueSettings(wait_for_pods_ready=False, frameworks=("batch/job",))


@dataclass
class Worker:
    """A worker cluster: its MultiKueueCluster's name, its Kueue, the test's watch of its pods."""

    name: str
    cluster: Cluster
    kueue: k.Kueue
    watch: PodWatch | None = None

    def bound(self, namespace: str, job: str = "train") -> int:
        return bound(self.cluster, namespace, job)


@contextlib.contextmanager
def control_plane(prefix: str, options: ClusterOptions) -> Iterator[Cluster]:
    """Another cluster beside the session's, stopped and removed after."""
    state_dir = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        with Cluster.start(state_dir, options) as running:
            yield running
    finally:
        if os.environ.get("COSCHEDULER_E2E_KEEP") != "1":
            shutil.rmtree(state_dir, ignore_errors=True)


@pytest.fixture(scope="module")
def manager() -> Iterator[Cluster]:
    with control_plane("coscheduler-mk-manager-", ClusterOptions(fake_nodes=False)) as running:
        yield running


@pytest.fixture(scope="module")
def workers(cluster: Cluster, request: pytest.FixtureRequest) -> Iterator[list[Worker]]:
    """worker-one is the session's cluster; worker-two a cluster of its own."""
    with (
        control_plane("coscheduler-mk-worker-", ClusterOptions()) as second,
        started_kueue(cluster, request, WORKER_SETTINGS) as one_kueue,
        started_kueue(second, request, WORKER_SETTINGS) as two_kueue,
    ):
        for crd in (QUEUE_CRD, CRD):
            second.apply(crd)
        second.kubectl("wait", "--for=condition=Established", "--timeout=60s",
                       f"crd/{QUEUE_CRD_NAME}", f"crd/{CRD_NAME}")  # fmt: skip
        yield [Worker("worker-one", cluster, one_kueue), Worker("worker-two", second, two_kueue)]


@pytest.fixture(scope="module")
def multikueue(
    manager: Cluster, workers: list[Worker], request: pytest.FixtureRequest
) -> Iterator[k.Kueue]:
    """The manager's Kueue, dispatching to both workers through one AdmissionCheck."""
    settings = k.KueueSettings(
        wait_for_pods_ready=False,
        frameworks=("batch/job",),
        extra={
            "multiKueue": {
                "origin": ORIGIN,
                "workerLostTimeout": f"{WORKER_LOST_SECONDS}s",
                "gcInterval": "30s",
            }
        },
    )
    with started_kueue(manager, request, settings) as running:
        ensure_namespace(manager, k.NAMESPACE)
        for worker in workers:
            secret = k.worker_kubeconfig_secret(worker.name, worker.cluster.kubeconfig.read_text())
            manager.api.create(f"/api/v1/namespaces/{k.NAMESPACE}/secrets", secret)
            create(manager, k.multikueue_cluster(worker.name, secret=worker.name))
        create(manager, k.multikueue_config(CHECK, [worker.name for worker in workers]))
        create(manager, k.multikueue_check(CHECK, config=CHECK))
        wait_for(
            lambda: {worker.name: cluster_active(manager, worker.name) for worker in workers},
            lambda found: all(found.values()),
            describe="both MultiKueueClusters Active (the manager reaches the workers)",
            timeout=DISPATCH_TIMEOUT_SECONDS,
        )
        wait_for(
            lambda: conditions(manager.api.get(f"/apis/{k.API}/admissionchecks/{CHECK}")),
            lambda found: found.get("Active") == "True",
            describe="the MultiKueue AdmissionCheck Active",
            timeout=DISPATCH_TIMEOUT_SECONDS,
        )
        yield running


def cluster_active(manager: Cluster, name: str) -> bool:
    found = manager.api.get(f"/apis/{k.API}/multikueueclusters/{name}")
    return conditions(found).get("Active") == "True"


def ensure_namespace(cluster: Cluster, name: str) -> None:
    """The namespace, ready for pods (its ``default`` ServiceAccount made)."""
    if cluster.api.get_or_none(f"/api/v1/namespaces/{name}") is None:
        body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
        cluster.api.create("/api/v1/namespaces", body)
    wait_for(
        lambda: cluster.api.get_or_none(f"/api/v1/namespaces/{name}/serviceaccounts/default"),
        describe=f"the default ServiceAccount of namespace {name}",
    )


@dataclass
class Setup:
    """One test's clusters: the namespace on each, the queues, nodes and schedulers."""

    manager: Cluster
    workers: list[Worker]
    namespace: str
    pool: str
    worker_two_schedulers: list[SchedulerProcess] = field(default_factory=list)
    nodes: dict[str, list[str]] = field(default_factory=dict)

    def queues(self, *, held: tuple[str, ...] = ()) -> None:
        """A flavor, a ClusterQueue of 16 cpu and LocalQueue ``team`` in each worker (those
        named in ``held`` stopped); on the manager a ClusterQueue needing the MultiKueue check."""
        flavor, queue = f"f-{self.pool}", f"cq-{self.pool}"
        for worker in self.workers:
            for body in (
                k.resource_flavor(flavor),
                k.cluster_queue(
                    queue, cpu=16, memory=64 * 2**30, flavor=flavor, held=worker.name in held
                ),
                k.local_queue("team", self.namespace, queue),
            ):
                create(worker.cluster, body)
        for body in (
            k.resource_flavor(flavor),
            k.cluster_queue(
                queue, cpu=64, memory=256 * 2**30, flavor=flavor, admission_checks=[CHECK]
            ),
            k.local_queue("team", self.namespace, queue),
        ):
            create(self.manager, body)
        # The manager's webhook hands a Job to MultiKueue only once it knows the queue's check.
        wait_for(
            lambda: conditions(self.manager.api.get(f"{self.queue_path()}/team")),
            lambda found: found.get("Active") == "True",
            describe="the manager's LocalQueue team Active",
            timeout=DISPATCH_TIMEOUT_SECONDS,
        )

    def queue_path(self) -> str:
        return f"/apis/{k.API}/namespaces/{self.namespace}/localqueues"

    def release(self, worker: Worker) -> None:
        """Let a held worker's ClusterQueue admit again."""
        worker.cluster.api.request(
            "PATCH",
            f"/apis/{k.API}/clusterqueues/cq-{self.pool}",
            {"spec": {"stopPolicy": "None"}},
            content_type="application/merge-patch+json",
        )

    def add_nodes(self, worker: Worker, count: int, *, cpu: str = "4") -> None:
        specs = [
            nodes.NodeSpec(
                name=f"n-{secrets.token_hex(3)}-{i}",
                cpu=cpu,
                memory="32Gi",
                labels={w.POOL_LABEL: self.pool},
            )
            for i in range(count)
        ]
        self.nodes.setdefault(worker.name, []).extend(worker.cluster.add_nodes(specs))

    def submit(self, *, pods: int = 4, cpu: str = "2") -> None:
        job = kueue_job(
            "train", "team", scheduler="coscheduler", pool=self.pool, pods=pods, cpu=cpu
        )
        created = self.manager.api.create(jobs_path(self.namespace), job)
        # Kueue's webhook on the manager: held for admission, and the Job controller's hands off.
        assert created["spec"]["suspend"] is True
        assert created["spec"]["managedBy"] == k.MULTIKUEUE_CONTROLLER

    def workload(self) -> Json:
        listed = self.manager.api.get(f"/apis/{k.API}/namespaces/{self.namespace}/workloads")
        [found] = listed["items"]
        workload: Json = found
        return workload

    def wait_placed_on(self, worker: Worker) -> None:
        """Until the manager's Workload is admitted, its cluster that worker."""
        wait_for(
            self.workload,
            lambda found: (
                found["status"].get("clusterName") == worker.name
                and conditions(found).get("Admitted") == "True"
            ),
            describe=f"the manager's Workload admitted on {worker.name}",
            timeout=DISPATCH_TIMEOUT_SECONDS,
        )

    def manager_job_condition(self) -> Json:
        """Our condition on the manager's Job, as MultiKueue copied it from the worker's."""
        return our_condition(self.manager.api.get(f"{jobs_path(self.namespace)}/train"))

    def wait_bound_whole(
        self,
        describe: str,
        *,
        among: list[Worker] | None = None,
        timeout: float = DISPATCH_TIMEOUT_SECONDS,
    ) -> Worker:
        """Until one worker (of ``among``: those still up) has the Job's 4 pods bound."""
        workers = self.workers if among is None else among
        counts = wait_for(
            lambda: {worker.name: worker.bound(self.namespace) for worker in workers},
            lambda found: 4 in found.values(),
            describe=describe,
            timeout=timeout,
        )
        return next(worker for worker in workers if counts[worker.name] == 4)

    def no_partial_gang(self, worker: Worker) -> None:
        assert worker.watch is not None
        no_partial_gang(worker.watch, self.namespace, {"train": 4})

    def show(self, worker: Worker) -> None:
        h.show(self.manager, self.namespace, "get", "jobs,workloads.kueue.x-k8s.io", "-o", "wide")
        h.show(
            worker.cluster,
            self.namespace,
            "get",
            "jobs,workloads.kueue.x-k8s.io,pods",
            "-o",
            "wide",
        )


@pytest.fixture
def setup(
    manager: Cluster,
    workers: list[Worker],
    multikueue: k.Kueue,
    namespace: str,
    pool: str,
    start_scheduler: StartScheduler,
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> Iterator[Setup]:
    """The test's namespace on the manager and worker-two too (worker-one's is the session
    fixture's), a pod watch and a coscheduler for the namespace in each worker."""
    made = Setup(manager, workers, namespace, pool)
    two = workers[1]
    failed_before = request.session.testsfailed
    try:
        for other in (manager, two.cluster):
            ensure_namespace(other, namespace)
        for worker in workers:
            worker.watch = PodWatch(worker.cluster.api).start()
        start_scheduler()
        second = SchedulerProcess(
            kubeconfig=two.cluster.kubeconfig,
            log_path=tmp_path / "coscheduler-worker-two.log",
            args=["--namespace", namespace, "--backoff-max-seconds", "2", "--no-leader-elect",
                  "--metrics-port", "0"],
        )  # fmt: skip
        made.worker_two_schedulers.append(second)
        second.start()
        yield made
    finally:
        for process in made.worker_two_schedulers:
            process.stop()
            if request.session.testsfailed > failed_before:
                print(f"\n--- {process.log_path} ---\n{process.log()[-6000:]}")
        for worker in workers:
            if worker.watch is not None:
                worker.watch.stop()
        with contextlib.suppress(Exception):
            manager.api.delete(f"{jobs_path(namespace)}/train?propagationPolicy=Background")
        for worker in workers:
            if worker.cluster.is_running():
                worker.cluster.remove_nodes(made.nodes.get(worker.name, []), wait_gone=False)
                worker.cluster.api.delete(f"/api/v1/namespaces/{namespace}")
                worker.cluster.api.delete(f"/apis/{k.API}/clusterqueues/cq-{pool}")
                worker.cluster.api.delete(f"/apis/{k.API}/resourceflavors/f-{pool}")
        manager.api.delete(f"/api/v1/namespaces/{namespace}")
        manager.api.delete(f"/apis/{k.API}/clusterqueues/cq-{pool}")
        manager.api.delete(f"/apis/{k.API}/resourceflavors/f-{pool}")


def test_a_gang_job_on_the_manager_is_bound_whole_in_the_worker_that_admits_it(
    setup: Setup,
) -> None:
    for worker in setup.workers:
        setup.add_nodes(worker, 2)  # room for the Job's 4 pods of 2 cpu in either
    setup.queues()
    setup.submit()
    chosen = setup.wait_bound_whole("a worker to admit the Job and coscheduler to bind its 4 pods")
    [other] = [worker for worker in setup.workers if worker is not chosen]
    assert other.bound(setup.namespace) == 0
    setup.wait_placed_on(chosen)
    condition = wait_for(
        setup.manager_job_condition,
        lambda found: found.get("status") == "True",
        describe=f"the manager's Job carrying the worker Job's {CONDITION} condition, True",
        timeout=DISPATCH_TIMEOUT_SECONDS,
    )
    assert condition["reason"] == "Scheduled"
    setup.show(chosen)
    for worker in setup.workers:
        setup.no_partial_gang(worker)


def test_a_gang_no_worker_can_place_waits_whole_and_the_managers_job_says_why(
    setup: Setup,
) -> None:
    for worker in setup.workers:
        setup.add_nodes(worker, 2)  # room for two of the four 3-cpu pods in each
    setup.queues()  # each worker's quota admits the Job: its nodes cannot hold it
    setup.submit(cpu="3")
    condition = wait_for(
        setup.manager_job_condition,
        lambda found: found.get("status") == "False",
        describe=f"the manager's Job carrying the worker Job's {CONDITION} condition, False",
        timeout=DISPATCH_TIMEOUT_SECONDS,
    )
    print(f"\nthe manager's Job: {CONDITION}={condition['status']} {condition['reason']}: "
          f"{condition['message']}")  # fmt: skip
    assert condition["reason"] == "NotEnoughResources"
    assert "4 pods" in condition["message"]
    chosen_name = setup.workload()["status"]["clusterName"]
    [chosen] = [worker for worker in setup.workers if worker.name == chosen_name]
    assert all(worker.bound(setup.namespace) == 0 for worker in setup.workers)
    setup.show(chosen)

    setup.add_nodes(chosen, 2)  # now it fits where it was dispatched: bound whole there
    assert setup.wait_bound_whole("the 4 pods bound once two more nodes came") is chosen
    wait_for(
        setup.manager_job_condition,
        lambda found: found.get("status") == "True",
        describe=f"the manager's Job's {CONDITION} condition True",
        timeout=DISPATCH_TIMEOUT_SECONDS,
    )
    for worker in setup.workers:
        setup.no_partial_gang(worker)


def test_a_gang_on_a_worker_lost_mid_way_is_bound_whole_on_the_other(setup: Setup) -> None:
    """Last of the module: worker-two's control plane is stopped for good."""
    one, two = setup.workers
    for worker in setup.workers:
        setup.add_nodes(worker, 2)
    setup.queues(held=(one.name,))  # worker-one admits nothing yet: the Job goes to worker-two
    setup.submit()
    assert setup.wait_bound_whole("worker-two to admit the Job and bind its 4 pods") is two
    setup.wait_placed_on(two)
    setup.show(two)
    setup.no_partial_gang(two)  # judged up to now: its API server goes next
    setup.release(one)

    for process in setup.worker_two_schedulers:
        process.stop()
    two.cluster.stop()  # etcd, kube-apiserver, controllers, KWOK: the worker is gone
    two.kueue.stop()

    setup.wait_bound_whole(
        f"the manager to give worker-two up ({WORKER_LOST_SECONDS}s) and worker-one to bind "
        "the gang whole",
        among=[one],
        timeout=WORKER_LOST_SECONDS + 2 * DISPATCH_TIMEOUT_SECONDS,
    )
    setup.wait_placed_on(one)
    wait_for(
        setup.manager_job_condition,
        lambda found: found.get("status") == "True",
        describe=f"the manager's Job carrying worker-one's Job's {CONDITION} condition, True",
        timeout=DISPATCH_TIMEOUT_SECONDS,
    )
    setup.show(one)
    setup.no_partial_gang(one)
