"""runtime/device_writer.py: a gang's claims written before any member, all or none."""

from __future__ import annotations

from coscheduler.api.devices import DeviceClassInfo, ResourceClaimInfo, ResourceSliceInfo
from coscheduler.core.devices import ClaimWrite, DeviceIndex
from coscheduler.runtime.device_writer import DELETE_PROTECTION, DeviceWriter
from coscheduler.runtime.kube import MERGE_PATCH, KubeClient
from tests.builders import node
from tests.dra import claim, device_class, exactly, gpu_slice
from tests.runtime.apiserver import FakeApiServer, RecordedRequest, Reply, status_error

PATH = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims"


def _writes(*names: str, shared_by: int = 1) -> tuple[ClaimWrite, ...]:
    index = DeviceIndex()
    index.upsert_slice(ResourceSliceInfo.from_object(gpu_slice("n1", 8)))
    index.upsert_class(DeviceClassInfo.from_object(device_class()))
    pods = []
    for name in names:
        raw = claim(name, {"name": "gpus", "exactly": exactly(2)})
        raw["metadata"]["resourceVersion"] = "7"
        index.upsert_claim(ResourceClaimInfo.from_object(raw))
        for sharer in range(shared_by):
            uid = f"{name}-pod-{sharer}"
            index.assume(index.fit(uid, [f"default/{name}"], node("n1")))
            pods.append((f"{name}-pod-{sharer}", uid))
    return index.writes_for(pods)


def _answer(request: RecordedRequest) -> Reply:
    body = dict(request.body)
    body["metadata"] = {**body.get("metadata", {}), "resourceVersion": "8"}
    return Reply(200, body)


async def test_a_new_allocation_gets_the_finalizer_then_its_status(
    apiserver: FakeApiServer, kube: KubeClient
) -> None:
    apiserver.on("PATCH", f"{PATH}/a", _answer)
    apiserver.on("PATCH", f"{PATH}/a/status", _answer)
    assert await DeviceWriter(kube).write(_writes("a", shared_by=2)) is None
    (finalizer,) = apiserver.requests_to("PATCH", f"{PATH}/a")
    assert finalizer.content_type == MERGE_PATCH
    assert finalizer.body["metadata"] == {
        "finalizers": [DELETE_PROTECTION],
        "resourceVersion": "7",
    }
    (status,) = apiserver.requests_to("PATCH", f"{PATH}/a/status")
    assert status.body["metadata"] == {"resourceVersion": "8"}
    written = status.body["status"]
    assert [r["device"] for r in written["allocation"]["devices"]["results"]] == [
        "gpu-0",
        "gpu-1",
    ]
    terms = written["allocation"]["nodeSelector"]["nodeSelectorTerms"]
    assert terms == [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}
    ]
    assert [c["uid"] for c in written["reservedFor"]] == ["a-pod-0", "a-pod-1"]
    assert all(c["resource"] == "pods" for c in written["reservedFor"])


async def test_a_failed_write_undoes_the_ones_done(
    apiserver: FakeApiServer, kube: KubeClient
) -> None:
    apiserver.on("PATCH", f"{PATH}/a", _answer)
    apiserver.on("PATCH", f"{PATH}/a/status", _answer)
    apiserver.on("PATCH", f"{PATH}/b", _answer)
    apiserver.on("PATCH", f"{PATH}/b/status", lambda _r: status_error(409, "Conflict"))
    why = await DeviceWriter(kube).write(_writes("a", "b"))
    assert why is not None
    assert why.startswith("resourceclaim default/b")
    undo = apiserver.requests_to("PATCH", f"{PATH}/a/status")[-1]
    assert undo.body == {"status": {"reservedFor": None, "allocation": None}}
