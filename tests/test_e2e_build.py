"""The recipe of the local control plane (e2e/versions.py, e2e/build.py), without Go or network.

A cold build proves the recipe against the module proxy; these pin what it
writes: each supported release's wrapper go.mod (with a staging module the
proxy lacks replaced by an earlier patch) and its native gang gates.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from e2e import build, versions

# The shape of the upstream go.mod of k8s.io/kubernetes v1.37.2, cut down.
UPSTREAM_GOMOD = """\
// This is a generated file. Do not edit directly.

module k8s.io/kubernetes

go 1.26.0

godebug default=go1.26

require (
\tk8s.io/api v0.0.0
\tk8s.io/client-go v0.0.0
)

replace (
\tk8s.io/api => ./staging/src/k8s.io/api
\tk8s.io/client-go => ./staging/src/k8s.io/client-go
\tk8s.io/sample-cli-plugin => ./staging/src/k8s.io/sample-cli-plugin
\tk8s.io/sample-controller => ./staging/src/k8s.io/sample-controller
)
"""

# What the proxy serves in this test: every module at v0.37.2 but the two samples.
UNSERVED = {("k8s.io/sample-cli-plugin", "v0.37.2"), ("k8s.io/sample-controller", "v0.37.2")}


def served_except_samples(module: str, version: str) -> bool:
    return (module, version) not in UNSERVED


def replaces(gomod: str) -> dict[str, str]:
    """``module => module version`` lines of a go.mod, as {module: version}."""
    found = re.findall(r"^\t(\S+) => (\S+) (\S+)$", gomod, re.M)
    assert all(source == target for source, target, _ in found), "each module replaced by itself"
    return {module: version for module, _, version in found}


def test_the_wrapper_pins_every_staging_module_at_the_release_s_version() -> None:
    gomod = build.kubernetes_wrapper_gomod(UPSTREAM_GOMOD, "v1.35.4")
    assert "require k8s.io/kubernetes v1.35.4" in gomod
    assert re.search(r"^go 1\.26\.0$", gomod, re.M)
    assert re.search(r"^godebug default=go1\.26$", gomod, re.M)
    assert set(replaces(gomod).values()) == {"v0.35.4"}
    assert len(replaces(gomod)) == 4


def test_a_module_the_proxy_lacks_takes_the_newest_served_patch_of_its_minor() -> None:
    modules = build.staging_modules(UPSTREAM_GOMOD)
    substitutes = build.unserved_substitutes(modules, "v0.37.2", served_except_samples)
    assert substitutes == {
        "k8s.io/sample-cli-plugin": "v0.37.1",
        "k8s.io/sample-controller": "v0.37.1",
    }
    gomod = build.kubernetes_wrapper_gomod(UPSTREAM_GOMOD, "v1.37.2", substitutes)
    assert replaces(gomod) == {
        "k8s.io/api": "v0.37.2",
        "k8s.io/client-go": "v0.37.2",
        "k8s.io/sample-cli-plugin": "v0.37.1",
        "k8s.io/sample-controller": "v0.37.1",
    }


def test_an_earlier_patch_is_skipped_when_it_is_not_served_either() -> None:
    def served(module: str, version: str) -> bool:
        return module != "k8s.io/sample-controller" or version == "v0.36.0"

    substitutes = build.unserved_substitutes(["k8s.io/sample-controller"], "v0.36.3", served)
    assert substitutes == {"k8s.io/sample-controller": "v0.36.0"}


def test_a_module_served_at_no_patch_of_the_minor_is_a_build_error_naming_it() -> None:
    with pytest.raises(build.BuildError, match=r"k8s\.io/sample-controller of v0\.37\.x"):
        build.unserved_substitutes(["k8s.io/sample-controller"], "v0.37.2", lambda m, v: False)


def test_a_go_mod_without_staging_replaces_is_refused() -> None:
    with pytest.raises(build.BuildError, match="staging"):
        build.staging_modules("module k8s.io/kubernetes\n\ngo 1.26.0\n")


@pytest.mark.parametrize(
    ("requested", "chosen"),
    [(None, "v1.37.2"), ("", "v1.37.2"), ("1.35", "v1.35.4"), ("v1.36.3", "v1.36.3"),
     (" 1.37 ", "v1.37.2")],
)  # fmt: skip
def test_the_release_is_chosen_by_minor_or_in_full(requested: str | None, chosen: str) -> None:
    assert versions.choose_kubernetes(requested) == chosen


@pytest.mark.parametrize("requested", ["1.34", "v1.35.3", "2.0", "latest"])
def test_an_unsupported_release_is_refused_with_the_supported_ones(requested: str) -> None:
    with pytest.raises(ValueError, match=r"v1\.35\.4, v1\.36\.3, v1\.37\.2"):
        versions.choose_kubernetes(requested)


def test_each_release_turns_on_the_gang_api_it_has() -> None:
    # GangScheduling was merged into GenericWorkload in 1.37: naming it there is a start-up error.
    assert "GangScheduling=true" in versions.native_gang_feature_gates("v1.35.4")
    assert "GangScheduling=true" in versions.native_gang_feature_gates("v1.36.3")
    assert "GangScheduling" not in versions.native_gang_feature_gates("v1.37.2")
    assert "CompositePodGroup=true" in versions.native_gang_feature_gates("v1.37.2")
    # The Job controller's Workloads make every Job a native gang: only when asked.
    assert "WorkloadWithJob" not in versions.native_gang_feature_gates("v1.37.2")
    assert "WorkloadWithJob=true" in versions.native_gang_feature_gates(
        "v1.36.3", job_workloads=True
    )
    with pytest.raises(ValueError, match=r"1\.36 on"):
        versions.native_gang_feature_gates("v1.35.4", job_workloads=True)
    assert versions.native_gang_runtime_config("v1.35.4") == "scheduling.k8s.io/v1alpha1=true"
    assert versions.native_gang_runtime_config("v1.36.3") == "scheduling.k8s.io/v1alpha2=true"
    assert versions.native_gang_runtime_config("v1.37.2") == (
        "scheduling.k8s.io/v1beta1=true,scheduling.k8s.io/v1alpha3=true"
    )


def test_make_test_runs_the_version_sensitive_tests_on_the_oldest_supported_release() -> None:
    makefile = (Path(__file__).resolve().parents[1] / "Makefile").read_text()
    oldest = re.search(r"^OLDEST_KUBERNETES := (\S+)$", makefile, re.M)
    assert oldest, "the Makefile names the oldest release CI tests"
    assert versions.choose_kubernetes(oldest.group(1)) == versions.SUPPORTED_KUBERNETES[0]
