"""The native peers write the gang API of the running release; the versus report's figures."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from bench import peers, versus_report
from bench.peers import Gang
from e2e import versions


@pytest.fixture
def release(monkeypatch: pytest.MonkeyPatch) -> Callable[[int], None]:
    def use(minor: int) -> None:
        monkeypatch.setattr(versions, "minor", lambda kubernetes=None: minor)

    return use


def _pod() -> dict[str, Any]:
    return {"metadata": {"labels": {}}, "spec": {}}


def test_native_on_137_writes_a_v1beta1_podgroup_with_priority_topology(
    release: Callable[[int], None],
) -> None:
    release(37)
    gang = Gang("g", 4, 3, priority_class="high", topology_key="rack")
    path, body = peers.Native().group_object(gang) or ("", {})
    assert path == "/apis/scheduling.k8s.io/v1beta1/namespaces/{ns}/podgroups"
    assert body["spec"] == {
        "schedulingPolicy": {"gang": {"minCount": 3}},
        "priorityClassName": "high",
        "schedulingConstraints": {"topology": [{"key": "rack"}]},
    }
    pod = _pod()
    peers.Native().decorate_pod(pod, gang)
    assert pod["spec"]["schedulingGroup"] == {"podGroupName": "g"}


def test_native_all_sets_disruption_mode_all_and_needs_137(release: Callable[[int], None]) -> None:
    release(37)
    _, body = peers.NativeAll().group_object(Gang("g", 2, 2)) or ("", {})
    assert body["spec"]["disruptionMode"] == {"all": {}}
    release(36)
    with pytest.raises(peers.UnsupportedPeer, match=r"1\.37"):
        peers.NativeAll()


def test_native_on_136_writes_v1alpha2_and_on_135_a_workload(
    release: Callable[[int], None],
) -> None:
    release(36)
    path, _ = peers.Native().group_object(Gang("g", 2, 2)) or ("", {})
    assert "/v1alpha2/" in path
    release(35)
    path, _ = peers.Native().group_object(Gang("g", 2, 2)) or ("", {})
    assert path.endswith("/v1alpha1/namespaces/{ns}/workloads")
    pod = _pod()
    peers.Native().decorate_pod(pod, Gang("g", 2, 2))
    assert pod["spec"]["workloadRef"]["name"] == "g"
    assert peers.native_group_collection() == "/apis/scheduling.k8s.io/v1alpha1/workloads"


def test_ours_workload_is_refused_after_135(release: Callable[[int], None]) -> None:
    release(37)
    with pytest.raises(peers.UnsupportedPeer, match=r"COSCHEDULER_KUBERNETES=1\.35"):
        peers.OursWorkload()


def test_a_lone_pod_has_no_native_group(release: Callable[[int], None]) -> None:
    release(37)
    assert peers.Native().group_object(Gang("g", 1, 1)) is None


def test_versus_report_medians_and_ratios() -> None:
    trials = [
        {"workload": "throughput", "label": "x", "peer": peer, "ok": True,
         "figures": {"pods_per_s_from_start": rate, "gangs_partial_beyond_burst": partial}}
        for peer, rate, partial in (("ours", 100, 0), ("ours", 120, 0), ("native", 50, 2))
    ]  # fmt: skip
    text = "\n".join(versus_report.tables(trials))
    assert "| pods/s from start | 110 (100-120) | 50 | 2.20x |" in text
    assert "| gangs partial beyond a bind burst | 0 | 2 | ours 0 |" in text
