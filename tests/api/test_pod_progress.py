"""api/pod.py: a pod's progress (bound, running) is read alone only when nothing else changed."""

from __future__ import annotations

import copy
from collections.abc import Callable
from types import MappingProxyType
from typing import Any

import pytest

from coscheduler.api.pod import PodInfo, PodParseError, progress_fingerprint
from tests.builders import pod_object

Raw = dict[str, Any]


def _bound(raw: Raw) -> None:
    raw["spec"]["nodeName"] = "n1"
    raw["status"]["conditions"] = [{"type": "PodScheduled", "status": "True"}]
    raw["metadata"]["resourceVersion"] = "2"


def _running(raw: Raw) -> None:
    _bound(raw)
    raw["status"].update(
        phase="Running",
        startTime="2026-01-01T00:00:00Z",
        podIP="10.0.0.2",
        containerStatuses=[{"name": "main", "ready": True}],
    )
    raw["metadata"]["managedFields"] = [{"manager": "kwok", "operation": "Update"}]


def _succeeded(raw: Raw) -> None:
    _running(raw)
    raw["status"]["phase"] = "Succeeded"


PROGRESS = [
    pytest.param(_bound, id="bound"),
    pytest.param(_running, id="running"),
    pytest.param(_succeeded, id="succeeded"),
]


def _pod() -> Raw:
    raw = pod_object("p", group="g")
    raw["status"] = {"phase": "Pending"}
    return raw


@pytest.mark.parametrize("move", PROGRESS)
def test_progress_alone_keeps_the_fingerprint_and_reads_as_a_full_read_would(
    move: Callable[[Raw], None],
) -> None:
    before = _pod()
    after = copy.deepcopy(before)
    move(after)
    assert progress_fingerprint(after) == progress_fingerprint(before)
    assert PodInfo.from_object(before).progressed(after) == PodInfo.from_object(after)


def _label(raw: Raw) -> None:
    raw["metadata"]["labels"]["extra"] = "x"


def _resize(raw: Raw) -> None:
    raw["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "2"


def _deleting(raw: Raw) -> None:
    raw["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"


def _annotated(raw: Raw) -> None:
    raw["metadata"]["annotations"] = {"scheduling.k8s.io/group-name": "other"}


def _tolerating(raw: Raw) -> None:
    raw["spec"]["tolerations"] = [{"key": "k", "operator": "Exists"}]


def _owned(raw: Raw) -> None:
    owner = {"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": "j1", "controller": True}
    raw["metadata"]["ownerReferences"] = [owner]


def _claimed(raw: Raw) -> None:
    raw["status"]["resourceClaimStatuses"] = [{"name": "gpus", "resourceClaimName": "p-gpus"}]


def _resized_by_the_kubelet(raw: Raw) -> None:
    reported = {"cpu": "2"}
    raw["status"]["containerStatuses"] = [
        {"name": "main", "allocatedResources": reported, "resources": {"requests": reported}}
    ]


def _resize_pending(raw: Raw) -> None:
    raw["status"]["conditions"] = [
        {"type": "PodResizePending", "status": "True", "reason": "Infeasible"}
    ]


OTHER_CHANGES = [
    pytest.param(_label, id="label"),
    pytest.param(_resize, id="resized"),
    pytest.param(_deleting, id="deleting"),
    pytest.param(_annotated, id="annotation"),
    pytest.param(_tolerating, id="toleration"),
    pytest.param(_owned, id="owner"),
    pytest.param(_claimed, id="claim-status"),
    pytest.param(_resized_by_the_kubelet, id="resize-reported"),
    pytest.param(_resize_pending, id="resize-pending"),
]


@pytest.mark.parametrize("change", OTHER_CHANGES)
@pytest.mark.parametrize("move", PROGRESS)
def test_any_other_change_changes_the_fingerprint(
    change: Callable[[Raw], None], move: Callable[[Raw], None]
) -> None:
    before = _pod()
    after = copy.deepcopy(before)
    move(after)
    change(after)
    assert progress_fingerprint(after) != progress_fingerprint(before)


def test_unreadable_progress_is_a_parse_error_naming_the_pod() -> None:
    before = _pod()
    after = copy.deepcopy(before)
    after["status"]["phase"] = 3
    with pytest.raises(PodParseError, match=r"default/p.*status\.phase"):
        PodInfo.from_object(before).progressed(after)


def test_no_fingerprint_for_what_is_not_shaped_like_a_pod() -> None:
    assert progress_fingerprint({"metadata": "x", "spec": {}}) is None
    assert progress_fingerprint({"metadata": {}, "spec": {"x": {1, 2}}}) is None


def test_with_a_resize_reported_being_bound_changes_the_fingerprint() -> None:
    # A bound pod's requests are read from the kubelet's reports, a pending one's not.
    before = _pod()
    _resized_by_the_kubelet(before)
    after = copy.deepcopy(before)
    _bound(after)
    assert progress_fingerprint(after) != progress_fingerprint(before)
    again = copy.deepcopy(after)
    _running(again)
    _resized_by_the_kubelet(again)  # the running pod's statuses still report it
    assert progress_fingerprint(again) == progress_fingerprint(after)
    assert PodInfo.from_object(after).progressed(again) == PodInfo.from_object(again)


@pytest.mark.parametrize("node", [None, "", "n1"])
@pytest.mark.parametrize("phase", [None, "", "Running"])
@pytest.mark.parametrize("start", [None, "2026-01-01T00:00:00Z", "2026-01-01T00:00:01+02:00"])
def test_the_usual_shapes_read_as_the_checked_reader_does(
    node: str | None, phase: str | None, start: str | None
) -> None:
    # Decoded JSON (dicts, strings) takes the fast way; a read-only mapping the
    # checked one: both must agree with a full read.
    before = PodInfo.from_object(_pod())
    after = _pod()
    for field, value in (("nodeName", node), ("phase", phase), ("startTime", start)):
        place = after["spec"] if field == "nodeName" else after["status"]
        if value is None:
            place.pop(field, None)
        else:
            place[field] = value
    full = PodInfo.from_object(after)
    assert before.progressed(after) == full
    checked = {**after, "spec": MappingProxyType(after["spec"])}
    assert before.progressed(checked) == full


def test_an_unchanged_progress_is_the_same_pod() -> None:
    raw = _pod()
    _running(raw)
    pod = PodInfo.from_object(raw)
    assert pod.progressed(copy.deepcopy(raw)) is pod


@pytest.mark.parametrize("start", ["", "yesterday", 5])
def test_an_unreadable_start_time_is_a_parse_error_naming_the_field(start: object) -> None:
    before = _pod()
    after = copy.deepcopy(before)
    _running(after)
    after["status"]["startTime"] = start
    with pytest.raises(PodParseError, match=r"default/p.*status\.startTime"):
        PodInfo.from_object(before).progressed(after)
