"""The peers: how each scheduler is started, and how a gang is written in its API.

Every peer schedules the pods whose ``spec.schedulerName`` is its own, with the same
client QPS/burst. A gang is ``Gang`` (name, members, minMember); each peer translates it:

| peer | gang object | member pods carry |
|---|---|---|
| ours | ``PodGroup`` of ``scheduling.sigs.k8s.io`` | label ``scheduling.sigs.k8s.io/pod-group`` |
| reference | ``PodGroup`` of ``scheduling.x-k8s.io`` | label ``scheduling.x-k8s.io/pod-group`` |
| native | Kubernetes' own gang object of the running release (below) | its reference to it |
| native-all | as native, ``disruptionMode: all`` (1.37+) | as native |
| ours-workload | 1.35's ``Workload`` (coscheduler reading it; 1.35 only) | ``workloadRef`` |
| ours-preemption-off | as ours (``coscheduler run --preemption=off``) | as ours |
| ours-usage-decay | as ours (``coscheduler run --usage-half-life-seconds=60``) | as ours |
| default, ceiling | none (no gang support) | nothing |

A gang of one is a plain pod for every peer (each treats a lone pod as a gang of one),
so no group object is written for it.

Kubernetes' own gang API changed with every release (``e2e/versions.py``): 1.35 has a
``Workload`` (``scheduling.k8s.io/v1alpha1``) whose podGroup the pods name in
``spec.workloadRef``; 1.36 a ``PodGroup`` (``v1alpha2``) and 1.37 a ``PodGroup``
(``v1beta1``), both named by the pods' ``spec.schedulingGroup.podGroupName``. The native
peers write the one the running release serves.
"""

from __future__ import annotations

import compileall
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import yaml

from bench.build import PeerBinaries
from bench.runtime_venv import runtime_python
from e2e import versions as e2e_versions
from e2e.processes import Process, free_port

if TYPE_CHECKING:
    from bench.analysis import NodeCapacity

Json = dict[str, Any]

REPO = Path(__file__).resolve().parents[1]
GANG_LABEL = "bench.coscheduler.dev/gang"
"""Set on every pod whatever the peer, so the runner knows the gang of each pod."""

OURS_GROUP_LABEL = "scheduling.sigs.k8s.io/pod-group"
OURS_QUEUE_LABEL = "scheduling.sigs.k8s.io/queue"
REFERENCE_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
NATIVE_POD_GROUP = "workers"
"""The one podGroup of a 1.35 ``Workload``."""


def native_gang_api() -> str:
    """The ``scheduling.k8s.io`` version whose object the native peers write on this release."""
    return e2e_versions.native_gang_api_versions()[0]


def native_group_collection() -> str:
    """The cluster-wide collection of the native gang object (listed before a trial starts)."""
    kind = "workloads" if e2e_versions.minor() <= 35 else "podgroups"
    return f"/apis/scheduling.k8s.io/{native_gang_api()}/{kind}"


def kubernetes_release() -> str:
    """The running release without its ``v`` (``1.37.2``)."""
    return e2e_versions.KUBERNETES.removeprefix("v")


def native_gates() -> str:
    """The gang gates the native peers' kube-scheduler runs with, for descriptions."""
    return ", ".join(gate.partition("=")[0] for gate in
                     e2e_versions.native_gang_feature_gates().split(","))  # fmt: skip


class UnsupportedPeer(SystemExit):
    """A peer this Kubernetes release cannot run (raised before any trial starts)."""


REFERENCE_PERMIT_WAIT_SECONDS = 10
"""From scheduler-plugins' own example configuration (manifests/coscheduling)."""


@dataclass(frozen=True)
class Gang:
    name: str
    size: int
    min_member: int
    cpu: str = "1"
    memory: str = "1Gi"
    run_seconds: float | None = None
    """KWOK completes each member this long after it runs; None: it runs forever."""
    job: bool = False
    """Submit as a batch/v1 Job (parallelism = completions = size) instead of bare pods."""
    namespace: str | None = None
    """Its namespace (a tenant), when not the trial's own."""
    queue: str | None = None
    """The share it draws from (ours: a Queue; the reference: its namespace's ElasticQuota)."""
    priority_class: str | None = None
    """Its pods' ``priorityClassName`` (the same for every peer)."""
    grace_seconds: int = 0
    """Its pods' ``terminationGracePeriodSeconds``: how long a deleted member takes to go
    when KWOK honours grace periods (``ClusterOptions.grace_periods``)."""
    ignore_disruptions: bool = False
    """Its Job ignores the failures of pods with a ``DisruptionTarget`` condition (its
    ``podFailurePolicy``): a preempted member is made again, and the Job does not fail."""
    topology_key: str | None = None
    """A node label key: every needed member must land on nodes sharing one value of it."""
    gpus: int = 0
    """GPUs each member claims (DRA), from the ResourceClaimTemplate ``gpus-<n>`` of its
    namespace (the ``dra`` suite publishes them); 0: none."""


@dataclass(frozen=True)
class Share:
    """A tenant's part of the cluster, written by each peer in its own terms.

    Ours: a Queue ``name`` of this weight (and nominal/max cpu, if set) open to
    ``namespace``. The reference: an ElasticQuota in ``namespace`` with min = ``min_cpu``
    and max = ``max_cpu`` (its CapacityScheduling has no weights). Others: nothing.
    """

    name: str
    namespace: str
    weight: int = 1
    nominal_cpu: float | None = None
    max_cpu: float | None = None
    min_cpu: float | None = None
    memory_per_cpu: int = 4 * 2**30
    """Bytes of memory beside each cpu of an ElasticQuota's min and max."""


def _cpu_and_memory(cpu: float, memory_per_cpu: int) -> Json:
    return {"cpu": f"{cpu:g}", "memory": str(int(cpu * memory_per_cpu))}


@dataclass
class PeerContext:
    binaries: PeerBinaries
    kubeconfig: Path
    work_dir: Path
    qps: float
    burst: int
    log_dir: Path
    profile_dir: Path | None = None
    audit_log: Path | None = None
    label: str = "trial"
    #: Ours' log level when set (the startup suite reads ours' ``started`` line, at info).
    log_level: str | None = None
    capacity_scheduling: bool = False
    """The reference runs its CapacityScheduling plugin beside Coscheduling."""


@dataclass
class Peer:
    name: str
    description: str
    gangs: bool
    capacity_checks: bool = True
    processes: list[Process] = field(default_factory=list)
    metrics_port: int = 0
    metrics_scheme: str = "http"
    #: A Job's pods exist only once the peer admitted it (Kueue); see ``bench.admission``.
    admits_by_creating_pods: ClassVar[bool] = False

    @property
    def scheduler_name(self) -> str:
        return f"bench-{self.name}"

    # --- translation ------------------------------------------------------------------------

    def group_object(self, gang: Gang) -> tuple[str, Json] | None:
        """(collection path relative to the namespace, body) of the gang's object, if any."""
        return None

    def decorate_pod(self, pod: Json, gang: Gang) -> None:
        """Add what makes the pod a member of ``gang`` for this peer."""

    def share_objects(self, shares: list[Share]) -> list[tuple[str, Json]]:
        """(collection path, body) of what divides the cluster between tenants, if anything."""
        return []

    def decorate_job(self, job: Json, gang: Gang) -> None:
        """Add what makes a Job (of ``gang``) this peer's, beside its pods' template."""

    async def prepare(
        self, ctx: PeerContext, nodes: dict[str, NodeCapacity], shares: list[Share]
    ) -> None:
        """Before anything is submitted: what must already run (an admission webhook)."""

    # --- processes --------------------------------------------------------------------------

    def argv(self, ctx: PeerContext) -> list[list[str]]:
        raise NotImplementedError

    def env(self) -> dict[str, str] | None:
        """Environment variables of its processes beside the runner's own."""
        return None

    def start(self, ctx: PeerContext) -> list[Process]:
        """Start the peer's processes; the first one is the scheduler (its CPU is measured)."""
        ctx.work_dir.mkdir(parents=True, exist_ok=True)
        self.processes = []
        for index, argv in enumerate(self.argv(ctx)):
            label = self.name if index == 0 else f"{self.name}-{Path(argv[0]).name}"
            process = Process.start(
                label, argv, log=ctx.log_dir / f"{label}.log", env=self.env(),
                die_with_parent=True,
            )  # fmt: skip
            self.processes.append(process)
        return self.processes

    def stop(self) -> None:
        for process in reversed(self.processes):
            process.stop()
        self.processes = []

    def versions(self) -> str:
        return ""

    def serving_flags(self, ctx: PeerContext) -> list[str]:
        """kube-scheduler's secure port on 127.0.0.1 with /metrics readable without a token
        (its self-signed certificate in the work dir): the runner reads its Permit waits."""
        self.metrics_port = free_port()
        self.metrics_scheme = "https"
        return [
            f"--secure-port={self.metrics_port}",
            "--bind-address=127.0.0.1",
            f"--cert-dir={ctx.work_dir / 'serving'}",
            "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics",
        ]


def _kube_scheduler_config(ctx: PeerContext, profile: Json) -> Path:
    config = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "leaderElection": {"leaderElect": False},
        "clientConnection": {
            "kubeconfig": str(ctx.kubeconfig),
            "qps": ctx.qps,
            "burst": ctx.burst,
        },
        "profiles": [profile],
    }
    path = ctx.work_dir / f"{profile['schedulerName']}.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


class WorkloadGangs(Peer):
    """Gangs as Kubernetes 1.35's ``Workload``: one gang podGroup, ``minCount`` = minMember."""

    def group_object(self, gang: Gang) -> tuple[str, Json] | None:
        if gang.size == 1:
            return None
        if gang.topology_key is not None:
            raise ValueError("the 1.35 Workload API has no topology constraint")
        body = {
            "apiVersion": "scheduling.k8s.io/v1alpha1",
            "kind": "Workload",
            "metadata": {"name": gang.name},
            "spec": {
                "podGroups": [
                    {"name": NATIVE_POD_GROUP, "policy": {"gang": {"minCount": gang.min_member}}}
                ]
            },
        }
        return "/apis/scheduling.k8s.io/v1alpha1/namespaces/{ns}/workloads", body

    def decorate_pod(self, pod: Json, gang: Gang) -> None:
        if gang.size > 1:
            pod["spec"]["workloadRef"] = {"name": gang.name, "podGroup": NATIVE_POD_GROUP}


class NativeGangs(WorkloadGangs):
    """Gangs in the native API of the running release: 1.35's ``Workload``, else a
    ``PodGroup`` (1.36 ``v1alpha2``, 1.37 ``v1beta1``) with ``minCount`` = minMember, the
    gang's PriorityClass, its topology key and, when set, the unit it is disrupted in."""

    #: ``disruptionMode``: None leaves the release's default (``single`` on 1.37).
    disruption: str | None = None

    def group_object(self, gang: Gang) -> tuple[str, Json] | None:
        if e2e_versions.minor() <= 35 or gang.size == 1:
            return super().group_object(gang)
        version = native_gang_api()
        spec: Json = {"schedulingPolicy": {"gang": {"minCount": gang.min_member}}}
        if gang.priority_class is not None:
            spec["priorityClassName"] = gang.priority_class
        if gang.topology_key is not None:
            spec["schedulingConstraints"] = {"topology": [{"key": gang.topology_key}]}
        if self.disruption is not None:
            spec["disruptionMode"] = {self.disruption: {}}
        body = {
            "apiVersion": f"scheduling.k8s.io/{version}",
            "kind": "PodGroup",
            "metadata": {"name": gang.name},
            "spec": spec,
        }
        return f"/apis/scheduling.k8s.io/{version}/namespaces/{{ns}}/podgroups", body

    def decorate_pod(self, pod: Json, gang: Gang) -> None:
        if e2e_versions.minor() <= 35:
            super().decorate_pod(pod, gang)
        elif gang.size > 1:
            pod["spec"]["schedulingGroup"] = {"podGroupName": gang.name}


class Ours(Peer):
    #: Extra flags of ``coscheduler run`` (a variant of ours; none: its defaults).
    flags: tuple[str, ...] = ()

    def __init__(self) -> None:
        super().__init__("ours", "coscheduler run (this repository)", gangs=True)

    def group_object(self, gang: Gang) -> tuple[str, Json] | None:
        if gang.size == 1:
            return None
        spec: Json = {"minMember": gang.min_member}
        if gang.queue is not None:
            spec["queue"] = gang.queue
        if gang.topology_key is not None:
            spec["topology"] = {"required": gang.topology_key}
        body = {
            "apiVersion": "scheduling.sigs.k8s.io/v1alpha1",
            "kind": "PodGroup",
            "metadata": {"name": gang.name},
            "spec": spec,
        }
        return "/apis/scheduling.sigs.k8s.io/v1alpha1/namespaces/{ns}/podgroups", body

    def decorate_pod(self, pod: Json, gang: Gang) -> None:
        if gang.size > 1:
            pod["metadata"]["labels"][OURS_GROUP_LABEL] = gang.name
        elif gang.queue is not None:
            pod["metadata"]["labels"][OURS_QUEUE_LABEL] = gang.queue

    def share_objects(self, shares: list[Share]) -> list[tuple[str, Json]]:
        objects = []
        for share in shares:
            spec: Json = {"weight": share.weight, "namespaces": [share.namespace]}
            if share.nominal_cpu is not None:
                spec["nominal"] = {"cpu": f"{share.nominal_cpu:g}"}
            if share.max_cpu is not None:
                spec["max"] = {"cpu": f"{share.max_cpu:g}"}
            body = {
                "apiVersion": "scheduling.sigs.k8s.io/v1alpha1",
                "kind": "Queue",
                "metadata": {"name": share.name},
                "spec": spec,
            }
            objects.append(("/apis/scheduling.sigs.k8s.io/v1alpha1/queues", body))
        return objects

    def command(self) -> list[str]:
        """How ``coscheduler`` is started (before ``run``): as the image has it, the
        runtime dependencies only (``bench/runtime_venv.py``), this tree's code.

        -P: not the working directory first on sys.path (it may be another checkout).
        """
        return [str(runtime_python()), "-P", "-c", "from coscheduler.cli import main; main()"]

    def env(self) -> dict[str, str] | None:
        return {"PYTHONPATH": str(self.package().parent)}

    def package(self) -> Path:
        """The ``coscheduler`` package directory this peer runs."""
        return Path(__file__).resolve().parents[1] / "coscheduler"

    async def prepare(
        self, ctx: PeerContext, nodes: dict[str, NodeCapacity], shares: list[Share]
    ) -> None:
        # Compiled before the trial, as pip compiles the image's wheel: with
        # PYTHONDONTWRITEBYTECODE set (the image sets it, so may the shell) an uncompiled
        # checkout is compiled again at every start, a sixth of its imports (issue #28),
        # which the image never pays. Not in start(): the runner's clock runs from there.
        compileall.compile_dir(self.package(), quiet=1)
        runtime_python()  # made once (a minute), not on the runner's clock either

    def argv(self, ctx: PeerContext) -> list[list[str]]:
        self.metrics_port = free_port()
        level = ctx.log_level or ("info" if ctx.profile_dir is not None else "warning")
        return [[
            *self.command(), "run",
            "--kubeconfig", str(ctx.kubeconfig),
            "--no-leader-elect",
            "--scheduler-name", self.scheduler_name,
            "--qps", str(ctx.qps), "--burst", str(ctx.burst),
            "--metrics-address", "127.0.0.1", "--metrics-port", str(self.metrics_port),
            # A profiled trial keeps an info log beside the profile, to time the phases.
            "--log-level", level,
            *self.flags,
        ]]  # fmt: skip

    def versions(self) -> str:
        from coscheduler import __version__

        return f"coscheduler {__version__} (Python {sys.version.split()[0]})"


class Reference(Peer):
    def __init__(self) -> None:
        super().__init__(
            "reference",
            "kube-scheduler + Coscheduling (scheduler-plugins v0.34.7, k8s 1.34.2) "
            "+ its PodGroup controller",
            gangs=True,
        )

    def group_object(self, gang: Gang) -> tuple[str, Json] | None:
        if gang.size == 1:
            return None
        body = {
            "apiVersion": "scheduling.x-k8s.io/v1alpha1",
            "kind": "PodGroup",
            "metadata": {"name": gang.name},
            "spec": {"minMember": gang.min_member},
        }
        return "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/{ns}/podgroups", body

    def decorate_pod(self, pod: Json, gang: Gang) -> None:
        if gang.size > 1:
            pod["metadata"]["labels"][REFERENCE_GROUP_LABEL] = gang.name

    def share_objects(self, shares: list[Share]) -> list[tuple[str, Json]]:
        objects = []
        for share in shares:
            # A resource an ElasticQuota leaves out has a max of zero: a pod asking memory
            # is "more than Max". So memory is set too, in proportion to the cpu.
            spec: Json = {}
            if share.min_cpu is not None:
                spec["min"] = _cpu_and_memory(share.min_cpu, share.memory_per_cpu)
            if share.max_cpu is not None:
                spec["max"] = _cpu_and_memory(share.max_cpu, share.memory_per_cpu)
            body = {
                "apiVersion": "scheduling.x-k8s.io/v1alpha1",
                "kind": "ElasticQuota",
                "metadata": {"name": share.name, "namespace": share.namespace},
                "spec": spec,
            }
            path = f"/apis/scheduling.x-k8s.io/v1alpha1/namespaces/{share.namespace}/elasticquotas"
            objects.append((path, body))
        return objects

    def argv(self, ctx: PeerContext) -> list[list[str]]:
        plugins: Json = {
            "multiPoint": {"enabled": [{"name": "Coscheduling"}]},
            "queueSort": {"enabled": [{"name": "Coscheduling"}], "disabled": [{"name": "*"}]},
        }
        if ctx.capacity_scheduling:
            # Its PreFilter and Reserve (admission by ElasticQuota min/max), as in
            # scheduler-plugins' sample; its PostFilter (preemption to reclaim min) is left
            # out: ours does not preempt yet, and a preempted member fails its Job.
            plugins["multiPoint"]["enabled"].append({"name": "CapacityScheduling"})
            plugins["postFilter"] = {"disabled": [{"name": "CapacityScheduling"}]}
        profile = {
            "schedulerName": self.scheduler_name,
            "plugins": plugins,
            "pluginConfig": [
                {
                    "name": "Coscheduling",
                    "args": {"permitWaitingTimeSeconds": REFERENCE_PERMIT_WAIT_SECONDS},
                }
            ],
        }
        config = _kube_scheduler_config(ctx, profile)
        return [
            [
                str(ctx.binaries.reference_scheduler),
                f"--config={config}",
                *self.serving_flags(ctx),
                "--v=1",
            ],
            [
                str(ctx.binaries.reference_controller),
                f"--kubeconfig={ctx.kubeconfig}",
                "--metricsAddr=0", "--probeAddr=0",
                f"--qps={int(ctx.qps)}", f"--burst={ctx.burst}",
            ],
        ]  # fmt: skip

    def versions(self) -> str:
        return "scheduler-plugins v0.34.7 built against Kubernetes v1.34.2"


class Default(Peer):
    def __init__(self) -> None:
        super().__init__(
            "default", f"kube-scheduler {kubernetes_release()}, default plugins (no gangs)",
            gangs=False,
        )  # fmt: skip

    def argv(self, ctx: PeerContext) -> list[list[str]]:
        config = _kube_scheduler_config(ctx, {"schedulerName": self.scheduler_name})
        return [
            [str(ctx.binaries.control_plane.kube_scheduler), f"--config={config}",
             *self.serving_flags(ctx), "--v=1"]
        ]  # fmt: skip

    def versions(self) -> str:
        return f"kube-scheduler {e2e_versions.KUBERNETES}"


class Native(NativeGangs):
    """kube-scheduler of the running release with its gang gates (its PodGroup cycle,
    workload-aware preemption and topology-aware placement on 1.37: the gates enable
    their plugins in the default profile, no plugin configuration needed)."""

    def __init__(self) -> None:
        api = native_gang_api()
        kind = "Workload" if e2e_versions.minor() <= 35 else "PodGroup"
        super().__init__(
            "native",
            f"kube-scheduler {kubernetes_release()} with {native_gates()} "
            f"({kind}, scheduling.k8s.io/{api})",
            gangs=True,
        )

    def argv(self, ctx: PeerContext) -> list[list[str]]:
        config = _kube_scheduler_config(ctx, {"schedulerName": self.scheduler_name})
        return [
            [str(ctx.binaries.control_plane.kube_scheduler), f"--config={config}",
             f"--feature-gates={e2e_versions.native_gang_feature_gates()}",
             *self.serving_flags(ctx), "--v=1"]
        ]  # fmt: skip

    def versions(self) -> str:
        return f"kube-scheduler {e2e_versions.KUBERNETES} ({native_gates()})"


class NativeAll(Native):
    """The native peer with ``disruptionMode: all``: a victim PodGroup goes whole or not at
    all (1.37's ``v1beta1``; 1.36 gates it behind WorkloadAwarePreemption, 1.35 has none)."""

    disruption = "all"

    def __init__(self) -> None:
        if e2e_versions.minor() < 37:
            raise UnsupportedPeer(
                f"native-all needs Kubernetes 1.37+ (PodGroup disruptionMode); this run is "
                f"{e2e_versions.KUBERNETES}"
            )
        super().__init__()
        self.name = "native-all"
        self.description += ", disruptionMode: all"

    def versions(self) -> str:
        return f"{super().versions()}, disruptionMode all"


class OursWorkload(WorkloadGangs, Ours):
    """Ours, given the very objects the native peer gets on 1.35 (issue #21: the Workload
    API read). 1.36 removed that API; ours through its own CRD is the main comparison."""

    def __init__(self) -> None:
        if e2e_versions.minor() > 35:
            raise UnsupportedPeer(
                "ours-workload writes 1.35's Workload (scheduling.k8s.io/v1alpha1), which "
                f"{e2e_versions.KUBERNETES} no longer serves: run it with "
                f"{e2e_versions.KUBERNETES_ENV}=1.35"
            )
        Peer.__init__(
            self,
            "ours-workload",
            "coscheduler run (this repository), gangs as Workloads (scheduling.k8s.io/v1alpha1)",
            gangs=True,
        )


class OursPreemptionOff(Ours):
    """Ours with ``--preemption=off`` (issue #18: what preemption costs where nothing is
    preempted; ``ours`` runs with the default, on)."""

    flags = ("--preemption=off",)

    def __init__(self) -> None:
        Peer.__init__(
            self,
            "ours-preemption-off",
            "coscheduler run (this repository) --preemption=off",
            gangs=True,
        )


class OursAsyncio(Ours):
    """Ours on asyncio's event loop (``--event-loop asyncio``; ``ours`` runs on uvloop's,
    issue #28): what the loop costs, side by side in one run."""

    flags = ("--event-loop=asyncio",)

    def __init__(self) -> None:
        Peer.__init__(
            self,
            "ours-asyncio",
            "coscheduler run (this repository) --event-loop=asyncio",
            gangs=True,
        )


class OursBindConcurrency(Ours):
    """Ours with another ``--bind-concurrency`` (``ours-bindN``): each Binding in flight
    holds a connection (HTTP/1.1), each connection costs a TLS handshake (issue #28)."""

    def __init__(self, concurrency: int) -> None:
        self.flags = (f"--bind-concurrency={concurrency}",)
        Peer.__init__(
            self,
            f"ours-bind{concurrency}",
            f"coscheduler run (this repository) --bind-concurrency={concurrency}",
            gangs=True,
        )


#: The half-life of ``ours-usage-decay``.
USAGE_HALF_LIFE_SECONDS = 60.0


class OursUsageDecay(Ours):
    """Ours with fair share over time (issue #31): recent usage, decayed with a half-life
    of 60 s (three pod run times of the fairness suites), counts in queue order; ``ours``
    runs with it off."""

    flags = (f"--usage-half-life-seconds={USAGE_HALF_LIFE_SECONDS:g}",)

    def __init__(self) -> None:
        Peer.__init__(
            self,
            "ours-usage-decay",
            f"coscheduler run (this repository) --usage-half-life-seconds="
            f"{USAGE_HALF_LIFE_SECONDS:g}",
            gangs=True,
        )


class OursAt(Ours):
    """Ours at another git revision (``ours@REV``): before and after a change, in one run.

    The revision's ``coscheduler`` package is exported (``git archive``) into the cache,
    once per commit, and run as ``ours`` is, with the runtime venv's interpreter. Same
    ``schedulerName`` as ours (``bench-ours``): the workload is the same.
    """

    def __init__(self, revision: str) -> None:
        super().__init__()
        self.name = f"ours@{revision}"
        self.description = f"coscheduler run at {revision}"
        self.revision = revision
        self._tree: Path | None = None

    @property
    def scheduler_name(self) -> str:
        return "bench-ours"

    def tree(self) -> Path:
        if self._tree is None:
            repo = Path(__file__).resolve().parents[1]
            sha = subprocess.run(
                ["git", "rev-parse", "--verify", f"{self.revision}^{{commit}}"],
                cwd=repo, check=True, capture_output=True, text=True,
            ).stdout.strip()  # fmt: skip
            tree = Path.home() / ".cache" / "coscheduler" / "ours-at" / sha
            if not (tree / "coscheduler" / "cli.py").is_file():
                tree.mkdir(parents=True, exist_ok=True)
                archive = subprocess.run(
                    ["git", "archive", sha, "coscheduler"], cwd=repo, check=True,
                    capture_output=True,
                ).stdout  # fmt: skip
                subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
            self._tree = tree
        return self._tree

    def package(self) -> Path:
        return self.tree() / "coscheduler"

    def versions(self) -> str:
        return f"{super().versions()} at {self.revision}"


class Ceiling(Peer):
    def __init__(self) -> None:
        super().__init__(
            "ceiling",
            "a Go binder: pending pods to nodes round-robin, no checks (bench/ceiling)",
            gangs=False,
            capacity_checks=False,
        )

    def argv(self, ctx: PeerContext) -> list[list[str]]:
        return [[
            str(ctx.binaries.ceiling), f"--kubeconfig={ctx.kubeconfig}",
            f"--scheduler-name={self.scheduler_name}",
            f"--qps={ctx.qps}", f"--burst={ctx.burst}",
        ]]  # fmt: skip

    def versions(self) -> str:
        return f"client-go {e2e_versions.staging_version()}"


PEERS = {
    "ours": Ours,
    "reference": Reference,
    "native": Native,
    "native-all": NativeAll,
    "default": Default,
    "ceiling": Ceiling,
    "ours-workload": OursWorkload,
    "ours-preemption-off": OursPreemptionOff,
    "ours-asyncio": OursAsyncio,
    "ours-usage-decay": OursUsageDecay,
}
#: The peers of every suite by default (the variants are asked for by name).
ALL_PEERS = tuple(name for name in PEERS if not name.startswith("ours-") and name != "native-all")
#: Peers asked for by name only: Kueue is built from its module on first use
#: (``bench.kueue_peer``, imported when one is made).
OPTIONAL_PEERS = ("kueue", "kueue-nonblocking", "kueue-coscheduler")


def make_peer(name: str) -> Peer:
    if name in OPTIONAL_PEERS:
        from bench.kueue_peer import KUEUE_PEERS  # imports this module

        return KUEUE_PEERS[name]()
    if name.startswith("ours@"):
        return OursAt(name.removeprefix("ours@"))
    if name.startswith("ours-bind") and name.removeprefix("ours-bind").isdigit():
        return OursBindConcurrency(int(name.removeprefix("ours-bind")))
    try:
        return PEERS[name]()
    except KeyError:
        known = ", ".join((*PEERS, *OPTIONAL_PEERS))
        raise SystemExit(f"unknown peer {name!r}; choose from {known}") from None


def which(path: str) -> str | None:
    return shutil.which(path)
