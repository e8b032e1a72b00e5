"""The deciding side imports what a plain cluster uses; the rest loads with its first need (#28).

Each check runs in a fresh interpreter: this one has imported everything already.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

#: Loaded only when a pod, a group or a claim first needs them.
LAZY = (
    "cel_expr_python",
    "coscheduler.core.domains",
    "coscheduler.core.search",
    "coscheduler.core.device_cel",
    "coscheduler.core.device_search",
    "coscheduler.core.preemption.rules",
    "coscheduler.core.preemption.search",
    "coscheduler.core.victims",
    "coscheduler.api.volumes",
)

_STAGES = """
import dataclasses, json, sys

LAZY = {lazy!r}


def loaded():
    return sorted(m for m in LAZY if m in sys.modules)


stages = {{}}
import coscheduler.app, coscheduler.operator

stages["import"] = loaded()

from coscheduler.core import Scheduler, SchedulerSettings
from coscheduler.core.preemption import Mode, PreemptionSettings
from tests.builders import Clock, decide, gang, group, node, take_orders

# A plain cluster: a gang that fits, bound in the first decision.
plain = Scheduler(Clock(), SchedulerSettings(preemption=PreemptionSettings(mode=Mode.ON)))
for i in range(2):
    plain.upsert_node(node(f"n{{i}}", cpu="8"))
plain.upsert_group(group("g", 4))
for member in gang("g", 4, cpu="2"):
    plain.upsert_pod(member)
decision = decide(plain)
assert decision is not None and len(decision.bindings) == 4, decision
stages["plain decision"] = loaded()

# A gang kept in one zone: the domains load and place it in one.
plain.upsert_group(dataclasses.replace(group("zoned", 2), topology_levels=("zone",)))
for i in range(2):
    plain.upsert_node(node(f"z{{i}}", cpu="8", labels={{"zone": "a"}}))
for member in gang("zoned", 2, cpu="8"):
    plain.upsert_pod(member)
decision = decide(plain)
assert decision is not None and {{b.node for b in decision.bindings}} == {{"z0", "z1"}}, decision
stages["topology"] = loaded()

# A gang that fits only once a lower one is evicted: the search loads and finds the plan.
full = Scheduler(Clock(), SchedulerSettings(preemption=PreemptionSettings(mode=Mode.ON)))
for i in range(2):
    full.upsert_node(node(f"n{{i}}", cpu="8"))
full.upsert_group(group("low", 4, priority=1))
for i, member in enumerate(gang("low", 4, cpu="4", priority=1)):
    full.upsert_pod(
        dataclasses.replace(member, node_name=f"n{{i // 2}}", phase="Running", started=900.0)
    )
full.upsert_group(group("urgent", 2, priority=100))
for member in gang("urgent", 2, cpu="8", priority=100):
    full.upsert_pod(member)
decide(full)
(order,) = take_orders(full)
assert order.evict and len(order.plan.pods) == 4, order
stages["preemption"] = loaded()

# A member's claim: the device search and its CEL selectors load and allocate.
from coscheduler.api.devices import DeviceClassInfo, ResourceClaimInfo, ResourceSliceInfo
from coscheduler.core.devices import DeviceIndex
from tests.dra import claim, device_class, gpu_slice

index = DeviceIndex()
index.upsert_slice(ResourceSliceInfo.from_object(gpu_slice("n0", 2)))
index.upsert_class(DeviceClassInfo.from_object(device_class()))
info = ResourceClaimInfo.from_object(claim("c"))
index.upsert_claim(info)
found = index.fit("p", [info.key], node("n0"))
assert [len(a.results) for a in found.allocations] == [1], found
stages["claim"] = loaded()
print(json.dumps(stages))
"""


def _stages() -> dict[str, list[str]]:
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run(
        [sys.executable, "-P", "-c", _STAGES.format(lazy=LAZY)],
        capture_output=True, text=True, check=True, env={"PYTHONPATH": str(root)},
    ).stdout  # fmt: skip
    stages: dict[str, list[str]] = json.loads(out)
    return stages


def test_the_deciding_side_loads_preemption_devices_and_volumes_on_first_need() -> None:
    stages = _stages()
    assert stages["import"] == []
    assert stages["plain decision"] == []
    assert stages["topology"] == ["coscheduler.core.domains"]
    preemption = {
        "coscheduler.core.preemption.rules",
        "coscheduler.core.preemption.search",
        "coscheduler.core.victims",
    }
    assert preemption <= set(stages["preemption"])
    devices = {"cel_expr_python", "coscheduler.core.device_cel", "coscheduler.core.device_search"}
    assert not devices & set(stages["preemption"])
    assert devices <= set(stages["claim"])
    assert "coscheduler.api.volumes" not in stages["claim"]
