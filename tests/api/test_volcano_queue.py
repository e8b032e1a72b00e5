"""api/adapters/volcano_queue.py: Volcano's Queue read in our Queue's terms, its status in
Volcano's words. Also the shipped CRD: its structure is upstream's (held to the copy of
upstream's file in tests/upstream/)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from coscheduler.api.adapters.volcano_queue import (
    QueueTerms,
    VolcanoQueue,
    VolcanoQueueSpec,
    status_body,
)
from tests.upstream_crds import UPSTREAM, assert_same_structure, kept_row, load

CRD_PATH = Path(__file__).parents[2] / "crds" / "volcano-queues.yaml"
UPSTREAM_CRD = UPSTREAM / "volcano-queues-crd.yaml"
COMMIT = "ed72c7c815a9fd547a787134676f73d42e9d049c"


def their_queue(name: str = "q", state: str | None = None, **spec: Any) -> VolcanoQueue:
    raw: dict[str, Any] = {"metadata": {"name": name, "resourceVersion": "7"}, "spec": spec}
    if state is not None:
        raw["status"] = {"state": state}
    return VolcanoQueue.model_validate(raw)


def test_deserved_is_the_nominal_guarantee_its_kept_part_capability_the_max() -> None:
    queue = their_queue(
        weight=3,
        deserved={"cpu": "8", "memory": "16Gi"},
        guarantee={"resource": {"cpu": "2", "nvidia.com/gpu": 4}},
        capability={"cpu": "12"},
        reclaimable=False,
        parent="research",
    )
    assert queue.terms() == QueueTerms(
        # A guarantee above deserved (none of gpus) raises the nominal to it.
        nominal={"cpu": 8000, "memory": 16 * 2**30, "nvidia.com/gpu": 4},
        max={"cpu": 12000},
        # Kept: nominal less the lending limit, the guarantee.
        lending_limit={"cpu": 6000, "nvidia.com/gpu": 0},
        weight=3,
        open=True,
        parent="research",
        reclaimable=False,
    )


def test_a_bare_queue_shares_by_weight_under_the_top_of_the_tree() -> None:
    terms = their_queue(parent="root").terms()
    assert (terms.nominal, terms.max, terms.lending_limit) == ({}, {}, {})
    assert (terms.weight, terms.parent, terms.reclaimable, terms.open) == (1, None, True, True)


@pytest.mark.parametrize(
    ("state", "opened"),
    [(None, True), ("Open", True), ("Unknown", True), ("Closed", False), ("Closing", False)],
)
def test_closed_and_closing_admit_no_new_group(state: str | None, opened: bool) -> None:
    assert their_queue(state=state).terms().open is opened


@pytest.mark.parametrize(
    ("spec", "problem"),
    [
        ({"deserved": {"cpu": "8"}, "capability": {"cpu": "4"}}, "below spec.deserved for cpu"),
        ({"guarantee": {"resource": {"cpu": "8"}}, "capability": {"cpu": "4"}}, "spec.guarantee"),
        ({"parent": "q"}, "own parent"),
        ({"deserved": {"cpu": "-1"}}, "cpu"),
    ],
)  # fmt: skip
def test_contradictions_are_refused_naming_the_field(spec: dict[str, Any], problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        their_queue(**spec).terms()


def test_the_status_counts_groups_by_volcano_phase_and_a_closing_queue_closes_when_idle() -> None:
    closing = their_queue(state="Closing")
    busy = status_body(closing, {"Running": 2, "Inqueue": 1}, {"cpu": 4000, "memory": 0})
    assert busy == {
        "state": "Closing",
        "pending": 0,
        "inqueue": 1,
        "running": 2,
        "unknown": 0,
        "completed": 0,
        "allocated": {"cpu": "4"},
    }
    idle = status_body(closing, {"Pending": 1}, {})
    assert idle["state"] == "Closed"
    assert "allocated" not in idle


def test_a_status_already_written_is_not_written_again() -> None:
    raw = {
        "metadata": {"name": "q"},
        "status": {"state": "Open", "running": 1, "allocated": {"cpu": "4000m"}},
    }
    queue = VolcanoQueue.model_validate(raw)
    assert queue.status_matches(status_body(queue, {"Running": 1}, {"cpu": 4000}))
    assert not queue.status_matches(status_body(queue, {"Running": 2}, {"cpu": 4000}))
    assert not queue.status_matches(status_body(queue, {"Running": 1}, {}))


# -- the CRD ------------------------------------------------------------------


def test_the_crd_has_upstream_s_structure() -> None:
    assert_same_structure(CRD_PATH, UPSTREAM_CRD)


def test_the_kept_upstream_crd_is_untouched() -> None:
    """tests/upstream/README.md names the file's commit, path and digest."""
    cells = kept_row(UPSTREAM_CRD)
    assert cells[2] == f"commit `{COMMIT}"
    assert cells[3] == "config/crd/volcano/bases/scheduling.volcano.sh_queues.yaml"
    assert COMMIT in CRD_PATH.read_text(), "source named"


def test_the_models_read_fields_the_crd_has() -> None:
    (version,) = load(CRD_PATH)["spec"]["versions"]
    properties = version["schema"]["openAPIV3Schema"]["properties"]
    spec_fields = set(properties["spec"]["properties"])
    status_fields = set(properties["status"]["properties"])
    assert set(VolcanoQueueSpec.model_fields) <= spec_fields
    assert set(status_body(their_queue(), {}, {"cpu": 1})) <= status_fields
