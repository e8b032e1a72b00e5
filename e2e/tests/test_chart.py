"""The Helm chart ``charts/coscheduler``.

It lints clean (also ``--strict``); it renders with its defaults and with
every value changed, and the flags it renders are parsed by ``coscheduler
run``'s own command line into the settings the values say; a misspelt or
out-of-range value is refused by ``values.schema.json``; what it renders is
accepted by the real API server (``kubectl apply --dry-run=server``) and
installs with ``helm install``; its CRD is the repository's; and the plain
manifests of ``manifests/`` are the objects it renders by default.

helm is built from its Go module with the control plane (``e2e/build.py``).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from coscheduler.cli import run_settings
from coscheduler.runtime.settings import LeaderElectionSettings, Settings
from e2e import build, versions
from e2e.api import Json
from e2e.controlplane import Cluster
from e2e.waiting import wait_for

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "charts" / "coscheduler"
MANIFESTS = REPO / "manifests"
SYSTEM = "coscheduler-system"

HELM_ONLY_LABELS = frozenset({"helm.sh/chart", "app.kubernetes.io/managed-by"})
"""Labels that say Helm manages an object: false of the plain manifests, so left out of them."""

DEFAULT_KINDS = [
    "ClusterRole",
    "ClusterRoleBinding",
    "Deployment",
    "PodDisruptionBudget",
    "Role",
    "RoleBinding",
    "Service",
    "ServiceAccount",
]

# Every value changed from its default (fractions and a large integer included:
# the template must not print 1e+06 where an integer flag is expected).
NON_DEFAULT: Json = {
    "replicaCount": 3,
    "image": {"repository": "registry.example/coscheduler", "tag": "0.2.0", "pullPolicy": "Always"},
    "imagePullSecrets": [{"name": "registry"}],
    "serviceAccount": {"annotations": {"example.com/role": "scheduler"}},
    "schedulerName": "gang-scheduler",
    "namespaces": ["team-a", "team-b"],
    "scoreStrategy": "least-allocated",
    "eventIntervalSeconds": 12.5,
    "logLevel": "debug",
    "logFormat": "console",
    "client": {
        "qps": 200.5,
        "burst": 1000000,
        "bindConcurrency": 128,
        "requestTimeoutSeconds": 45,
        "watchTimeoutSeconds": 600,
    },
    "backoff": {
        "initialSeconds": 0.5,
        "maxSeconds": 30,
        "unschedulableFlushSeconds": 120,
        "gatherSeconds": 0,
    },
    "leaderElection": {
        "leaseDurationSeconds": 30,
        "renewDeadlineSeconds": 20,
        "retryPeriodSeconds": 4,
    },
    "metrics": {
        "port": 9090,
        "serviceMonitor": {
            "enabled": True,
            "interval": "15s",
            "scrapeTimeout": "5s",
            "labels": {"release": "prometheus"},
        },
    },
    "dashboard": {"enabled": True, "address": "0.0.0.0", "port": 8080},
    "webhook": {
        "enabled": True,
        "port": 8443,
        "timeoutSeconds": 5,
        "certManager": {"enabled": False, "issuerRef": {}},
    },
    "podDisruptionBudget": {"minAvailable": "50%"},
    "priorityClassName": "",
    "resources": {"requests": {"cpu": "1", "memory": "512Mi"}, "limits": {"memory": "2Gi"}},
    "podAnnotations": {"example.com/scrape": "true"},
    "podLabels": {"team": "platform"},
    "nodeSelector": {"node-role.example.com/system": "true"},
    "tolerations": [{"key": "system", "operator": "Exists", "effect": "NoSchedule"}],
    "affinity": {
        "podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 100,
                    "podAffinityTerm": {
                        "topologyKey": "kubernetes.io/hostname",
                        "labelSelector": {"matchLabels": {"app.kubernetes.io/instance": "batch"}},
                    },
                }
            ]
        }
    },
    "topologySpreadConstraints": [
        {
            "maxSkew": 1,
            "topologyKey": "topology.kubernetes.io/zone",
            "whenUnsatisfiable": "ScheduleAnyway",
            "labelSelector": {"matchLabels": {"app.kubernetes.io/instance": "batch"}},
        }
    ],
}


# --- running helm -----------------------------------------------------------------------------


class HelmError(AssertionError):
    """helm failed; the message says what it printed."""


@dataclass(frozen=True)
class Helm:
    """The built helm, with its own config, cache and data directories (nothing in $HOME)."""

    binary: Path
    home: Path

    def __call__(
        self, *args: str, input: str | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        env = dict(os.environ)
        for kind in ("CACHE", "CONFIG", "DATA"):
            env[f"HELM_{kind}_HOME"] = str(self.home / kind.lower())
        result = subprocess.run(
            [str(self.binary), *args],
            input=input,
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            check=False,
        )
        if check and result.returncode != 0:
            raise HelmError(f"helm {' '.join(args)} failed ({result.returncode}):\n{result.stderr}")
        return result

    def template_text(
        self,
        values: Json | None = None,
        *,
        release: str = "coscheduler",
        namespace: str = SYSTEM,
        check: bool = True,
    ) -> subprocess.CompletedProcess[str]:
        """``helm template RELEASE charts/coscheduler -n NAMESPACE [-f VALUES]``."""
        args = ["template", release, str(CHART), "--namespace", namespace]
        if values is not None:
            args += ["--values", "-"]
        return self(*args, input=None if values is None else json.dumps(values), check=check)

    def template(
        self, values: Json | None = None, *, release: str = "coscheduler", namespace: str = SYSTEM
    ) -> list[Json]:
        """The rendered objects, parsed."""
        return _documents(self.template_text(values, release=release, namespace=namespace).stdout)


@pytest.fixture(scope="session")
def helm(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Helm:
    # Built with the control plane (make cluster-build); a cold build reports its progress.
    capture = request.config.pluginmanager.getplugin("capturemanager")
    with capture.global_and_fixture_disabled() if capture else contextlib.nullcontext():
        binaries = build.ensure_built()
    return Helm(binary=binaries.helm, home=tmp_path_factory.mktemp("helm-home"))


def _documents(text: str) -> list[Json]:
    return [doc for doc in yaml.safe_load_all(text) if doc]


def _by_kind(objects: Sequence[Json]) -> dict[str, list[Json]]:
    result: dict[str, list[Json]] = {}
    for obj in objects:
        result.setdefault(obj["kind"], []).append(obj)
    return result


def _one(objects: Sequence[Json], kind: str) -> Json:
    found = _by_kind(objects).get(kind, [])
    assert len(found) == 1, f"expected one {kind}, rendered {len(found)}"
    return found[0]


def _container(objects: Sequence[Json]) -> Json:
    containers = _one(objects, "Deployment")["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    container: Json = containers[0]
    return container


def _settings_of(objects: Sequence[Json]) -> Settings:
    """What ``coscheduler run`` makes of the rendered container's arguments."""
    args: list[str] = _container(objects)["args"]
    assert args[0] == "run"
    return run_settings(args[1:])


# --- lint and template ------------------------------------------------------------------------


def test_helm_is_the_pinned_release_with_its_ldflags(helm: Helm, tmp_path: Path) -> None:
    # Without the ldflags helm says "v3.22" and assumes Kubernetes 1.20 for
    # .Capabilities and for the deprecated APIs `helm lint` reports.
    assert helm("version", "--template", "{{ .Version }}").stdout == versions.HELM
    probe = tmp_path / "probe"
    (probe / "templates").mkdir(parents=True)
    (probe / "Chart.yaml").write_text("apiVersion: v2\nname: probe\nversion: 0.0.1\n")
    (probe / "templates" / "kube.yaml").write_text(
        "kind: Probe\nkubeVersion: {{ .Capabilities.KubeVersion.Version }}\n"
    )
    (rendered,) = _documents(helm("template", "probe", str(probe)).stdout)
    major, minor, _ = rendered["kubeVersion"].removeprefix("v").split(".")
    control_plane_minor = versions.KUBERNETES.split(".")[1]
    assert major == "1"
    assert int(minor) >= int(control_plane_minor), rendered


@pytest.mark.parametrize("strict", [False, True], ids=["lint", "lint-strict"])
@pytest.mark.parametrize("values", [None, NON_DEFAULT], ids=["defaults", "non-default"])
def test_chart_lints_clean(helm: Helm, tmp_path: Path, strict: bool, values: Json | None) -> None:
    args = ["lint", str(CHART)]
    if strict:
        args.append("--strict")
    if values is not None:
        path = tmp_path / "values.yaml"
        path.write_text(yaml.safe_dump(values))
        args += ["--values", str(path)]
    out = helm(*args).stdout
    assert "1 chart(s) linted, 0 chart(s) failed" in out, out
    assert "[WARNING]" not in out, out
    assert "[ERROR]" not in out, out


def test_defaults_render_coscheduler_with_its_own_defaults(helm: Helm) -> None:
    objects = helm.template()
    assert sorted(_by_kind(objects)) == DEFAULT_KINDS
    assert {obj["metadata"]["name"] for obj in objects} == {
        "coscheduler",
        "coscheduler-leader-election",
        "coscheduler-metrics",
    }
    deployment = _one(objects, "Deployment")
    assert deployment["spec"]["replicas"] == 2
    assert _container(objects)["image"] == "coscheduler:0.1.0"
    assert _one(objects, "PodDisruptionBudget")["spec"]["minAvailable"] == 1
    # values.yaml restates coscheduler's defaults; only what the chart must set differs.
    expected = Settings(leader_election=LeaderElectionSettings(lease_namespace=SYSTEM))
    assert _settings_of(objects) == expected


def test_non_default_values_reach_the_flags_and_objects(helm: Helm) -> None:
    objects = helm.template(NON_DEFAULT, release="batch", namespace="scheduling")
    kinds = _by_kind(objects)
    webhooks = ["MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"]
    assert sorted(kinds) == sorted([*DEFAULT_KINDS, "ServiceMonitor", "Secret", *webhooks])
    assert all(obj["metadata"]["name"].startswith("batch-coscheduler") for obj in objects)
    namespaced = [
        obj
        for obj in objects
        if not obj["kind"].startswith("Cluster") and obj["kind"] not in webhooks
    ]
    assert {obj["metadata"]["namespace"] for obj in namespaced} == {"scheduling"}

    settings = _settings_of(objects)
    assert settings.scheduler_name == "gang-scheduler"
    assert settings.namespaces == ("team-a", "team-b")
    assert settings.score_strategy.value == "least-allocated"
    assert settings.event_interval_seconds == 12.5
    assert (settings.log_level.value, settings.log_format.value) == ("debug", "console")
    assert settings.client.model_dump() == {
        "qps": 200.5,
        "burst": 1000000,
        "bind_concurrency": 128,
        "request_timeout_seconds": 45,
        "watch_timeout_seconds": 600,
    }
    assert settings.backoff.model_dump() == {
        "initial_seconds": 0.5,
        "max_seconds": 30,
        "unschedulable_flush_seconds": 120,
        "gather_seconds": 0,
    }
    lease = settings.leader_election
    assert lease.enabled
    assert (lease.lease_name, lease.lease_namespace) == ("batch-coscheduler", "scheduling")
    assert (lease.lease_duration_seconds, lease.renew_deadline_seconds) == (30, 20)
    assert lease.retry_period_seconds == 4
    assert settings.serving.port == 9090
    assert settings.dashboard.model_dump() == {"enabled": True, "address": "0.0.0.0", "port": 8080}
    assert (settings.webhook.port, settings.webhook.cert_dir) == (8443, "/etc/coscheduler/webhook")

    # The Role grants exactly the Lease the flags name.
    role = _one(objects, "Role")
    assert role["rules"][1]["resourceNames"] == ["batch-coscheduler"]

    deployment = _one(objects, "Deployment")
    pod = deployment["spec"]["template"]
    container = _container(objects)
    assert deployment["spec"]["replicas"] == 3
    assert container["image"] == "registry.example/coscheduler:0.2.0"
    assert container["imagePullPolicy"] == "Always"
    assert container["ports"] == [
        {"name": "http", "containerPort": 9090},
        {"name": "webhook", "containerPort": 8443},
    ]
    assert container["resources"] == NON_DEFAULT["resources"]
    assert pod["metadata"]["labels"]["team"] == "platform"
    assert pod["metadata"]["annotations"] == NON_DEFAULT["podAnnotations"]
    for key in ("nodeSelector", "tolerations", "affinity", "topologySpreadConstraints"):
        assert pod["spec"][key] == NON_DEFAULT[key], key
    assert pod["spec"]["imagePullSecrets"] == [{"name": "registry"}]
    assert "priorityClassName" not in pod["spec"]
    account = _one(objects, "ServiceAccount")
    assert account["metadata"]["annotations"] == {"example.com/role": "scheduler"}

    services = {obj["metadata"]["name"]: obj for obj in kinds["Service"]}
    assert services["batch-coscheduler-metrics"]["spec"]["ports"][0]["port"] == 9090
    assert services["batch-coscheduler-webhook"]["spec"]["ports"][0]["targetPort"] == "webhook"
    ca_bundle = _one(objects, "Secret")["data"]["ca.crt"]
    hooks = [hook for kind in webhooks for hook in _one(objects, kind)["webhooks"]]
    assert {hook["failurePolicy"] for hook in hooks} == {"Ignore"}, "no creation waits on us"
    assert {hook["timeoutSeconds"] for hook in hooks} == {5}
    for hook in hooks:
        reference = hook["clientConfig"]
        assert reference["service"]["name"] == "batch-coscheduler-webhook"
        assert reference["caBundle"] == ca_bundle
    [pods] = _one(objects, "MutatingWebhookConfiguration")["webhooks"]
    assert pods["namespaceSelector"]["matchExpressions"] == [
        {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["scheduling"]}
    ]
    assert _one(objects, "PodDisruptionBudget")["spec"]["minAvailable"] == "50%"
    monitor = _one(objects, "ServiceMonitor")
    assert monitor["metadata"]["labels"]["release"] == "prometheus"
    selector = deployment["spec"]["selector"]["matchLabels"]
    assert monitor["spec"]["selector"]["matchLabels"] == selector
    assert monitor["spec"]["endpoints"] == [
        {"port": "http", "path": "/metrics", "interval": "15s", "scrapeTimeout": "5s"}
    ]


def test_one_replica_may_run_without_leader_election(helm: Helm) -> None:
    values: Json = {"replicaCount": 1, "leaderElection": {"enabled": False}}
    objects = helm.template(values)
    # No Lease, so no Role for it; no PodDisruptionBudget, which would block every drain.
    assert sorted(_by_kind(objects)) == [
        "ClusterRole",
        "ClusterRoleBinding",
        "Deployment",
        "Service",
        "ServiceAccount",
    ]
    args = _container(objects)["args"]
    assert "--no-leader-elect" in args
    assert not [arg for arg in args if arg.startswith("--lease")]
    assert not _settings_of(objects).leader_election.enabled


@pytest.mark.parametrize(
    ("values", "complaint"),
    [
        ({"leaderElection": {"enabled": False}}, "every replica would schedule"),
        (
            {"backoff": {"initialSeconds": 20}},
            "backoff.maxSeconds (10) must not be below backoff.initialSeconds (20)",
        ),
        (
            {"leaderElection": {"renewDeadlineSeconds": 15}},
            "leaseDurationSeconds (15) must be greater than renewDeadlineSeconds (15)",
        ),
        (
            {"leaderElection": {"retryPeriodSeconds": 10.5}},
            "renewDeadlineSeconds (10) must be greater than retryPeriodSeconds (10.5)",
        ),
    ],
    ids=["replicas-without-lease", "backoff", "lease-duration", "renew-deadline"],
)
def test_values_coscheduler_would_refuse_are_refused(
    helm: Helm, values: Json, complaint: str
) -> None:
    result = helm.template_text(values, check=False)
    assert result.returncode != 0
    assert complaint in result.stderr, result.stderr


# --- the schema -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("values", "complaint"),
    [
        ({"schedulerNmae": "x"}, "additional properties 'schedulerNmae' not allowed"),
        ({"client": {"qsp": 100}}, "additional properties 'qsp' not allowed"),
        ({"metrics": {"serviceMonitor": {"enable": True}}}, "'enable' not allowed"),
        ({"leaderElection": {"leaseDuration": 30}}, "'leaseDuration' not allowed"),
        ({"scoreStrategy": "spread"}, "/scoreStrategy"),
        ({"logFormat": "text"}, "/logFormat"),
        ({"client": {"qps": 0}}, "/client/qps"),
        ({"client": {"burst": 2.5}}, "/client/burst"),
        ({"client": {"bindConcurrency": 5000}}, "/client/bindConcurrency"),
        ({"namespaces": ["Team_A"]}, "/namespaces/0"),
        ({"replicaCount": 0}, "/replicaCount"),
        ({"metrics": {"port": 0}}, "/metrics/port"),
        # null removes a default in Helm; a flag rendered without its value would stop the pod.
        ({"client": {"qps": None}}, "missing property 'qps'"),
        ({"schedulerName": None}, "missing property 'schedulerName'"),
    ],
    ids=lambda value: json.dumps(value) if isinstance(value, dict) else None,
)
def test_schema_refuses_typos_and_bad_values(helm: Helm, values: Json, complaint: str) -> None:
    result = helm.template_text(values, check=False)
    assert result.returncode != 0, result.stdout
    assert "values don't meet the specifications of the schema" in result.stderr
    assert complaint in result.stderr, result.stderr


# --- agreement with the repository ------------------------------------------------------------


def test_the_charts_crds_are_the_repositorys(helm: Helm) -> None:
    for name in ("podgroups.yaml", "queues.yaml"):
        chart_crd = CHART / "crds" / name
        assert chart_crd.read_bytes() == (REPO / "crds" / name).read_bytes(), (
            f"charts/coscheduler/crds/{name} differs from crds/{name}: "
            f"cp crds/{name} charts/coscheduler/crds/"
        )
    shown = _documents(helm("show", "crds", str(CHART)).stdout)
    assert [crd["metadata"]["name"] for crd in shown] == [
        "podgroups.scheduling.sigs.k8s.io",
        "queues.scheduling.sigs.k8s.io",
    ]


def _without_helm_labels(value: Any) -> Any:
    """The object with Helm's own labels removed wherever labels are set."""
    if isinstance(value, dict):
        return {
            key: (
                {k: v for k, v in item.items() if k not in HELM_ONLY_LABELS}
                if key == "labels" and isinstance(item, dict)
                else _without_helm_labels(item)
            )
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [_without_helm_labels(item) for item in value]
    return value


def _keyed(objects: Sequence[Json]) -> dict[tuple[str, str], Json]:
    keyed = {(obj["kind"], obj["metadata"]["name"]): obj for obj in objects}
    assert len(keyed) == len(objects), "two objects of one kind share a name"
    return keyed


def test_plain_manifests_are_the_charts_defaults(helm: Helm) -> None:
    """manifests/ are the chart's default rendering, less Helm's own labels.

    Why a test rather than generating manifests/ from the chart: they stay
    readable, commented files that anyone can apply and edit without helm,
    and they would otherwise carry labels saying Helm manages them; the test
    fails on any other difference, and its message says what to run.
    """
    rendered = _keyed([_without_helm_labels(obj) for obj in helm.template()])
    plain = _keyed(
        [
            doc
            for name in ("rbac.yaml", "deployment.yaml")
            for doc in _documents((MANIFESTS / name).read_text())
        ]
    )
    assert sorted(plain) == sorted(rendered)
    for key, obj in rendered.items():
        assert plain[key] == obj, (
            f"manifests/ and the chart differ for {key[0]} {key[1]}: change both "
            "(helm template coscheduler charts/coscheduler -n coscheduler-system)"
        )
    namespace = _documents((MANIFESTS / "namespace.yaml").read_text())[0]
    assert namespace["metadata"]["name"] == SYSTEM


# --- against the real API server --------------------------------------------------------------

SERVICE_MONITOR_STAND_IN: Json = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "servicemonitors.monitoring.coreos.com"},
    "spec": {
        "group": "monitoring.coreos.com",
        "scope": "Namespaced",
        "names": {
            "kind": "ServiceMonitor",
            "listKind": "ServiceMonitorList",
            "plural": "servicemonitors",
            "singular": "servicemonitor",
        },
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "x-kubernetes-preserve-unknown-fields": True,
                    }
                },
            }
        ],
    },
}
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


@pytest.fixture(scope="module")
def service_monitor_kind(cluster: Cluster) -> Iterator[None]:
    """A schemaless stand-in for the Prometheus Operator's CRD: the kind is served, no more.

    The dry run then checks that a ServiceMonitor is accepted as an object of
    that kind, not its fields (the real CRD is not reachable from here).
    """
    name = SERVICE_MONITOR_STAND_IN["metadata"]["name"]
    cluster.api.create(CRDS, SERVICE_MONITOR_STAND_IN)
    try:
        wait_for(
            lambda: cluster.api.get(f"{CRDS}/{name}"),
            lambda crd: any(
                c["type"] == "Established" and c["status"] == "True"
                for c in (crd.get("status") or {}).get("conditions") or []
            ),
            describe=f"CRD {name} to be Established",
        )
        yield
    finally:
        cluster.api.delete(f"{CRDS}/{name}")


@pytest.mark.version_sensitive
@pytest.mark.usefixtures("podgroup_crd", "service_monitor_kind")
@pytest.mark.parametrize("values", [None, NON_DEFAULT], ids=["defaults", "non-default"])
def test_rendering_passes_server_side_dry_run(
    helm: Helm, cluster: Cluster, namespace: str, values: Json | None
) -> None:
    rendered = helm.template_text(values, release="dry", namespace=namespace).stdout
    result = cluster.kubectl("apply", "--dry-run=server", "-f", "-", input=rendered)
    applied = [line for line in result.stdout.splitlines() if line.strip()]
    assert len(applied) == len(_documents(rendered)), result.stdout
    assert all(line.endswith("(server dry run)") for line in applied), result.stdout


@pytest.mark.version_sensitive
@pytest.mark.usefixtures("podgroup_crd")
def test_helm_install_and_uninstall(helm: Helm, cluster: Cluster, namespace: str) -> None:
    release = "inst"
    kubeconfig = f"--kubeconfig={cluster.kubeconfig}"
    installed = helm("install", release, str(CHART), "--namespace", namespace, kubeconfig)
    try:
        assert "STATUS: deployed" in installed.stdout, installed.stdout
        deployment = cluster.api.get(
            f"/apis/apps/v1/namespaces/{namespace}/deployments/{release}-coscheduler"
        )
        assert deployment["spec"]["replicas"] == 2
        cluster.api.get(f"/apis/rbac.authorization.k8s.io/v1/clusterroles/{release}-coscheduler")
        cluster.api.get(
            f"/apis/policy/v1/namespaces/{namespace}/poddisruptionbudgets/{release}-coscheduler"
        )
    finally:
        helm("uninstall", release, "--namespace", namespace, "--wait", kubeconfig)
    assert (
        cluster.api.get_or_none(
            f"/apis/rbac.authorization.k8s.io/v1/clusterroles/{release}-coscheduler"
        )
        is None
    )
