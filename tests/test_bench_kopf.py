"""The kopf suite: its waiting groups, the peers' order, its table against ours-kopf-off."""

from __future__ import annotations

import json
from pathlib import Path

from bench import kopf_cost, peers, runner


def test_the_kopf_suite_alternates_the_peers_with_a_group_per_two_pods() -> None:
    suite = runner.build_suite("kopf", ["ours-kopf-off", "ours"], ["high"], "small", rounds=2,
                               pods=600)  # fmt: skip
    assert [t.peer for t in suite.trials] == ["ours-kopf-off", "ours", "ours", "ours-kopf-off"]
    workload = suite.trials[0].workload
    waiting = [g for g in workload.gangs if g.name.startswith("w")]
    assert len(waiting) == 300
    assert all(float(g.cpu) > workload.nodes.cpu_cores for g in waiting)
    assert isinstance(peers.make_peer("ours-kopf-off"), peers.Ours)


def test_the_table_gives_kopfs_part_as_the_difference_to_ours_kopf_off(tmp_path: Path) -> None:
    def trial(peer: str, rss: float, cpu: float, writes: int) -> dict[str, object]:
        figures = {
            "gangs_waiting": 90,
            "gangs_bound": 10,
            "status_writes_per_bound_gang": 3.0,
            "peer_requests": {f"patch {kopf_cost.STATUS_WRITES}": writes, "watch pods": 1},
        }
        return {"workload": "kopf", "ok": True, "peer": peer, "params": {"waiting": 90},
                "figures": figures, "cost": {"peak_rss_mib": rss, "cpu_s": cpu}}  # fmt: skip

    results = tmp_path / "kopf.json"
    trials = [trial("ours-kopf-off", 150, 4.0, 200), trial("ours", 195, 6.0, 250)]
    results.write_text(json.dumps({"trials": trials}))
    table = kopf_cost.report([results])
    assert "| 90 | ours | 1 | 195 | 6.0 | 2.50 | 3.00 | +45 | 1.50x |" in table
    assert "| 90 | ours-kopf-off | 1 | 150 | 4.0 | 2.00 | 3.00 |  |  |" in table
