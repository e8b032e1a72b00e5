"""The simulator keeps gangs in one domain, or apart, as the scheduler does."""

from __future__ import annotations

import yaml

from coscheduler.sim.model import parse_scenario
from coscheduler.sim.replay import Policy, replay
from coscheduler.sim.report import summarize

SCENARIO = """
cluster:
  nodes:
    - {name: a, count: 2, allocatable: {cpu: "4"}, labels: {rack: a}}
    - {name: b, count: 4, allocatable: {cpu: "4"}, labels: {rack: b}}
workload:
  gangs:
    - {name: ring, count: 6, size: 4, requests: {cpu: "2"}, runSeconds: 60, intervalSeconds: 5,
       topology: {required: rack}}
    - {name: apart, count: 3, size: 3, requests: {cpu: "1"}, runSeconds: 30, intervalSeconds: 7,
       onePer: kubernetes.io/hostname}
"""


def test_gangs_kept_in_one_rack_start_only_within_one_and_all_finish() -> None:
    scenario = parse_scenario(yaml.safe_load(SCENARIO), "test")
    labels = {node.name: node.labels for node in scenario.nodes}
    result = replay(scenario, Policy.GANG)
    rings = [o for o in result.gangs if o.gang.name.startswith("ring")]
    assert all(o.finish is not None for o in result.gangs)
    assert all(len({labels[n]["rack"] for n in o.nodes}) == 1 for o in rings)
    apart = [o for o in result.gangs if o.gang.name.startswith("apart")]
    assert all(len(o.nodes) == 3 for o in apart)  # one member per node
    summary = summarize(result, domain_key="rack", node_labels=labels)
    assert summary.within_one_domain == 6 / 9  # every ring; no "apart" gang (3 nodes each)
