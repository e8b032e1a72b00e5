"""Build the control-plane binaries from their Go modules, once, into a cache.

Why build at all: this machine has no container engine and cannot download
prebuilt binaries, but it has Go and reaches the Go module proxy. So every
binary is compiled from its pinned module (``e2e/versions.py``) and cached
outside the repository under ``<cache>/bin/<component>-<version>/``, where
``<cache>`` is ``$COSCHEDULER_CACHE``, else ``$XDG_CACHE_HOME/coscheduler``,
else ``~/.cache/coscheduler``.

Rules:
1. A component directory exists only when complete: binaries are built into a
   hidden temporary directory next to it and renamed into place, so an
   interrupted build never leaves a half binary that passes for good.
2. One builder at a time: a file lock in the cache serialises concurrent
   builders; the second one finds the work done.
3. ``k8s.io/kubernetes`` cannot be ``go install``-ed (its go.mod replaces the
   staging modules with local paths, which a dependency's replaces ignore), so
   a wrapper module is generated whose ``replace`` lines come from the
   downloaded go.mod of the release itself, never from a hard-coded list.
4. What only one test needs is built lazily, when that test first asks
   (``ensure_training_operator``), so that a cold ``make cluster-build``
   builds the control plane and nothing more.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from e2e import versions
from e2e.processes import interrupt_on_sigterm, parent_death_signal

PROGRESS_INTERVAL_SECONDS = 30.0
"""How often a long build step reports that it is still running."""

Reporter = Callable[[str], None]


class BuildError(RuntimeError):
    """A binary could not be built; the message says what to do about it."""


def report_to_stderr(message: str) -> None:
    """Default progress reporter: one line per event on stderr, flushed at once."""
    print(f"[e2e build] {message}", file=sys.stderr, flush=True)


def cache_root() -> Path:
    """Return the cache directory, honouring ``COSCHEDULER_CACHE`` and ``XDG_CACHE_HOME``."""
    override = os.environ.get("COSCHEDULER_CACHE")
    if override:
        return Path(override).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "coscheduler"


@dataclass(frozen=True)
class Component:
    """One unit of building: a module at a version producing some binaries."""

    name: str
    version: str
    binaries: tuple[str, ...]
    files: tuple[str, ...] = ()
    """Other files taken from the module (manifests), kept next to the binaries."""

    @property
    def directory(self) -> Path:
        """Where the finished binaries live."""
        return cache_root() / "bin" / f"{self.name}-{self.version}"

    def is_complete(self) -> bool:
        """True when every binary of this component is present and executable."""
        return all(os.access(self.directory / binary, os.X_OK) for binary in self.binaries) and all(
            (self.directory / file).is_file() for file in self.files
        )


KUBERNETES = Component(
    name="kubernetes",
    version=versions.KUBERNETES,
    binaries=("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl"),
)
ETCD = Component(name="etcd", version=versions.ETCD, binaries=("etcd",))
KWOK = Component(name="kwok", version=versions.KWOK, binaries=("kwok",))
HELM = Component(name="helm", version=versions.HELM, binaries=("helm",))
COMPONENTS: tuple[Component, ...] = (KUBERNETES, ETCD, KWOK, HELM)
"""What ``ensure_built`` builds: the control plane and its tools."""

PYTORCHJOB_CRD = "kubeflow.org_pytorchjobs.yaml"
TRAINING_OPERATOR = Component(
    name="training-operator",
    version=versions.TRAINING_OPERATOR,
    binaries=("training-operator",),
    files=(PYTORCHJOB_CRD,),
)
"""Built on demand only (``ensure_training_operator``): one test file runs it."""

KUEUE_CRDS = "kueue-crds.yaml"
KUEUE_WEBHOOKS = "kueue-webhooks.yaml"
KUEUE = Component(
    name="kueue",
    version=versions.KUEUE,
    binaries=("kueue",),
    files=(KUEUE_CRDS, KUEUE_WEBHOOKS),
)
"""Built on demand only (``ensure_kueue``): the Kueue bench peer and its smoke test."""

KUBERAY_CRDS = "kuberay-crds.yaml"
KUBERAY = Component(
    name="kuberay",
    version=versions.KUBERAY,
    binaries=("ray-operator",),
    files=(KUBERAY_CRDS,),
)
"""Built on demand only (``ensure_kuberay``): one test file runs it."""


@dataclass(frozen=True)
class Binaries:
    """Paths of the built binaries, as the launcher needs them."""

    etcd: Path
    kube_apiserver: Path
    kube_controller_manager: Path
    kube_scheduler: Path
    kubectl: Path
    kwok: Path
    helm: Path


def binaries() -> Binaries:
    """Return the cached binaries, or fail saying how to build them."""
    missing = [c for c in COMPONENTS if not c.is_complete()]
    if missing:
        names = ", ".join(f"{c.name} {c.version}" for c in missing)
        raise BuildError(
            f"not built yet: {names} (expected under {cache_root() / 'bin'}); "
            "run `python -m e2e.cluster build`"
        )
    k8s = KUBERNETES.directory
    return Binaries(
        etcd=ETCD.directory / "etcd",
        kube_apiserver=k8s / "kube-apiserver",
        kube_controller_manager=k8s / "kube-controller-manager",
        kube_scheduler=k8s / "kube-scheduler",
        kubectl=k8s / "kubectl",
        kwok=KWOK.directory / "kwok",
        helm=HELM.directory / "helm",
    )


def ensure_built(report: Reporter = report_to_stderr) -> Binaries:
    """Build whatever is missing from the cache and return the paths of all binaries."""
    _ensure(COMPONENTS, report)
    return binaries()


@dataclass(frozen=True)
class TrainingOperatorFiles:
    """The Kubeflow training operator's binary and the CRD of the job kind the tests use."""

    binary: Path
    pytorchjob_crd: Path


def ensure_training_operator(report: Reporter = report_to_stderr) -> TrainingOperatorFiles:
    """Build the training operator if it is not cached yet (minutes when cold) and return it."""
    _ensure((TRAINING_OPERATOR,), report)
    return TrainingOperatorFiles(
        binary=TRAINING_OPERATOR.directory / "training-operator",
        pytorchjob_crd=TRAINING_OPERATOR.directory / PYTORCHJOB_CRD,
    )


@dataclass(frozen=True)
class KueueFiles:
    """Kueue's manager binary, its CRDs and its webhook configurations, from one module."""

    binary: Path
    crds: Path
    webhooks: Path


def ensure_kueue(report: Reporter = report_to_stderr) -> KueueFiles:
    """Build Kueue if it is not cached yet (minutes when cold) and return its files."""
    _ensure((KUEUE,), report)
    return KueueFiles(
        binary=KUEUE.directory / "kueue",
        crds=KUEUE.directory / KUEUE_CRDS,
        webhooks=KUEUE.directory / KUEUE_WEBHOOKS,
    )


@dataclass(frozen=True)
class KubeRayFiles:
    """KubeRay's ray-operator binary and its CRDs (RayCluster, RayJob, RayService)."""

    binary: Path
    crds: Path


def ensure_kuberay(report: Reporter = report_to_stderr) -> KubeRayFiles:
    """Build KubeRay's ray-operator if it is not cached yet (minutes when cold)."""
    _ensure((KUBERAY,), report)
    return KubeRayFiles(
        binary=KUBERAY.directory / "ray-operator", crds=KUBERAY.directory / KUBERAY_CRDS
    )


def _ensure(components: Sequence[Component], report: Reporter) -> None:
    """Build the missing ones of ``components``, one builder at a time on this machine."""
    if all(c.is_complete() for c in components):
        return
    go = _find_go()
    bin_root = cache_root() / "bin"
    bin_root.mkdir(parents=True, exist_ok=True)
    with _exclusive_lock(bin_root / ".lock", report):
        _remove_leftovers(bin_root)
        started = time.monotonic()
        for component in components:
            if component.is_complete():
                report(f"{component.name} {component.version}: cached in {component.directory}")
                continue
            _build_component(component, go, report)
        report(f"all binaries ready in {_elapsed(started)}")


# --- building one component -------------------------------------------------------------------


def _build_component(component: Component, go: str, report: Reporter) -> None:
    """Build one component into a temporary directory, then rename it into place."""
    builders: dict[str, Callable[[_GoRunner, Path], None]] = {
        KUBERNETES.name: _build_kubernetes,
        ETCD.name: _build_etcd,
        KWOK.name: _build_kwok,
        HELM.name: _build_helm,
        TRAINING_OPERATOR.name: _build_training_operator,
        KUEUE.name: _build_kueue,
        KUBERAY.name: _build_kuberay,
    }
    logs = cache_root() / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    log = logs / f"{component.name}-{component.version}.log"
    log.write_text("")
    report(f"{component.name} {component.version}: building (log: {log})")
    started = time.monotonic()
    bin_root = component.directory.parent
    staging = Path(tempfile.mkdtemp(prefix=f".{component.directory.name}.", dir=bin_root))
    work = Path(tempfile.mkdtemp(prefix=f"{component.name}-", dir=_work_root()))
    try:
        runner = _GoRunner(go=go, work=work, log=log, report=report, label=component.name)
        builders[component.name](runner, staging)
        absent = [b for b in (*component.binaries, *component.files) if not (staging / b).is_file()]
        if absent:
            raise BuildError(f"{component.name}: the build produced no {', '.join(absent)}")
        shutil.rmtree(component.directory, ignore_errors=True)
        staging.rename(component.directory)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)
    report(f"{component.name} {component.version}: built in {_elapsed(started)}")


def _build_kubernetes(go: _GoRunner, out: Path) -> None:
    """Build kube-apiserver, kube-controller-manager, kube-scheduler and kubectl."""
    version = versions.KUBERNETES
    go.run("download k8s.io/kubernetes", "mod", "download", "-json", f"k8s.io/kubernetes@{version}")
    info = json.loads(go.last_output)
    upstream = Path(info["GoMod"]).read_text()
    go.require_go_version(_go_directive(upstream))
    staging = versions.staging_version(version)
    substitutes = unserved_substitutes(
        staging_modules(upstream), staging, lambda module, at: _served(go, module, at)
    )
    for module, served in substitutes.items():
        go.report(
            f"kubernetes: {module} {staging} is not served; using {served} (no binary imports it)"
        )
    (go.work / "go.mod").write_text(kubernetes_wrapper_gomod(upstream, version, substitutes))
    commands = [f"k8s.io/kubernetes/cmd/{binary}" for binary in KUBERNETES.binaries]
    imports = "\n".join(f'\t_ "{package}"' for package in commands)
    (go.work / "tools.go").write_text(
        f"//go:build tools\n\npackage tools\n\nimport (\n{imports}\n)\n"
    )
    go.run("go mod tidy (downloads the dependencies)", "mod", "tidy")
    ldflags = "-s -w " + " ".join(_version_ldflags(version))
    for binary, package in zip(KUBERNETES.binaries, commands, strict=True):
        go.run(
            f"go build {binary}",
            "build", "-trimpath", "-tags", "selinux,notest", "-ldflags", ldflags,
            "-o", str(out / binary), package,
        )  # fmt: skip


def _build_etcd(go: _GoRunner, out: Path) -> None:
    """Build etcd through a wrapper module (its go.mod has replaces, so no ``go install``)."""
    go.run("go mod init", "mod", "init", "coscheduler.local/etcd-build")
    go.run("go get etcd server", "get", f"go.etcd.io/etcd/server/v3@{versions.ETCD}")
    go.run(
        "go build etcd",
        "build", "-trimpath", "-ldflags", "-s -w", "-o", str(out / "etcd"),
        "go.etcd.io/etcd/server/v3",
    )  # fmt: skip


def _build_kwok(go: _GoRunner, out: Path) -> None:
    """Install kwok straight from its module: it has no replace directives."""
    go.run(
        "go install kwok",
        "install", "-trimpath", "-ldflags", "-s -w", f"sigs.k8s.io/kwok/cmd/kwok@{versions.KWOK}",
        env={"GOBIN": str(out)},
    )  # fmt: skip


def _build_helm(go: _GoRunner, out: Path) -> None:
    """Install helm from its module (no replace directives), with upstream's version ldflags."""
    module = f"helm.sh/helm/v3@{versions.HELM}"
    go.run("download helm", "mod", "download", "-json", module)
    gomod = Path(json.loads(go.last_output)["GoMod"]).read_text()
    go.require_go_version(_go_directive(gomod))
    ldflags = "-s -w " + " ".join(helm_ldflags(versions.HELM, gomod))
    go.run(
        "go install helm",
        "install", "-trimpath", "-ldflags", ldflags, f"helm.sh/helm/v3/cmd/helm@{versions.HELM}",
        env={"GOBIN": str(out)},
    )  # fmt: skip


def _build_training_operator(go: _GoRunner, out: Path) -> None:
    """Install the operator from its module (no replace directives) and keep its PyTorchJob CRD.

    The CRD comes from the same module's ``manifests/base/crds``, so the
    schema the API server enforces is the one this operator was released with.
    """
    version = versions.TRAINING_OPERATOR
    module = "github.com/kubeflow/training-operator"
    go.run("download training-operator", "mod", "download", "-json", f"{module}@{version}")
    info = json.loads(go.last_output)
    go.require_go_version(_go_directive(Path(info["GoMod"]).read_text()))
    go.run(
        "go install training-operator",
        "install", "-trimpath", "-ldflags", "-s -w", f"{module}/cmd/training-operator.v1@{version}",
        env={"GOBIN": str(out)},
    )  # fmt: skip
    (out / "training-operator.v1").rename(out / "training-operator")
    crd = Path(info["Dir"]) / "manifests" / "base" / "crds" / PYTORCHJOB_CRD
    shutil.copyfile(crd, out / PYTORCHJOB_CRD)


def _build_kueue(go: _GoRunner, out: Path) -> None:
    """Install Kueue's manager from its module (no replace directives), at low priority.

    Its CRDs (``config/components/crd/bases``, one file) and webhook configurations
    (``config/components/webhook/manifests.yaml``) come from the same module, so the
    schemas and paths match the binary. The compile is ``nice``: the machine is shared.
    """
    version = versions.KUEUE
    module = "sigs.k8s.io/kueue"
    go.run("download kueue", "mod", "download", "-json", f"{module}@{version}")
    info = json.loads(go.last_output)
    go.require_go_version(_go_directive(Path(info["GoMod"]).read_text()))
    ldflags = f"-s -w -X {module}/pkg/version.GitVersion={version}"
    _niced(go).run(
        "go install kueue",
        "install", "-trimpath", "-ldflags", ldflags, f"{module}/cmd/kueue@{version}",
        env={"GOBIN": str(out)},
    )  # fmt: skip
    source = Path(info["Dir"]) / "config" / "components"
    crds = sorted((source / "crd" / "bases").glob("*.yaml"))
    (out / KUEUE_CRDS).write_text("---\n".join(c.read_text() for c in crds))
    shutil.copyfile(source / "webhook" / "manifests.yaml", out / KUEUE_WEBHOOKS)


def _build_kuberay(go: _GoRunner, out: Path) -> None:
    """Install the ray-operator from its module (no replace directives), at low priority;
    its three CRDs (``config/crd/bases``) in one file: the controllers watch all three."""
    version = versions.KUBERAY
    module = "github.com/ray-project/kuberay/ray-operator"
    go.run("download ray-operator", "mod", "download", "-json", f"{module}@{version}")
    info = json.loads(go.last_output)
    go.require_go_version(_go_directive(Path(info["GoMod"]).read_text()))
    _niced(go).run(
        "go install ray-operator",
        "install", "-trimpath", "-ldflags", "-s -w", f"{module}@{version}",
        env={"GOBIN": str(out)},
    )  # fmt: skip
    crds = sorted((Path(info["Dir"]) / "config" / "crd" / "bases").glob("*.yaml"))
    (out / KUBERAY_CRDS).write_text("---\n".join(c.read_text() for c in crds))


def _niced(go: _GoRunner) -> _GoRunner:
    """The same runner with ``go`` under ``nice``: a build beside tests on shared cores."""
    nice = go.work / "nice-go"
    nice.write_text(f'#!/bin/sh\nexec nice -n 10 "{go.go}" "$@"\n')
    nice.chmod(0o755)
    return dataclasses.replace(go, go=str(nice))


def helm_ldflags(version: str, gomod: str) -> list[str]:
    """``-X`` flags as helm's own Makefile sets them.

    Without them ``helm version`` says ``v3.22`` with no patch, and ``helm
    template`` / ``helm lint`` assume an old Kubernetes for
    ``.Capabilities.KubeVersion`` and for deprecation checks; the Kubernetes
    version is the one of the ``k8s.io/client-go`` helm is built with
    (``v0.37.0`` -> 1.37), read from the release's go.mod, as its Makefile does.
    """
    match = re.search(r"^\s*k8s\.io/client-go\s+v0\.(\d+)\.\d+", gomod, re.M)
    if not match:
        raise BuildError("the go.mod of helm.sh/helm/v3 does not require k8s.io/client-go v0.X.Y")
    minor = match.group(1)
    flags = [
        f"-X helm.sh/helm/v3/internal/version.version={version}",
        "-X helm.sh/helm/v3/internal/version.gitTreeState=clean",
    ]
    for package in ("helm.sh/helm/v3/pkg/lint/rules", "helm.sh/helm/v3/pkg/chartutil"):
        flags += [f"-X {package}.k8sVersionMajor=1", f"-X {package}.k8sVersionMinor={minor}"]
    return flags


def staging_modules(upstream_gomod: str) -> list[str]:
    """The ``k8s.io/X`` modules the upstream go.mod replaces with ``./staging/...``."""
    modules = re.findall(r"^\s*(k8s\.io/[\w.\-/]+)\s+=>\s+\./staging/", upstream_gomod, re.M)
    if not modules:
        raise BuildError("found no staging replace lines in the go.mod of k8s.io/kubernetes")
    return sorted(set(modules))


def kubernetes_wrapper_gomod(
    upstream_gomod: str, version: str, substitutes: Mapping[str, str] | None = None
) -> str:
    """Write the go.mod of a module that builds ``k8s.io/kubernetes`` at ``version``.

    Every ``k8s.io/X => ./staging/src/k8s.io/X`` replace of the upstream go.mod
    becomes ``k8s.io/X => k8s.io/X <staging version>`` (or the version
    ``substitutes`` gives for a module the proxy lacks); the ``go`` and
    ``godebug`` directives are copied so the binaries behave as upstream's do.
    """
    staging = versions.staging_version(version)
    chosen = dict(substitutes or {})
    modules = staging_modules(upstream_gomod)
    lines = [
        "module coscheduler.local/kubernetes-build",
        "",
        f"go {_go_directive(upstream_gomod)}",
        "",
        *_godebug_block(upstream_gomod),
        f"require k8s.io/kubernetes {version}",
        "",
        "replace (",
        *(f"\t{module} => {module} {chosen.get(module, staging)}" for module in modules),
        ")",
        "",
    ]
    return "\n".join(lines)


def _served(go: _GoRunner, module: str, version: str) -> bool:
    """Whether the module proxy serves ``module@version`` (a download that reports no error)."""
    result = subprocess.run(
        [go.go, "mod", "download", "-json", f"{module}@{version}"],
        cwd=go.work, env=go.environment(), capture_output=True, text=True, check=False,
    )  # fmt: skip
    return result.returncode == 0 and '"Error"' not in result.stdout


def unserved_substitutes(
    modules: Sequence[str], staging: str, served: Callable[[str, str], bool]
) -> dict[str, str]:
    """For each module not served at ``staging``, the newest earlier patch of its minor that is.

    ``served(module, version)`` asks the module proxy. A module served at no
    patch of the minor up to ``staging`` is a BuildError naming it.
    """
    major_minor, _, patch = staging.rpartition(".")
    chosen: dict[str, str] = {}
    for module in modules:
        if served(module, staging):
            continue
        earlier = (f"{major_minor}.{p}" for p in range(int(patch) - 1, -1, -1))
        found = next((candidate for candidate in earlier if served(module, candidate)), None)
        if found is None:
            raise BuildError(
                f"the module proxy serves no {module} of {major_minor}.x at or below {staging}"
            )
        chosen[module] = found
    return chosen


def _go_directive(gomod: str) -> str:
    match = re.search(r"^go\s+(\S+)\s*$", gomod, re.M)
    if not match:
        raise BuildError("a downloaded go.mod has no `go` directive")
    return match.group(1)


def _godebug_block(gomod: str) -> list[str]:
    """Return the ``godebug`` directive (single line or block) of a go.mod, with a blank after."""
    block = re.search(r"^godebug\s*\(.*?^\)", gomod, re.M | re.S)
    if block:
        return [block.group(0), ""]
    single = re.findall(r"^godebug\s+.+$", gomod, re.M)
    return [*single, ""] if single else []


def _version_ldflags(version: str) -> list[str]:
    """``-X`` flags so that servers and kubectl report the real version (else v0.0.0-master)."""
    major, minor, _ = version.removeprefix("v").split(".")
    values = {
        "gitVersion": version,
        "gitMajor": major,
        "gitMinor": minor,
        "gitTreeState": "clean",
        "buildDate": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    packages = ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version")
    return [f"-X {package}.{key}={value}" for package in packages for key, value in values.items()]


# --- running go -------------------------------------------------------------------------------


@dataclass
class _GoRunner:
    """Runs ``go`` commands in a work directory, logging everything, reporting progress."""

    go: str
    work: Path
    log: Path
    report: Reporter
    label: str
    last_output: str = ""

    def environment(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        env = dict(os.environ)
        env.update({"GOTOOLCHAIN": "local", "CGO_ENABLED": "0"})
        env.update(extra or {})
        return env

    def run(self, step: str, *args: str, env: dict[str, str] | None = None) -> None:
        """Run ``go ARGS`` in the work dir; stdout is kept, stderr goes to the log."""
        self.report(f"{self.label}: {step} ...")
        started = time.monotonic()
        with self.log.open("a") as log:
            log.write(f"\n$ go {' '.join(args)}\n")
            log.flush()
            process = subprocess.Popen(
                [self.go, *args],
                cwd=self.work,
                env=self.environment(env),
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
                preexec_fn=parent_death_signal(),
            )
            try:
                with _ticker(lambda: self.report(f"{self.label}: {step} ... {_elapsed(started)}")):
                    stdout, _ = process.communicate()
            except BaseException:
                # Interrupted: stop go before the staging directory is removed under it.
                process.kill()
                process.wait()
                raise
            log.write(stdout)
        self.last_output = stdout
        if process.returncode != 0:
            raise BuildError(
                f"{self.label}: `go {' '.join(args)}` failed (exit {process.returncode}); "
                f"last lines of {self.log}:\n{_tail(self.log)}"
            )
        self.report(f"{self.label}: {step} done in {_elapsed(started)}")

    def require_go_version(self, required: str) -> None:
        """Fail early, in words, when the local Go is older than the module needs."""
        output = subprocess.run(
            [self.go, "env", "GOVERSION"], capture_output=True, text=True, check=True
        ).stdout.strip()
        if _version_tuple(output.removeprefix("go")) < _version_tuple(required):
            raise BuildError(
                f"{self.label} needs Go {required} or newer, but `go` is {output}; "
                "install a newer Go (GOTOOLCHAIN=local forbids downloading one)"
            )


def _find_go() -> str:
    go = shutil.which("go")
    if go is None:
        raise BuildError(
            "go not found: the local control plane is built from Go modules; "
            "install Go 1.25 or newer and put it on PATH"
        )
    return go


def _work_root() -> Path:
    root = cache_root() / "work"
    root.mkdir(parents=True, exist_ok=True)
    return root


def _remove_leftovers(bin_root: Path) -> None:
    """Delete half-built directories left by an interrupted build (they start with a dot)."""
    for leftover in bin_root.glob(".*-v*.*"):
        if leftover.is_dir():
            shutil.rmtree(leftover, ignore_errors=True)
    shutil.rmtree(cache_root() / "work", ignore_errors=True)


@contextlib.contextmanager
def _exclusive_lock(path: Path, report: Reporter) -> Iterator[None]:
    with path.open("w") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            report("another build is running; waiting for it to finish")
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@contextlib.contextmanager
def _ticker(tick: Callable[[], None]) -> Iterator[None]:
    """Call ``tick`` every PROGRESS_INTERVAL_SECONDS while the body runs."""
    stop = threading.Event()

    def loop() -> None:
        while not stop.wait(PROGRESS_INTERVAL_SECONDS):
            tick()

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def _elapsed(started: float) -> str:
    seconds = int(time.monotonic() - started)
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


def _tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def _version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", version)[:3])


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m e2e.build``: build everything (the same as ``python -m e2e.cluster build``)."""
    del argv
    interrupt_on_sigterm()
    try:
        built = ensure_built()
    except BuildError as error:
        report_to_stderr(f"error: {error}")
        return 1
    except KeyboardInterrupt:
        report_to_stderr("interrupted; nothing half-built was kept")
        return 130
    for path in vars(built).values():
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
