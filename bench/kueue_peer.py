"""The Kueue peer: Kueue v0.17.0 admitting, kube-scheduler placing (issue #31).

How a platform team would write them, for each suite:

- The cluster: one ResourceFlavor (``default``, no labels: every node).
- No tenants (throughput, contention, preemption): one ClusterQueue ``bench`` whose
  nominal cpu and memory are the cluster's, preemption ``withinClusterQueue:
  LowerPriority``; a LocalQueue ``bench`` in the trial's namespace.
- A tenant (``Share``): a ClusterQueue in cohort ``bench``, nominal = its min, borrowing
  limit = max - min, ``fairSharing.weight`` = its weight, preemption
  ``reclaimWithinCohort: Any`` and ``withinClusterQueue: LowerPriority``; a LocalQueue of
  the tenant's name in its namespace. The trial's own namespace gets a LocalQueue
  ``bench`` of a ClusterQueue in the cohort with no nominal (the runner's probe borrows).
- A gang as a Job: the Job labelled ``kueue.x-k8s.io/queue-name`` (Kueue's webhook
  suspends it until admitted; the Job controller then makes its pods).
- A gang as bare pods: Kueue's pod group, labels ``kueue.x-k8s.io/queue-name`` and
  ``kueue.x-k8s.io/pod-group-name``, annotation ``kueue.x-k8s.io/pod-group-total-count``
  (its webhook gates the pods until the group is admitted).

All-or-nothing is Kueue's documented ``waitForPodsReady`` with ``blockAdmission``
(``e2e.kueue.KueueSettings``): a gang's quota is admitted whole, and the next one waits
until its pods are Ready. ``kueue-nonblocking`` is the same without ``blockAdmission``.

Kueue must see every pod and Job as it is created (its webhooks suspend or gate them), so
it is started in :meth:`KueuePeer.prepare`, before anything is submitted, with every
ClusterQueue on ``stopPolicy: Hold``; :meth:`KueuePeer.start` (the moment the suites
time from) releases the queues and starts kube-scheduler. Both processes' CPU is counted.
"""

from __future__ import annotations

import asyncio
import subprocess
from typing import Any, ClassVar

from bench.analysis import NodeCapacity
from bench.peers import Gang, Ours, Peer, PeerContext, Share, _kube_scheduler_config
from e2e import build as e2e_build
from e2e import kueue as e2e_kueue
from e2e import versions as e2e_versions
from e2e.processes import Process

Json = dict[str, Any]

POD_GROUP_LABEL = "kueue.x-k8s.io/pod-group-name"
POD_GROUP_COUNT = "kueue.x-k8s.io/pod-group-total-count"
DEFAULT_QUEUE = "bench"
"""The ClusterQueue and LocalQueue of a workload without tenants (namespace ``bench``)."""
COHORT = "bench"
FLAVOR = "default"


class KueuePeer(Peer):
    settings: ClassVar[e2e_kueue.KueueSettings] = e2e_kueue.KueueSettings()
    admits_by_creating_pods: ClassVar[bool] = True
    #: What places the pods Kueue admits (names its process and log).
    placer: ClassVar[str] = "kube-scheduler"

    def __init__(self, name: str = "kueue", description: str = "") -> None:
        super().__init__(
            name,
            description
            or f"Kueue {e2e_versions.KUEUE} (waitForPodsReady, blockAdmission) + kube-scheduler",
            gangs=True,
        )
        self._kueue: e2e_kueue.Kueue | None = None
        self._kubectl: list[str] = []
        self._queues: list[str] = []
        self._capacity = NodeCapacity(cpu=0.0, memory=0.0, pods=0)

    # --- translation ------------------------------------------------------------------------

    def decorate_pod(self, pod: Json, gang: Gang) -> None:
        if gang.job:
            return  # the Job carries the queue; Kueue's Job integration owns its pods
        labels = pod["metadata"]["labels"]
        labels[e2e_kueue.KUEUE_QUEUE_LABEL] = gang.queue or DEFAULT_QUEUE
        if gang.size > 1:
            labels[POD_GROUP_LABEL] = gang.name
            pod["metadata"]["annotations"][POD_GROUP_COUNT] = str(gang.size)

    def decorate_job(self, job: Json, gang: Gang) -> None:
        job["metadata"]["labels"][e2e_kueue.KUEUE_QUEUE_LABEL] = gang.queue or DEFAULT_QUEUE

    def share_objects(self, shares: list[Share]) -> list[tuple[str, Json]]:
        objects: list[tuple[str, Json]] = []
        for share in shares:
            nominal = share.min_cpu if share.min_cpu is not None else share.nominal_cpu
            if nominal is None:
                raise ValueError(f"share {share.name}: Kueue needs a nominal quota (min_cpu)")
            borrowing = None if share.max_cpu is None else max(0.0, share.max_cpu - nominal)
            queue = e2e_kueue.cluster_queue(
                share.name, cpu=nominal, memory=nominal * share.memory_per_cpu, cohort=COHORT,
                borrowing_cpu=borrowing, weight=share.weight, held=True, flavor=FLAVOR,
                preemption={"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"},
            )  # fmt: skip
            self._queues.append(share.name)
            objects.append((f"/apis/{e2e_kueue.API}/clusterqueues", queue))
            local = e2e_kueue.local_queue(share.name, share.namespace, share.name)
            objects.append((f"/apis/{e2e_kueue.API}/namespaces/{share.namespace}/localqueues",
                            local))  # fmt: skip
        return objects

    # --- processes --------------------------------------------------------------------------

    async def prepare(
        self, ctx: PeerContext, nodes: dict[str, NodeCapacity], shares: list[Share]
    ) -> None:
        """Start Kueue (building it first if need be) and write the objects every trial has."""
        files = await asyncio.to_thread(e2e_build.ensure_kueue)
        self._kubectl = [str(ctx.binaries.control_plane.kubectl), f"--kubeconfig={ctx.kubeconfig}"]
        self._capacity = NodeCapacity(
            cpu=sum(n.cpu for n in nodes.values()),
            memory=sum(n.memory for n in nodes.values()),
            pods=sum(n.pods for n in nodes.values()),
        )
        settings = type(self).settings
        settings = e2e_kueue.KueueSettings(
            qps=ctx.qps, burst=ctx.burst, block_admission=settings.block_admission,
            wait_for_pods_ready=settings.wait_for_pods_ready,
            pods_ready_timeout_seconds=settings.pods_ready_timeout_seconds,
        )  # fmt: skip
        ctx.log_dir.mkdir(parents=True, exist_ok=True)
        self._kueue = await asyncio.to_thread(
            e2e_kueue.Kueue.start, files, kubectl=self._kubectl, kubeconfig=ctx.kubeconfig,
            work_dir=ctx.work_dir, log=ctx.log_dir / "kueue.log", settings=settings,
        )  # fmt: skip
        self.processes = [self._kueue.process]
        objects = [e2e_kueue.resource_flavor(FLAVOR)]
        if not shares:
            objects += [
                e2e_kueue.cluster_queue(
                    DEFAULT_QUEUE, cpu=self._capacity.cpu, memory=self._capacity.memory,
                    held=True, flavor=FLAVOR, preemption={"withinClusterQueue": "LowerPriority"},
                ),
                e2e_kueue.local_queue(DEFAULT_QUEUE, "bench", DEFAULT_QUEUE),
            ]  # fmt: skip
        else:
            # A pod of no tenant (the runner's probe) still draws from the cohort's quota,
            # through a queue with no nominal of its own: Kueue's quota then matches what
            # the nodes hold (else it admits a gang the probe's node cannot take whole).
            objects += [
                e2e_kueue.cluster_queue(
                    DEFAULT_QUEUE, cpu=0, memory=0, cohort=COHORT, held=True, flavor=FLAVOR
                ),
                e2e_kueue.local_queue(DEFAULT_QUEUE, "bench", DEFAULT_QUEUE),
            ]
        self._queues.append(DEFAULT_QUEUE)
        await asyncio.to_thread(self._kubectl_apply, objects)

    def _kubectl_apply(self, objects: list[Json]) -> None:
        import yaml

        subprocess.run(
            [*self._kubectl, "create", "-f", "-"], input=yaml.safe_dump_all(objects),
            text=True, check=True, capture_output=True, timeout=60,
        )  # fmt: skip

    def argv(self, ctx: PeerContext) -> list[list[str]]:
        config = _kube_scheduler_config(ctx, {"schedulerName": self.scheduler_name})
        return [
            [str(ctx.binaries.control_plane.kube_scheduler), f"--config={config}",
             *self.serving_flags(ctx), "--v=1"]
        ]  # fmt: skip

    def start(self, ctx: PeerContext) -> list[Process]:
        """Release the held ClusterQueues, then start the placer (Kueue already runs)."""
        if self._kueue is None:
            raise RuntimeError("the Kueue peer was started before it was prepared")
        for queue in self._queues:
            subprocess.run(
                [*self._kubectl, "patch", f"clusterqueue.kueue.x-k8s.io/{queue}", "--type=merge",
                 "-p", '{"spec":{"stopPolicy":"None"}}'],
                check=True, capture_output=True, timeout=60,
            )  # fmt: skip
        ctx.work_dir.mkdir(parents=True, exist_ok=True)
        (argv,) = self.argv(ctx)
        scheduler = Process.start(
            f"{self.name}-{self.placer}", argv, env=self.env(),
            log=ctx.log_dir / f"{self.name}-{self.placer}.log", die_with_parent=True,
        )  # fmt: skip
        self.processes = [scheduler, self._kueue.process]
        return self.processes

    def stop(self) -> None:
        for process in self.processes:
            if self._kueue is None or process is not self._kueue.process:
                process.stop()
        if self._kueue is not None:
            self._kueue.stop()
            self._kueue = None
        self.processes = []

    def versions(self) -> str:
        return (
            f"Kueue {e2e_versions.KUEUE} (built from its module), "
            f"kube-scheduler {e2e_versions.KUBERNETES}"
        )


class KueueNonBlocking(KueuePeer):
    """Kueue with ``waitForPodsReady`` but without ``blockAdmission``: admits gangs as fast
    as quota allows; a gang not Ready within the timeout is evicted and requeued."""

    settings: ClassVar[e2e_kueue.KueueSettings] = e2e_kueue.KueueSettings(block_admission=False)

    def __init__(self) -> None:
        super().__init__(
            "kueue-nonblocking",
            f"Kueue {e2e_versions.KUEUE} (waitForPodsReady without blockAdmission) "
            "+ kube-scheduler",
        )


class KueueCoscheduler(KueuePeer):
    """Kueue admitting, coscheduler placing each admitted Job whole (issue #44): no
    ``waitForPodsReady``, no PodGroup; the same objects as the Kueue peer's otherwise."""

    settings: ClassVar[e2e_kueue.KueueSettings] = e2e_kueue.KueueSettings(wait_for_pods_ready=False)
    placer: ClassVar[str] = "coscheduler"

    def __init__(self) -> None:
        super().__init__(
            "kueue-coscheduler",
            f"Kueue {e2e_versions.KUEUE} (no waitForPodsReady) + coscheduler run (this repository)",
        )
        self._ours = Ours()

    @property
    def scheduler_name(self) -> str:
        return self._ours.scheduler_name

    async def prepare(
        self, ctx: PeerContext, nodes: dict[str, NodeCapacity], shares: list[Share]
    ) -> None:
        await self._ours.prepare(ctx, nodes, shares)
        await super().prepare(ctx, nodes, shares)

    def argv(self, ctx: PeerContext) -> list[list[str]]:
        argv = self._ours.argv(ctx)
        self.metrics_port = self._ours.metrics_port
        return argv

    def env(self) -> dict[str, str] | None:
        return self._ours.env()

    def versions(self) -> str:
        return f"Kueue {e2e_versions.KUEUE} (built from its module), {self._ours.versions()}"


KUEUE_PEERS: dict[str, type[KueuePeer]] = {
    "kueue": KueuePeer,
    "kueue-nonblocking": KueueNonBlocking,
    "kueue-coscheduler": KueueCoscheduler,
}


def make_kueue_peer(name: str) -> KueuePeer:
    return KUEUE_PEERS[name]()
