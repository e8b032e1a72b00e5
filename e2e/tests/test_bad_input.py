"""Bad input through the real API server: refused clearly, or scheduled, or reported; never fatal.

Hypothesis draws PodGroups (ours and scheduler-plugins') and pods of ours one or
two fields off the schema (``tests/bad_input.py``: quantities at the edges,
counts past int32 and int64, unicode and maximal names, missing fields, wrong
types, odd affinity, spread and tolerations, pods naming missing groups,
duplicate roles). Each is sent to the API server with coscheduler running:

- refused: the answer's message names one of the fields that were changed
  (the CRD's CEL messages and the server's own are meant for people);
- accepted: coscheduler reads the stored object as a watch delivers it. Our
  CRD mirrors our models, so one of our PodGroups must be readable (a status
  drawn for a group is written through the status subresource, as another
  controller would). If coscheduler cannot read the object, it must say so on
  it (an ``InvalidObject`` event; for a pod a ``FailedScheduling`` event and
  ``PodScheduled=False``, reason ``InvalidObject``) with the reason it gives
  offline, and pods naming such a group must say it cannot be read; if it can,
  a pod ends bound or with ``PodScheduled=False`` and a reason, and one of our
  PodGroups gets our status (a ``Scheduled`` condition with one of our reasons).

After the batch, a well-formed gang is still placed whole, the process is
alive, and its log holds no traceback. The examples are derandomized (the
same every run, about a minute); ``HYPOTHESIS_PROFILE=explore`` sends five
times as many, drawn at random.
"""

from __future__ import annotations

import itertools
import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from coscheduler.api.adapters import sigs, xk8s
from coscheduler.api.labels import pod_group_name
from coscheduler.api.reasons import Reason
from coscheduler.core.scheduler import Scheduler
from coscheduler.runtime.handlers.base import InvalidObject
from e2e import workloads as w
from e2e.api import Json
from e2e.controlplane import Cluster
from e2e.scheduler import SchedulerProcess, StartScheduler
from e2e.tests.helpers import pod_scheduled
from e2e.waiting import wait_for
from tests.bad_input import Sample, podgroups, pods, xk8s_podgroups
from tests.fed import Fed

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("xk8s_crd")]

EXPLORE = os.environ.get("HYPOTHESIS_PROFILE") == "explore"
EXAMPLES = 40 * (5 if EXPLORE else 1)
#: A DNS subdomain, as the API server requires of pod and PodGroup names.
_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")

#: Refusals of a pod by kube-apiserver's own decoder that name no field: upstream's
#: words, not ours to change (the CRD's refusals, ours, must all name the field).
UPSTREAM_UNNAMED = (
    "quantities must match the regular expression",
    "unable to parse quantity's suffix",
    "unable to parse numeric part of quantity",
)

OUR_REASONS = {reason.value for reason in Reason}

_COLLECTIONS = {
    "v1": "/api/v1/namespaces/{ns}/pods",
    sigs.API.api_version: w.PODGROUPS,
    xk8s.API.api_version: w.XK8S_PODGROUPS,
}


@dataclass
class Accepted:
    """An object the API server stored, and what coscheduler should make of it."""

    stored: Json
    #: The message coscheduler gives for it offline when it cannot read it, else None.
    unreadable: str | None

    @property
    def kind(self) -> str:
        return str(self.stored["kind"])

    @property
    def api_version(self) -> str:
        return str(self.stored["apiVersion"])

    @property
    def name(self) -> str:
        return str(self.stored["metadata"]["name"])

    @property
    def uid(self) -> str:
        return str(self.stored["metadata"]["uid"])

    def describe(self) -> str:
        return f"{self.kind} {self.name} ({self.api_version})"


@dataclass
class Batch:
    """What was sent: refusals checked at once, acceptances checked together afterwards."""

    cluster: Cluster
    namespace: str
    accepted: list[Accepted] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    serial: itertools.count[int] = field(default_factory=itertools.count)

    def send(self, sample: Sample) -> None:
        body = sample.body
        path = _COLLECTIONS[body["apiVersion"]].format(ns=self.namespace)
        status, text = self.cluster.api.raw("POST", path, body)
        if status == 409:  # a name drawn before: the same object under a fresh name
            body = _renamed(body, next(self.serial))
            status, text = self.cluster.api.raw("POST", path, body)
        if status in (200, 201) and "status" in body and body["kind"] == "PodGroup":
            # Status is the subresource's: written apart, as another controller would.
            created = json.loads(text)["metadata"]["name"]
            status, text = self.cluster.api.raw(
                "PATCH",
                f"{path}/{created}/status",
                {"status": body["status"]},
                content_type="application/merge-patch+json",
            )
        if status in (200, 201):
            stored = json.loads(text)
            unreadable = _unreadable(stored)
            # Our CRD mirrors our models: what it accepts, coscheduler reads.
            assert unreadable is None or stored["apiVersion"] != sigs.API.api_version, (
                f"the CRD accepted a PodGroup the models refuse: {unreadable}"
            )
            self.accepted.append(Accepted(stored, unreadable))
            return
        message = str(json.loads(text).get("message", text))
        assert status in (400, 403, 422), f"{status} for {sample}: {message}"
        words = sample.field_words()
        if sample.kind == "Pod" and any(text in message for text in UPSTREAM_UNNAMED):
            self.refused.append(message)
            return
        assert any(_names(message, word) for word in words), (
            f"the refusal names none of {sorted(words)}: {message}"
        )
        self.refused.append(message)


XK8S_LABEL = "scheduling.x-k8s.io/pod-group"
#: A name of 253 characters, the most the API server allows.
MAXIMAL_NAME = ".".join(["a" * 62 + "z"] * 3 + ["b" * 59 + "-c"])


def _pod(namespace: str, pool: str, name: str, requests: Json, **labels: str) -> Sample:
    body = w.pod(name, pool=pool, cpu="1")
    body["metadata"] |= {"namespace": namespace, "labels": labels}
    body["spec"]["containers"][0]["resources"]["requests"] = requests
    return Sample(body, ("spec.containers.0.resources.requests",))


def _group(namespace: str, name: str, **spec: Any) -> Sample:
    return _xk8s_group(namespace, name, sigs.API.api_version, **spec)


def _xk8s_group(
    namespace: str, name: str, api_version: str = xk8s.API.api_version, **spec: Any
) -> Sample:
    body = {
        "apiVersion": api_version,
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }
    return Sample(body, tuple(f"spec.{key}" for key in spec))


def _with_status(sample: Sample, **status: Any) -> Sample:
    touched = (*sample.touched, *(f"status.{key}" for key in status))
    return Sample({**sample.body, "status": status}, touched)


def _names(message: str, word: str) -> bool:
    """Whether ``message`` names the field ``word`` (``priorityClassName`` as ``PriorityClass``)."""
    lowered = message.lower()
    return word.lower() in lowered or word.lower().removesuffix("name") in lowered


def _renamed(body: Json, serial: int) -> Json:
    name = body["metadata"]["name"]
    if isinstance(name, str) and _SUBDOMAIN.fullmatch(name) and len(name) > 6:
        unique = f"{name[:-6]}{serial:06d}"
    else:
        unique = f"{name}-{serial}"
    return {**body, "metadata": {**body["metadata"], "name": unique}}


def _unreadable(stored: Json) -> str | None:
    """What coscheduler says of the stored object when it cannot read it (None if it can)."""
    invalid: list[InvalidObject] = []
    state = Fed(Scheduler(lambda: 0.0), on_invalid=invalid.append)
    if stored["kind"] == "Pod":
        state.handlers.pods.upsert(stored)
    else:
        adapter = sigs.ADAPTER if stored["apiVersion"] == sigs.API.api_version else xk8s.ADAPTER
        state.handlers.podgroups[adapter.api].upsert(stored)
    return f"cannot be read: {invalid[0].message}" if invalid else None


def _outcome(
    item: Accepted, now: Json, events: list[Json], unreadable_groups: set[str | None]
) -> str | None:
    """How coscheduler answered the object so far; None while it has not."""
    mine = [e for e in events if e["involvedObject"].get("uid") == item.uid]
    if item.unreadable is not None:
        said = [e["message"] for e in mine if e["message"] == item.unreadable]
        if item.kind == "Pod":  # a pod of ours, pending: its condition says it too
            condition = pod_scheduled(now)
            if (condition.get("reason"), condition.get("message")) != (
                "InvalidObject",
                item.unreadable,
            ):
                return None
        return f"reported: {said[0]}" if said else None
    if item.kind == "Pod":
        if now["spec"].get("nodeName"):
            return "bound"
        condition = pod_scheduled(now)
        message = str(condition.get("message"))
        if condition.get("reason") == "GroupNotFound" and unreadable_groups & {
            pod_group_name(now["metadata"].get("labels"))
        }:
            # The group exists: the pod must say why it cannot be read, not that it is missing.
            return f"GroupNotFound: {message}" if "cannot be read" in message else None
        if condition.get("status") == "False" and condition.get("reason"):
            return f"PodScheduled=False {condition['reason']}: {message}"
        return None
    if item.api_version == xk8s.API.api_version:
        # A shared API: a group with no member of ours may be another scheduler's to keep.
        return "left to its own scheduler"
    # Ours has a Scheduled condition with one of our reasons (a status written by the
    # fuzz may carry a phase, but not that).
    status = now.get("status") or {}
    ours = [
        c
        for c in status.get("conditions") or []
        if c.get("type") == "Scheduled" and c.get("reason") in OUR_REASONS
    ]
    return f"status {status.get('phase')}, Scheduled={ours[0]['reason']}" if ours else None


def _wait_outcomes(
    cluster: Cluster, namespace: str, accepted: list[Accepted], process: SchedulerProcess
) -> dict[str, str]:
    """Until every accepted object has an outcome; return them by ``kind name``.

    A scheduler that exits meanwhile fails the wait at once, with its log's end.
    """

    def answered(outcomes: dict[str, str | None]) -> bool:
        if not process.alive():
            raise AssertionError(f"coscheduler exited:\n{process.log()[-3000:]}")
        return all(outcomes.values())

    def observe() -> dict[str, str | None]:
        current: dict[tuple[str, str], Json] = {}
        for version, collection in _COLLECTIONS.items():
            for obj in cluster.api.get(collection.format(ns=namespace))["items"]:
                current[(version, obj["metadata"]["uid"])] = obj
        events = cluster.api.get(f"/api/v1/namespaces/{namespace}/events")["items"]
        return {
            item.describe(): _outcome(
                item, current.get((item.api_version, item.uid), item.stored), events, unreadable
            )
            for item in accepted
        }

    groups = [item for item in accepted if item.kind == "PodGroup"]
    readable = {item.name for item in groups if item.unreadable is None}
    unreadable: set[str | None] = {
        item.name for item in groups if item.unreadable is not None and item.name not in readable
    }

    seen = wait_for(
        observe,
        answered,
        describe="every accepted object scheduled or reported (None: not yet)",
        timeout=90,
        interval=1.0,
    )
    return {name: str(outcome) for name, outcome in seen.items()}


def _assert_log_clean(process: SchedulerProcess) -> None:
    problems = [
        line
        for line in process.log().splitlines()
        if "Traceback" in line or '"exception"' in line or '"level": "critical"' in line
    ]
    assert not problems, "\n".join(problems[:5])


def test_bad_input_is_refused_clearly_or_scheduled_or_reported(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: Callable[..., list[str]],
    start_scheduler: StartScheduler,
) -> None:
    add_nodes(2, cpu="8", memory="32Gi")
    process = start_scheduler()
    batch = Batch(cluster, namespace)

    @settings(
        max_examples=EXAMPLES,
        derandomize=not EXPLORE,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(st.one_of(podgroups(namespace), xk8s_podgroups(namespace), pods(namespace, pool)))
    # Examples that found bugs, kept (each named in the commit that fixed it), and edges.
    @example(_pod(namespace, pool, "huge", {"cpu": "1e18"}))  # overflowed the core's int64
    @example(_xk8s_group(namespace, MAXIMAL_NAME, minMember=2**31 - 1))
    # The CRD took them, the models did not:
    @example(_group(namespace, "dot", minMember=1, minResources={"cpu": "."}))
    @example(_group(namespace, "exponent", minMember=1, minResources={"cpu": "1e1001"}))
    # A status someone else wrote made the group unreadable:
    @example(_with_status(_group(namespace, "their-status", minMember=1), allocated={"cpu": "x"}))
    # Its pods said it did not exist:
    @example(_xk8s_group(namespace, "unreadable", minMember=2**31 - 1))
    @example(_pod(namespace, pool, "of-unreadable", {"cpu": "1"}, **{XK8S_LABEL: "unreadable"}))
    def send(sample: Sample) -> None:
        batch.send(sample)

    send()
    outcomes = _wait_outcomes(cluster, namespace, batch.accepted, process)
    print(f"\n{len(batch.refused)} refused, {len(batch.accepted)} accepted:")
    for name, outcome in sorted(outcomes.items()):
        print(f"  {name}: {outcome}")
    for message in batch.refused:
        print(f"  refused: {message[:200]}")
    assert process.alive()

    # The loop still places a well-formed gang whole, on nodes no fuzzed pod can reach.
    clean = f"{pool}-clean"
    add_nodes(2, cpu="4", labels={w.POOL_LABEL: clean})
    w.create_podgroup(cluster.api, namespace, "after-the-fuzz", 3)
    for index in range(3):
        w.create_pod(
            cluster.api,
            namespace,
            f"after-the-fuzz-{index}",
            pool=clean,
            cpu="2",
            group="after-the-fuzz",
        )
    wait_for(
        lambda: w.list_pods(cluster.api, namespace, f"{w.GROUP_LABEL}=after-the-fuzz"),
        lambda members: len(members) == 3 and all(p["spec"].get("nodeName") for p in members),
        describe="the gang sent after the fuzz bound whole",
    )
    assert process.alive()
    _assert_log_clean(process)
