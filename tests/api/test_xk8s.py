"""api/adapters/xk8s.py: scheduler-plugins' PodGroup read as ours, and our status written as theirs.

Also the shipped CRD: its structure is upstream's (compared with upstream's own
file, kept in tests/upstream/) and its fields are the models'.
"""

from __future__ import annotations

import datetime
import hashlib
import re
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from bench.build import REFERENCE_CRDS, SCHEDULER_PLUGINS, reference_podgroup_crd
from coscheduler.api.adapters import sigs, xk8s
from coscheduler.api.adapters.table import ADAPTERS
from coscheduler.api.pod import PodInfo
from coscheduler.api.podgroup import (
    ConditionStatus,
    ConditionType,
    PodGroupCondition,
    PodGroupPhase,
    PodGroupStatus,
)
from coscheduler.api.reasons import Reason
from tests.builders import pod_object, podgroup_object
from tests.upstream_crds import load, without_descriptions

ADAPTER = xk8s.ADAPTER
API_VERSION = "scheduling.x-k8s.io/v1alpha1"
CRD_PATH = Path(__file__).parents[2] / "crds" / "xk8s-podgroups.yaml"
UPSTREAM = Path(__file__).parents[1] / "upstream"
UPSTREAM_CRD = UPSTREAM / "scheduler-plugins-coscheduling-crd.yaml"
START = datetime.datetime(2026, 11, 25, 1, 2, 3, tzinfo=datetime.UTC)


def their_group(min_member: int | None = None, **fields: Any) -> dict[str, Any]:
    return podgroup_object("train", min_member, api_version=API_VERSION, **fields)


def member(name: str, owner: str | None = "train", namespace: str = "default") -> PodInfo:
    return PodInfo.from_object(pod_object(name, namespace=namespace, group="train", owner=owner))


# -- reading the spec ---------------------------------------------------------


def test_their_spec_is_read_as_ours() -> None:
    group = ADAPTER.parse(
        their_group(3, minResources={"cpu": "6", "memory": 1024}, scheduleTimeoutSeconds=60)
    )
    assert group.api is xk8s.API
    assert (group.namespace, group.name, group.uid) == ("default", "train", "uid-pg-train")
    assert group.spec.min_member == 3
    assert group.spec.min_resource_amounts() == {"cpu": 6000, "memory": 1024}
    assert group.spec.schedule_timeout_seconds == 60
    # What their shape has no word for takes our defaults.
    assert (group.spec.priority, group.spec.queue, group.spec.roles) == (None, "default", None)


@pytest.mark.parametrize(
    ("spec", "min_member", "timeout"),
    [
        pytest.param({}, 1, None, id="no minMember: each member may go alone"),
        pytest.param({"minMember": 0}, 1, None, id="minMember 0 likewise"),
        pytest.param({"minMember": 2, "scheduleTimeoutSeconds": 0}, 2, None, id="timeout 0"),
        pytest.param({"minMember": 2, "scheduleTimeoutSeconds": -5}, 2, None, id="negative"),
        pytest.param({"minMember": 2, "someFutureField": True}, 2, None, id="unknown field"),
    ],
)
def test_what_their_spec_leaves_open(
    spec: dict[str, Any], min_member: int, timeout: int | None
) -> None:
    group = ADAPTER.parse(their_group(**spec))
    assert (group.spec.min_member, group.spec.schedule_timeout_seconds) == (min_member, timeout)


def test_a_group_without_spec_is_a_group_of_single_members() -> None:
    raw = their_group()
    del raw["spec"]
    assert ADAPTER.parse(raw).spec.min_member == 1


def test_a_bad_quantity_is_refused_with_its_value() -> None:
    with pytest.raises(ValueError, match="lots"):
        ADAPTER.parse(their_group(2, minResources={"cpu": "lots"}))


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        # Found by e2e/tests/test_bad_input.py: the reason said min_member, min_resources.
        pytest.param(
            {"minMember": 2**31 - 1},
            "spec.minMember: Input should be less than or equal to 100000",
            id="minMember past ours",
        ),
        pytest.param(
            {"minResources": {f"example.com/r{i}": "1" for i in range(33)}},
            "spec.minResources: Dictionary should have at most 32 items",
            id="too many minResources",
        ),
        pytest.param(
            {"minResources": {"cpu": "-1"}},
            "spec.minResources: invalid quantity '-1': resource 'cpu' must not be negative",
            id="negative quantity",
        ),
    ],
)
def test_what_their_schema_allows_and_ours_does_not_is_named_as_on_the_wire(
    spec: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=r"^spec\.") as error:
        ADAPTER.parse(their_group(**spec))
    assert str(error.value).startswith(message)


def test_an_unreadable_status_does_not_make_the_group_unreadable() -> None:
    group = ADAPTER.parse(their_group(2, status={"running": "many"}))
    assert group.status == PodGroupStatus()
    assert group.stored is None  # so the first status we derive is written over it


# -- reading a stored status --------------------------------------------------


@pytest.mark.parametrize(
    ("stored", "ours"),
    [
        ("Pending", PodGroupPhase.PENDING),
        ("Scheduling", PodGroupPhase.SCHEDULED),
        ("Running", PodGroupPhase.RUNNING),
        ("Finished", PodGroupPhase.FINISHED),
        ("Failed", PodGroupPhase.FAILED),
        ("Unknown", PodGroupPhase.UNKNOWN),
        # Retired upstream (scheduler-plugins#574), still found on old objects.
        ("PreScheduling", PodGroupPhase.PENDING),
        ("Scheduled", PodGroupPhase.SCHEDULED),
        ("", PodGroupPhase.PENDING),
        ("Whatever", PodGroupPhase.PENDING),
    ],
)
def test_a_stored_phase_reads_as_ours(stored: str, ours: PodGroupPhase) -> None:
    assert ADAPTER.read_status({"phase": stored}).phase == ours


def test_a_stored_status_reads_its_counts_and_start() -> None:
    status = ADAPTER.read_status(
        {
            "phase": "Running",
            "running": 3,
            "succeeded": 1,
            "failed": -2,  # their schema has no minimum
            "scheduleStartTime": "2026-11-25T01:02:03Z",
            "occupiedBy": "default/train",
        }
    )
    assert (status.running, status.succeeded, status.failed) == (3, 1, 0)
    assert status.schedule_start_time == START
    assert status.conditions == []


# -- writing our status in their shape ---------------------------------------


def unschedulable(status: ConditionStatus) -> PodGroupCondition:
    return PodGroupCondition(
        type=ConditionType.UNSCHEDULABLE,
        status=status,
        reason=Reason.NOT_ENOUGH_RESOURCES
        if status == ConditionStatus.TRUE
        else Reason.SCHEDULABLE,
        message="",
    )


@pytest.mark.parametrize(
    ("ours", "cannot_place", "theirs"),
    [
        (PodGroupPhase.PENDING, False, "Pending"),
        (PodGroupPhase.PENDING, True, "Pending"),
        (PodGroupPhase.SCHEDULING, False, "Pending"),
        # Part of minMember bound, the rest cannot be: upstream's Unknown.
        (PodGroupPhase.SCHEDULING, True, "Unknown"),
        (PodGroupPhase.SCHEDULED, False, "Scheduling"),
        (PodGroupPhase.RUNNING, False, "Running"),
        (PodGroupPhase.FINISHED, False, "Finished"),
        (PodGroupPhase.FAILED, False, "Failed"),
        (PodGroupPhase.UNKNOWN, False, "Unknown"),
    ],
)
def test_our_phase_is_written_as_theirs(
    ours: PodGroupPhase, cannot_place: bool, theirs: str
) -> None:
    condition = unschedulable(ConditionStatus.TRUE if cannot_place else ConditionStatus.FALSE)
    status = PodGroupStatus(phase=ours, conditions=[condition])
    body = ADAPTER.render_status(status, [])
    assert body["phase"] == theirs
    assert theirs in {phase.value for phase in xk8s.XK8sPhase}


def test_a_status_is_written_with_their_fields_only() -> None:
    status = PodGroupStatus(
        phase=PodGroupPhase.RUNNING,
        conditions=[unschedulable(ConditionStatus.FALSE)],
        pending=1,
        scheduled=3,
        running=2,
        succeeded=1,
        failed=0,
        schedule_start_time=START,
        occupied_by="uid-job-train",
        allocated={"cpu": "2"},
    )
    members = [
        member("train-0"),
        member("train-1"),
        member("train-2", owner="launcher"),
        member("train-3", owner=None),
    ]
    assert ADAPTER.render_status(status, members) == {
        "phase": "Running",
        "running": 2,
        "succeeded": 1,
        "failed": 0,
        "scheduleStartTime": "2026-11-25T01:02:03Z",
        # As upstream's controller writes it: owners by namespace/name, sorted.
        "occupiedBy": "default/launcher,default/train",
    }


def test_fields_without_a_value_are_removed_by_the_merge_patch() -> None:
    body = ADAPTER.render_status(PodGroupStatus(), [member("train-0", owner=None)])
    assert body["scheduleStartTime"] is None
    assert body["occupiedBy"] is None


def test_a_written_status_and_the_server_s_copy_of_it_compare_equal() -> None:
    status = PodGroupStatus(phase=PodGroupPhase.SCHEDULED, running=0, schedule_start_time=START)
    body = ADAPTER.render_status(status, [member("train-0")])
    # The server keeps no nulls, and may write zero counts out or not at all.
    stored = {k: v for k, v in body.items() if v is not None and v != 0}
    assert ADAPTER.stored_form(stored) == ADAPTER.stored_form(body)
    assert ADAPTER.stored_form({**stored, "running": 1}) != ADAPTER.stored_form(body)


def test_ours_comes_first() -> None:
    assert ADAPTERS[0] is sigs.ADAPTER
    assert ADAPTERS[1].api == ADAPTER.api
    assert ADAPTER.shared
    assert not sigs.ADAPTER.shared


# -- the CRD ------------------------------------------------------------------


def structure(crd: dict[str, Any]) -> dict[str, Any]:
    """What the API server serves and checks: everything but the prose and metadata."""
    spec = without_descriptions(crd["spec"])
    for version in spec["versions"]:
        version["additionalPrinterColumns"] = sorted(
            version["additionalPrinterColumns"], key=lambda column: column["jsonPath"]
        )
    spec["names"]["shortNames"] = sorted(spec["names"]["shortNames"])
    return {"name": crd["metadata"]["name"], "spec": spec}


def test_the_crd_has_upstream_s_structure() -> None:
    assert structure(load(CRD_PATH)) == structure(load(UPSTREAM_CRD))


def test_the_kept_upstream_crd_is_the_benchmark_s_reference_untouched() -> None:
    """tests/upstream/README.md names the file's version, path and digest: the benchmark's."""
    lines = (UPSTREAM / "README.md").read_text().splitlines()
    row = next(line for line in lines if line.startswith(f"| `{UPSTREAM_CRD.name}`"))
    version, path, digest = (cell.strip(" `") for cell in row.strip("|").split("|")[2:5])
    assert (version, path) == (SCHEDULER_PLUGINS, REFERENCE_CRDS[0])
    assert re.fullmatch("[0-9a-f]{64}", digest)
    assert hashlib.sha256(UPSTREAM_CRD.read_bytes()).hexdigest() == digest, "edited: re-copy it"
    built = reference_podgroup_crd()  # the benchmark's build copies the same file, if built
    if built.is_file():
        assert built.read_bytes() == UPSTREAM_CRD.read_bytes()


def wire_names(model: type[BaseModel]) -> set[str]:
    return {field.alias or name for name, field in model.model_fields.items()}


def test_the_crd_and_the_models_name_the_same_fields() -> None:
    (version,) = load(CRD_PATH)["spec"]["versions"]
    properties = version["schema"]["openAPIV3Schema"]["properties"]
    assert set(properties["spec"]["properties"]) == wire_names(xk8s.XK8sSpec)
    assert set(properties["status"]["properties"]) == wire_names(xk8s.XK8sStatus)
