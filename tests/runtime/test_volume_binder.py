"""runtime/volume_binder.py: a gang's claims get their volumes, and are bound, before any member."""

from __future__ import annotations

from collections.abc import Sequence

from coscheduler.core.statement import VolumeAction
from coscheduler.runtime.kube import MERGE_PATCH, KubeClient
from coscheduler.runtime.volume_binder import VolumeBinder
from tests.builders import Clock
from tests.runtime.apiserver import FakeApiServer, RecordedRequest, Reply, status_error

STATIC = VolumeAction("train", "data-0", "uid-data-0", "node-a", "pv-a")
PROVISIONED = VolumeAction("train", "data-1", "uid-data-1", "node-b", None)
VOLUME_PATH = "/api/v1/persistentvolumes/pv-a"
CLAIM_PATH = "/api/v1/namespaces/train/persistentvolumeclaims/data-1"


def echo(request: RecordedRequest) -> Reply:
    return Reply(200, request.body)


class Claims:
    """The watched claims: bound from look ``bound_at`` on, as the volume controller would."""

    def __init__(self, bound_at: int) -> None:
        self.bound_at = bound_at
        self.asked: list[list[str]] = []

    def __call__(self, keys: Sequence[str]) -> bool:
        self.asked.append(list(keys))
        return len(self.asked) >= self.bound_at


async def test_a_volume_is_promised_and_a_claim_annotated_then_the_binder_waits_for_both(
    apiserver: FakeApiServer, kube: KubeClient
) -> None:
    apiserver.on("PATCH", VOLUME_PATH, echo)
    apiserver.on("PATCH", CLAIM_PATH, echo)
    claims = Claims(bound_at=2)
    binder = VolumeBinder(kube, bound=claims, timeout_seconds=30, clock=Clock())
    assert await binder.prepare([STATIC, PROVISIONED]) is None
    assert len(claims.asked) == 2  # waited for them, then went on

    (promise,) = apiserver.requests_to("PATCH", VOLUME_PATH)
    assert promise.content_type == MERGE_PATCH
    assert promise.body["spec"]["claimRef"] == {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "namespace": "train",
        "name": "data-0",
        "uid": "uid-data-0",
    }
    (annotation,) = apiserver.requests_to("PATCH", CLAIM_PATH)
    assert annotation.body == {
        "metadata": {"annotations": {"volume.kubernetes.io/selected-node": "node-b"}}
    }
    assert claims.asked[-1] == ["train/data-0", "train/data-1"]


async def test_claims_not_bound_in_time_are_named_and_nothing_more_is_done(
    apiserver: FakeApiServer, kube: KubeClient
) -> None:
    apiserver.on("PATCH", VOLUME_PATH, echo)
    clock = Clock()

    def never(keys: Sequence[str]) -> bool:
        clock.advance(11)  # each look at the claims finds them unbound, 11 s later
        return False

    binder = VolumeBinder(kube, bound=never, timeout_seconds=30, clock=clock)
    why = await binder.prepare([STATIC])
    assert why == "claims not bound within 30 s: train/data-0"


async def test_a_refused_patch_is_the_answer_and_later_actions_are_not_tried(
    apiserver: FakeApiServer, kube: KubeClient
) -> None:
    apiserver.on("PATCH", VOLUME_PATH, status_error(409, "Conflict", "pv-a is bound elsewhere"))
    apiserver.on("PATCH", CLAIM_PATH, echo)
    binder = VolumeBinder(kube, bound=lambda keys: True, timeout_seconds=30, clock=Clock())
    why = await binder.prepare([STATIC, PROVISIONED])
    assert why is not None
    assert why.startswith("claim train/data-0:")
    assert "pv-a is bound elsewhere" in why
    assert apiserver.requests_to("PATCH", CLAIM_PATH) == []
