"""Bad input through the parsing layer and the core, without a server: nothing escapes.

The strategies of ``tests/bad_input.py`` (the ones the e2e test sends to the
real API server) produce raw PodGroups and pods one or two fields off the
schema. Here they go, many at a time, where the watches would deliver them:
each is either read or refused with the parse error that names it, and a
Fed fed a batch of them keeps scheduling: every decision is taken
without an exception, nothing is silently dropped, and a well-formed gang
added afterwards is placed whole.
"""

from __future__ import annotations

import contextlib
import copy
import os
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from coscheduler.api.adapters import sigs, t9k, volcano, xk8s
from coscheduler.api.adapters.apis import SIGS
from coscheduler.api.pod import PodInfo, PodParseError
from coscheduler.api.quantity import QuantityError
from coscheduler.core.planner import Decision
from coscheduler.core.scheduler import Scheduler
from coscheduler.runtime.handlers.base import InvalidObject
from tests.bad_input import (
    POOL_LABEL,
    Sample,
    podgroups,
    pods,
    t9k_podgroups,
    volcano_podgroups,
    xk8s_podgroups,
)
from tests.builders import node_object, pod_object, podgroup_object
from tests.fed import Fed

Json = dict[str, Any]

#: ``HYPOTHESIS_PROFILE=explore`` searches at random, five times longer; otherwise
#: every run tries the same examples (as the profiles of tests/hypothesis_profiles.py).
EXPLORE = os.environ.get("HYPOTHESIS_PROFILE") == "explore"


def _examples(count: int) -> settings:
    return settings(
        max_examples=count * (5 if EXPLORE else 1),
        derandomize=not EXPLORE,
        database=None,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
    )


# Fast enough for many examples: these strategies exercise parsing, not search.
MANY = _examples(600)


def _as_delivered(sample: Sample, serial: int) -> Json:
    """What a watch would deliver: the body with the fields the server sets."""
    body = copy.deepcopy(sample.body)
    meta = body.setdefault("metadata", {})
    if isinstance(meta, dict):
        meta.setdefault("namespace", "default")
        meta["uid"] = f"uid-{serial}"
        meta["generation"] = 1
        meta["creationTimestamp"] = "2026-11-25T00:00:00Z"
    return body


@MANY
@given(pods())
def test_a_pod_is_read_or_refused_with_a_parse_error(sample: Sample) -> None:
    with contextlib.suppress(PodParseError, QuantityError):
        PodInfo.from_object(_as_delivered(sample, 0))


@MANY
@given(podgroups())
def test_our_podgroup_is_read_or_refused_with_a_value_error(sample: Sample) -> None:
    with contextlib.suppress(ValueError):
        sigs.ADAPTER.parse(_as_delivered(sample, 0))


@MANY
@given(xk8s_podgroups())
def test_an_xk8s_podgroup_is_read_or_refused_with_a_value_error(sample: Sample) -> None:
    with contextlib.suppress(ValueError):
        xk8s.ADAPTER.parse(_as_delivered(sample, 0))


@MANY
@given(volcano_podgroups())
def test_a_volcano_podgroup_is_read_or_refused_with_a_value_error(sample: Sample) -> None:
    with contextlib.suppress(ValueError):
        volcano.ADAPTER.parse(_as_delivered(sample, 0))


@MANY
@given(t9k_podgroups())
def test_a_t9k_podgroup_is_read_or_refused_with_a_value_error(sample: Sample) -> None:
    with contextlib.suppress(ValueError):
        t9k.ADAPTER.parse(_as_delivered(sample, 0))


@_examples(150)
@given(
    st.lists(
        st.one_of(
            pods(pool="fuzz"),
            podgroups(),
            xk8s_podgroups(),
            volcano_podgroups(),
            t9k_podgroups(),
        ),
        min_size=1,
        max_size=12,
    )
)
def test_a_batch_of_bad_input_never_stops_the_core(samples: list[Sample]) -> None:
    invalid: list[InvalidObject] = []
    state = Fed(Scheduler(lambda: 0.0), on_invalid=invalid.append)
    state.handlers.nodes.replace(
        [node_object(f"fuzz-{i}", labels={POOL_LABEL: "fuzz"}) for i in range(2)]
        + [node_object(f"clean-{i}", labels={POOL_LABEL: "clean"}) for i in range(2)]
    )
    pods_fed = 0
    for serial, sample in enumerate(samples):
        body = _as_delivered(sample, serial)
        if sample.kind == "Pod":
            pods_fed += 1
            state.handlers.pods.upsert(body)
        else:
            adapters = (xk8s.ADAPTER, volcano.ADAPTER, t9k.ADAPTER)
            their = (a for a in adapters if body["apiVersion"].startswith(f"{a.api.group}/"))
            state.handlers.podgroups[next(their, sigs.ADAPTER).api].upsert(body)
    # Nothing is lost: every pod is either in the scheduler or reported.
    read = {uid for uid in (f"uid-{i}" for i in range(len(samples))) if state.scheduler.pod(uid)}
    reported = {obj.uid for obj in invalid if obj.kind == "Pod"}
    assert len(read | reported) == pods_fed
    _decide_until_quiet(state)

    # A well-formed gang added afterwards is placed whole.
    state.handlers.podgroups[SIGS].upsert(podgroup_object("clean-gang", 2, namespace="clean"))
    for index in range(2):
        state.handlers.pods.upsert(
            pod_object(
                f"clean-{index}",
                namespace="clean",
                group="clean-gang",
                node_selector={POOL_LABEL: "clean"},
            )
        )
    bound = {b.name for d in _decide_until_quiet(state) for b in d.bindings}
    assert {"clean-0", "clean-1"} <= bound


def _decide_until_quiet(state: Fed) -> list[Decision]:
    """Every decision the core will take now (its clock stands still, so backoff ends it)."""
    decisions: list[Decision] = []
    for _ in range(200):
        decision = state.scheduler.next_decision()
        if decision is None:
            return decisions
        decisions.append(decision)
    raise AssertionError("the core kept deciding: a group is retried without backing off")
