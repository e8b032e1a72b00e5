"""Every benchmark trial holds each peer to the gang invariant from its pod watch."""

from __future__ import annotations

from typing import Any, cast

from bench import trial
from bench.kube import Kube
from bench.observe import Recorder
from bench.peers import GANG_LABEL, make_peer
from bench.workloads import throughput

Json = dict[str, Any]


def _pod(name: str, gang: str, scheduler: str, node: str | None = None) -> Json:
    spec: Json = {"schedulerName": scheduler, "containers": []}
    if node:
        spec["nodeName"] = node
    return {
        "metadata": {"name": name, "namespace": "bench", "uid": name, "labels": {GANG_LABEL: gang}},
        "spec": spec,
    }


def test_a_gang_left_partial_is_found_for_whichever_peer() -> None:
    workload = throughput(8, 4, 2)  # two gangs of 4 (minMember 4)
    first, second = (g.name for g in workload.gangs)
    for name in ("ours", "default"):
        peer = make_peer(name)
        recorder = Recorder(cast(Kube, None), "bench")
        scheduler = peer.scheduler_name
        for index in range(4):
            recorder._apply("ADDED", _pod(f"{first}-{index}", first, scheduler))
            recorder._apply("MODIFIED", _pod(f"{first}-{index}", first, scheduler, "n1"))
            recorder._apply("ADDED", _pod(f"{second}-{index}", second, scheduler))
        recorder._apply("MODIFIED", _pod(f"{second}-0", second, scheduler, "n1"))
        recorder.t0 -= 60  # the trial went on for a minute
        [broken] = trial.partial_gangs(recorder, workload, peer, "bench")
        assert broken.gang == ("bench", second)
        assert (broken.bound, broken.min_member) == (1, 4)
        # Another scheduler's pods are not this peer's.
        assert not trial.partial_gangs(recorder, workload, make_peer("reference"), "bench")
