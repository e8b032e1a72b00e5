"""The container image's recipe, checked without a container engine.

No Docker engine runs here, so the Dockerfile is linted with hadolint and
its install steps are replayed by hand: build the wheel, install it into a
fresh virtualenv, and run the entrypoint as an unprivileged user with no
writable home, as the image's read-only root filesystem would have it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import venv
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
NOBODY = 65534


def _tool(name: str) -> str:
    found = shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is not installed: it comes with the project's test extra")
    return found


def test_dockerfile_passes_hadolint() -> None:
    result = subprocess.run(
        [_tool("hadolint"), str(REPO / "Dockerfile")], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_dockerfile_runs_as_non_root_with_run_as_entrypoint() -> None:
    text = (REPO / "Dockerfile").read_text()
    assert "USER 65532:65532" in text
    assert 'ENTRYPOINT ["coscheduler"]' in text
    assert 'CMD ["run"]' in text


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.skipif(os.geteuid() != 0, reason="switching to an unprivileged user needs root")
def test_wheel_installs_and_runs_as_an_unprivileged_user(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    # pytest's own temporary root is private to root: use a directory that an
    # unprivileged user may traverse, as /usr/local is in the image.
    tmp_path = Path(tempfile.mkdtemp(prefix="coscheduler-wheel-"))
    tmp_path.chmod(0o755)
    try:
        _install_and_run(tmp_path)
    finally:
        shutil.rmtree(tmp_path, ignore_errors=True)


def _install_and_run(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--outdir", str(dist), str(REPO)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    (wheel,) = dist.glob("coscheduler-*.whl")
    shipped = set(zipfile.ZipFile(wheel).namelist())
    page = "coscheduler/dashboard/static/"
    for name in ("index.html", "dashboard.js", "vendor/uPlot.iife.min.js", "vendor/uPlot.LICENSE"):
        assert page + name in shipped, f"the wheel lacks the dashboard's {name}"
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    subprocess.run(
        [str(env_dir / "bin" / "pip"), "install", "--quiet", str(wheel)],
        check=True,
        capture_output=True,
        timeout=900,
    )
    for command in (["version"], ["run", "--help"]):
        result = subprocess.run(
            [
                "setpriv",
                f"--reuid={NOBODY}",
                f"--regid={NOBODY}",
                "--clear-groups",
                str(env_dir / "bin" / "coscheduler"),
                *command,
            ],
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
            env={"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", "PYTHONDONTWRITEBYTECODE": "1"},
        )
        assert result.returncode == 0, result.stderr
    assert (
        "coscheduler 0.1.0"
        in subprocess.run(
            [str(env_dir / "bin" / "coscheduler"), "version"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
