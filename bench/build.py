"""Build the benchmark's own peers from Go modules, once, into the e2e cache.

Two components, beside the control plane that ``e2e.build`` makes:

- **scheduler-plugins v0.34.7** (the reference): its ``cmd/scheduler`` (kube-scheduler
  with the Coscheduling plugin compiled in) and ``cmd/controller`` (its PodGroup status
  controller). v0.34.7 does not compile against Kubernetes 1.35 (the framework types
  moved), and 1.34.7, which it asks for, is not complete at the module proxy here, so a
  wrapper module pins ``k8s.io/kubernetes`` to v1.34.2 and every ``k8s.io/*`` module that
  scheduler-plugins itself replaces to v0.34.2. The replace list is read from the
  downloaded go.mod of scheduler-plugins, not hard-coded. Its CRDs are copied next to
  the binaries (module zips drop symlinks, so the real files under ``manifests/``).
- **the ceiling binder** (``bench/ceiling/main.go``): a client-go program that binds
  pending pods round-robin with no checks. Its cache key is a hash of its source, so an
  edit rebuilds it.

Both reuse e2e's cache layout (``<cache>/bin/<name>-<version>/``), atomic rename,
file lock and logs.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from e2e import build as e2e_build
from e2e import versions as e2e_versions

SCHEDULER_PLUGINS = "v0.34.7"
"""Release of ``sigs.k8s.io/scheduler-plugins`` (the reference coscheduling plugin)."""

REFERENCE_KUBERNETES = "v1.34.2"
"""The Kubernetes release the reference is compiled against (see the module docstring)."""

CEILING_SOURCE = Path(__file__).with_name("ceiling") / "main.go"
REFERENCE_CRDS = ("manifests/coscheduling/crd.yaml", "manifests/capacityscheduling/crd.yaml")

Reporter = Callable[[str], None]


def _ceiling_version() -> str:
    digest = hashlib.sha256(CEILING_SOURCE.read_bytes())
    digest.update(e2e_versions.KUBERNETES.encode())
    return "h" + digest.hexdigest()[:12]


REFERENCE = e2e_build.Component(
    name="scheduler-plugins",
    version=f"{SCHEDULER_PLUGINS}-k8s{REFERENCE_KUBERNETES}",
    binaries=("scheduler", "controller"),
)


def _crd_file(relative: str) -> str:
    """``manifests/coscheduling/crd.yaml`` -> ``coscheduling-crd.yaml``."""
    return f"{Path(relative).parent.name}-crd.yaml"


def reference_podgroup_crd() -> Path:
    """scheduler-plugins' own ``scheduling.x-k8s.io`` PodGroup CRD, where its build copies it.

    It exists once the reference is built; tests hold our copy of the shape to it.
    """
    return REFERENCE.directory / _crd_file(REFERENCE_CRDS[0])


def ceiling_component() -> e2e_build.Component:
    return e2e_build.Component(name="ceiling", version=_ceiling_version(), binaries=("ceiling",))


@dataclass(frozen=True)
class PeerBinaries:
    """Paths of everything the peers run, the control plane's included."""

    control_plane: e2e_build.Binaries
    reference_scheduler: Path
    reference_controller: Path
    reference_crds: tuple[Path, ...]
    ceiling: Path


def ensure_built(
    report: Reporter = e2e_build.report_to_stderr, peers: Iterable[str] | None = None
) -> tuple[PeerBinaries, dict[str, float]]:
    """Build what is missing (of ``peers``' binaries; None: every peer's); return the paths
    and the seconds each build took (0 if cached)."""
    control_plane = e2e_build.ensure_built(report)
    timings: dict[str, float] = {}
    ceiling = ceiling_component()
    wanted = None if peers is None else set(peers)
    for component, builder, peer in (
        (REFERENCE, _build_reference, "reference"),
        (ceiling, _build_ceiling, "ceiling"),
    ):
        if wanted is not None and peer not in wanted:
            continue
        if component.is_complete():
            timings[component.name] = 0.0
            continue
        go = e2e_build._find_go()
        bin_root = e2e_build.cache_root() / "bin"
        bin_root.mkdir(parents=True, exist_ok=True)
        with e2e_build._exclusive_lock(bin_root / ".lock", report):
            if component.is_complete():
                timings[component.name] = 0.0
                continue
            started = time.monotonic()
            _build(component, builder, go, report)
            timings[component.name] = round(time.monotonic() - started, 1)
    ref = REFERENCE.directory
    return (
        PeerBinaries(
            control_plane=control_plane,
            reference_scheduler=ref / "scheduler",
            reference_controller=ref / "controller",
            reference_crds=tuple(ref / _crd_file(crd) for crd in REFERENCE_CRDS),
            ceiling=ceiling.directory / "ceiling",
        ),
        timings,
    )


def _build(
    component: e2e_build.Component,
    builder: Callable[[e2e_build._GoRunner, Path], None],
    go: str,
    report: Reporter,
) -> None:
    logs = e2e_build.cache_root() / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    log = logs / f"{component.name}-{component.version}.log"
    log.write_text("")
    report(f"{component.name} {component.version}: building (log: {log})")
    started = time.monotonic()
    bin_root = component.directory.parent
    staging = Path(tempfile.mkdtemp(prefix=f".{component.directory.name}.", dir=bin_root))
    work = Path(tempfile.mkdtemp(prefix=f"{component.name}-", dir=e2e_build._work_root()))
    try:
        runner = e2e_build._GoRunner(go=go, work=work, log=log, report=report, label=component.name)
        builder(runner, staging)
        absent = [b for b in component.binaries if not (staging / b).is_file()]
        if absent:
            raise e2e_build.BuildError(
                f"{component.name}: the build produced no {', '.join(absent)}"
            )
        shutil.rmtree(component.directory, ignore_errors=True)
        staging.rename(component.directory)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)
    report(f"{component.name} {component.version}: built in {e2e_build._elapsed(started)}")


def reference_wrapper_gomod(upstream_gomod: str) -> str:
    """The go.mod that builds scheduler-plugins against ``REFERENCE_KUBERNETES``."""
    staging = e2e_versions.staging_version(REFERENCE_KUBERNETES)
    replaced = set(re.findall(r"^\s*(?:replace\s+)?(k8s\.io/[\w.\-/]+)\s+=>", upstream_gomod, re.M))
    replaced.discard("k8s.io/kubernetes")
    replaced.discard("k8s.io/legacy-cloud-providers")  # not served for 0.34, not imported
    if not replaced:
        raise e2e_build.BuildError("found no k8s.io replace lines in scheduler-plugins' go.mod")
    go_line = re.search(r"^go\s+(\S+)\s*$", upstream_gomod, re.M)
    lines = [
        "module coscheduler.local/scheduler-plugins-build",
        "",
        f"go {go_line.group(1) if go_line else '1.24.0'}",
        "",
        f"require sigs.k8s.io/scheduler-plugins {SCHEDULER_PLUGINS}",
        "",
        "replace (",
        f"\tk8s.io/kubernetes => k8s.io/kubernetes {REFERENCE_KUBERNETES}",
        *(f"\t{module} => {module} {staging}" for module in sorted(replaced)),
        ")",
        "",
    ]
    return "\n".join(lines)


def _build_reference(go: e2e_build._GoRunner, out: Path) -> None:
    module = "sigs.k8s.io/scheduler-plugins"
    go.run(
        "download scheduler-plugins", "mod", "download", "-json", f"{module}@{SCHEDULER_PLUGINS}"
    )
    info = json.loads(go.last_output)
    (go.work / "go.mod").write_text(reference_wrapper_gomod(Path(info["GoMod"]).read_text()))
    commands = [f"{module}/cmd/scheduler", f"{module}/cmd/controller"]
    imports = "\n".join(f'\t_ "{package}"' for package in commands)
    (go.work / "tools.go").write_text(
        f"//go:build tools\n\npackage tools\n\nimport (\n{imports}\n)\n"
    )
    go.run("go mod tidy (downloads the dependencies)", "mod", "tidy")
    ldflags = "-s -w " + " ".join(e2e_build._version_ldflags(REFERENCE_KUBERNETES))
    for binary, package in zip(("scheduler", "controller"), commands, strict=True):
        go.run(
            f"go build {binary}",
            "build", "-trimpath", "-ldflags", ldflags, "-o", str(out / binary), package,
        )  # fmt: skip
    source = Path(info["Dir"]) if info.get("Dir") else None
    if source is None or not source.is_dir():
        go.run(
            "locate the module source", "mod", "download", "-json", f"{module}@{SCHEDULER_PLUGINS}"
        )
        source = Path(json.loads(go.last_output)["Dir"])
    for crd in REFERENCE_CRDS:
        shutil.copyfile(source / crd, out / _crd_file(crd))


def _build_ceiling(go: e2e_build._GoRunner, out: Path) -> None:
    client = e2e_versions.staging_version()
    shutil.copyfile(CEILING_SOURCE, go.work / "main.go")
    go.run("go mod init", "mod", "init", "coscheduler.local/ceiling")
    go.run(
        "go get client-go",
        "get",
        f"k8s.io/client-go@{client}",
        f"k8s.io/api@{client}",
        f"k8s.io/apimachinery@{client}",
    )
    go.run("go mod tidy", "mod", "tidy")
    go.run(
        "go build ceiling",
        "build",
        "-trimpath",
        "-ldflags",
        "-s -w",
        "-o",
        str(out / "ceiling"),
        ".",
    )


def main() -> int:
    built, timings = ensure_built()
    for key, value in vars(built).items():
        print(f"{key}: {value}")
    print(json.dumps({"build_seconds": timings}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
