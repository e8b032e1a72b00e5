"""runtime/handlers/devices.py: the DRA kinds fed into the core; what cannot be read, reported."""

from __future__ import annotations

from coscheduler.core.scheduler import Scheduler
from coscheduler.runtime.handlers.base import InvalidObject
from coscheduler.runtime.handlers.devices import DeviceHandlers
from tests.dra import claim, device_class, gpu_slice


def test_the_informers_feed_the_core_and_report_what_they_cannot_read() -> None:
    complaints: list[InvalidObject] = []

    class Told:
        def invalid(self, obj: InvalidObject) -> None:
            complaints.append(obj)

    scheduler = Scheduler(clock=lambda: 0.0)
    handlers = DeviceHandlers(scheduler, Told())
    handlers.slices.upsert(gpu_slice("n1", 2))
    handlers.classes.upsert(device_class())
    handlers.claims.upsert(claim("c"))
    index = scheduler.snapshot.devices
    assert "default/c" in index.claims
    assert "gpu" in index.classes
    assert index.room_on("n1") == 2
    bad = gpu_slice("n1", 1)
    bad["spec"]["sharedCounters"] = [{"name": "x"}]
    handlers.slices.upsert(bad)  # the slice is gone from what the core uses
    assert index.room_on("n1") == 0
    assert "spec.sharedCounters" in complaints[0].message
    handlers.claims.replace([])
    assert index.claims == {}
