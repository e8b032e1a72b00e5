"""Reading a CompositePodGroup (v1alpha3); composing its children into one gang."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from coscheduler.api.composite import (
    ChildGroup,
    Composed,
    Refused,
    Waiting,
    basic_refusal,
    compose,
    read_composite,
)


def composite(**spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "workloadRef": {"workloadName": "train", "templateName": "all"},
        "schedulingPolicy": {"gang": {"minGroupCount": 2}},
    }
    body.update(spec)
    return {
        "apiVersion": "scheduling.k8s.io/v1alpha3",
        "kind": "CompositePodGroup",
        "metadata": {"namespace": "ns", "name": "job", "uid": "u1"},
        "spec": body,
    }


def test_every_field_is_read() -> None:
    raw = composite(
        schedulingConstraints={"topology": [{"key": "topology.kubernetes.io/zone"}]},
        disruptionMode={"all": {}},
        priorityClassName="high",
        priority=1000,
        preemptionPolicy="Never",
    )
    raw["metadata"]["labels"] = {"scheduling.sigs.k8s.io/queue": "team-a"}
    raw["status"] = {
        "conditions": [
            {
                "type": "CompositePodGroupInitiallyScheduled",
                "status": "True",
                "reason": "Scheduled",
                "message": "",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
                "observedGeneration": 1,
            }
        ]
    }
    read = read_composite(raw)
    assert read.key == "ns/job"
    assert read.min_group_count == 2
    assert read.gang
    assert read.topology_key == "topology.kubernetes.io/zone"
    assert read.disrupt_all
    assert read.parent is None
    assert (read.priority_class_name, read.priority, read.preempt_never) == ("high", 1000, True)
    assert read.workload_ref == ("train", "all")
    assert read.queue == "team-a"
    assert read.condition("CompositePodGroupInitiallyScheduled") == (
        "CompositePodGroupInitiallyScheduled",
        "True",
        "Scheduled",
        "",
    )


def test_defaults() -> None:
    read = read_composite(
        composite(schedulingPolicy={"basic": {}}, parentCompositePodGroupName="top")
    )
    assert read.min_group_count is None
    assert not read.gang
    assert not read.disrupt_all  # single is the default
    assert read.parent == "top"
    assert read.queue == "default"
    assert read.topology_key is None
    assert read.priority is None
    assert not read.preempt_never


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"schedulingPolicy": {}}, "spec.schedulingPolicy"),
        (
            {"schedulingPolicy": {"basic": {}, "gang": {"minGroupCount": 1}}},
            "spec.schedulingPolicy",
        ),
        ({"schedulingPolicy": {"quorum": {}}}, "spec.schedulingPolicy"),
        ({"schedulingPolicy": {"gang": {"minGroupCount": 0}}}, "minGroupCount"),
        ({"schedulingPolicy": {"gang": {}}}, "minGroupCount"),
        ({"schedulingPolicy": {"gang": {"minGroupCount": "two"}}}, "minGroupCount"),
        ({"schedulingConstraints": {"topology": [{"key": "a"}, {"key": "b"}]}}, "topology"),
        ({"schedulingConstraints": {"topology": [{"key": "not a key!"}]}}, "topology[0].key"),
        ({"disruptionMode": {"single": {}, "all": {}}}, "spec.disruptionMode"),
        ({"disruptionMode": {"some": {}}}, "spec.disruptionMode"),
        ({"preemptionPolicy": "Sometimes"}, "preemptionPolicy"),
        ({"priority": 2_000_000_000}, "priority"),
        ({"parentCompositePodGroupName": ""}, "parentCompositePodGroupName"),
    ],
)
def test_bad_input_names_the_field(spec: dict[str, Any], field: str) -> None:
    with pytest.raises(ValueError, match=field.replace("[", r"\[").replace("]", r"\]")):
        read_composite(composite(**spec))


def test_missing_spec_and_bad_queue_label() -> None:
    raw = composite()
    del raw["spec"]
    with pytest.raises(ValueError, match="spec"):
        read_composite(raw)
    raw = composite()
    raw["metadata"]["labels"] = {"scheduling.sigs.k8s.io/queue": 3}
    with pytest.raises(ValueError, match=r"metadata\.labels"):
        read_composite(raw)


LEADER = ChildGroup("leader", 1)
WORKERS = ChildGroup("workers", 4, "rack")


def test_a_gang_composite_is_one_gang_whose_roles_are_its_children() -> None:
    read = read_composite(
        composite(
            schedulingConstraints={"topology": [{"key": "zone"}]}, priority=7, priorityClassName="p"
        )
    )
    result = compose(read, [WORKERS, LEADER])
    assert isinstance(result, Composed)
    spec = result.spec
    assert spec.min_member == 5
    assert spec.role_minimums() == {"leader": 1, "workers": 4}
    assert spec.role_topology() == {"workers": ("rack",)}
    assert spec.topology is not None
    assert spec.topology.levels() == ("zone",)
    assert (spec.priority, spec.priority_class_name) == (7, "p")


def test_a_basic_child_needs_one_pod() -> None:
    result = compose(read_composite(composite()), [ChildGroup("a", None), ChildGroup("b", 3)])
    assert isinstance(result, Composed)
    assert result.spec.role_minimums() == {"a": 1, "b": 3}


def test_too_few_children_wait() -> None:
    result = compose(read_composite(composite()), [LEADER])
    assert isinstance(result, Waiting)
    assert "minGroupCount 2" in result.message
    assert "1 exist" in result.message


def test_fewer_than_all_children_is_refused_with_the_field_named() -> None:
    read = read_composite(composite(schedulingPolicy={"gang": {"minGroupCount": 1}}))
    result = compose(read, [LEADER, WORKERS])
    assert isinstance(result, Refused)
    assert result.field == "spec.schedulingPolicy.gang.minGroupCount"
    assert "minGroupCount" in result.message


def test_nesting_is_refused() -> None:
    result = compose(
        read_composite(composite(parentCompositePodGroupName="top")), [LEADER, WORKERS]
    )
    assert isinstance(result, Refused)
    assert result.field == "spec.parentCompositePodGroupName"


def test_a_long_child_name_is_refused() -> None:
    result = compose(read_composite(composite()), [LEADER, ChildGroup("w" * 64, 1)])
    assert isinstance(result, Refused)
    assert "63" in result.why


def test_a_child_with_claims_of_its_own_is_refused_naming_the_field() -> None:
    sharing = ChildGroup("workers", 4, claims=True)
    result = compose(read_composite(composite()), [LEADER, sharing])
    assert isinstance(result, Refused)
    assert result.field == "child PodGroup spec.resourceClaims"
    assert "'workers'" in result.why


def test_basic_composite_with_topology_is_refused() -> None:
    basic = read_composite(composite(schedulingPolicy={"basic": {}}))
    assert basic_refusal(basic) is None
    refused = basic_refusal(
        read_composite(
            composite(
                schedulingPolicy={"basic": {}},
                schedulingConstraints={"topology": [{"key": "zone"}]},
            )
        )
    )
    assert refused is not None
    assert refused.field == "spec.schedulingConstraints.topology"
    assert isinstance(compose(basic, [LEADER]), Refused)


@given(
    st.lists(
        st.tuples(st.integers(1, 50), st.one_of(st.none(), st.sampled_from(["rack", "zone"]))),
        min_size=1,
        max_size=8,
    )
)
def test_composed_gang_needs_every_child_whole(children: list[tuple[int, str | None]]) -> None:
    groups = [ChildGroup(f"c{i}", count, key) for i, (count, key) in enumerate(children)]
    read = read_composite(composite(schedulingPolicy={"gang": {"minGroupCount": len(groups)}}))
    result = compose(read, list(reversed(groups)))
    assert isinstance(result, Composed)
    minimums = result.spec.role_minimums()
    assert minimums == {group.name: group.min_count for group in groups}
    # Every child's minimum, and nothing beyond them, makes the gang.
    assert result.spec.min_member == sum(minimums.values())


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.text(max_size=12),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=12,
)
_FIELDS = st.sampled_from(
    [
        "schedulingPolicy",
        "schedulingConstraints",
        "disruptionMode",
        "priority",
        "priorityClassName",
        "preemptionPolicy",
        "parentCompositePodGroupName",
        "workloadRef",
    ]
)


@given(st.dictionaries(_FIELDS, _JSON, max_size=4), st.one_of(st.none(), _JSON))
def test_any_spec_is_read_or_refused_with_a_value_error(
    fields: dict[str, Any], status: object
) -> None:
    """Property: whatever the fields hold, reading returns a record or raises ValueError."""
    raw = composite(**fields)
    if status is not None:
        raw["status"] = status
    try:
        read = read_composite(raw)
    except ValueError as error:
        refused = str(error)
    else:
        refused = ""
    if refused:
        return  # refused, with a message
    assert (read.min_group_count is None) == ("gang" not in raw["spec"]["schedulingPolicy"])
