"""The idle suite: its peers and waiting counts, gangs no filled node can take, its table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import idle, peers, runner


def test_the_idle_suite_runs_ours_default_and_native_with_100_and_400_gangs_waiting() -> None:
    suite = runner.build_suite("idle", [*peers.ALL_PEERS, "ours@HEAD~1"], ["high"], "small")
    assert sorted({t.peer for t in suite.trials}) == ["default", "native", "ours", "ours@HEAD~1"]
    assert sorted({len(t.workload.gangs) for t in suite.trials}) == [100, 400]
    workload = suite.trials[0].workload
    free = workload.nodes.cpu_cores * (1 - workload.params["fill"])
    assert all(float(g.cpu) > free and g.min_member == g.size for g in workload.gangs)


def test_a_workload_where_a_member_would_fit_is_refused() -> None:
    with pytest.raises(ValueError, match="would fit"):
        idle.idle(fill=0.5)


def test_the_table_gives_each_peer_its_ratio_to_native(tmp_path: Path) -> None:
    def trial(peer: str, quiet: float, churn: float) -> dict[str, object]:
        figures = {"quiet_cpu_s": quiet, "churn_cpu_s": churn}
        return {"workload": "idle", "ok": True, "peer": peer, "params": {"waiting": 100},
                "figures": figures}  # fmt: skip

    results = tmp_path / "idle.json"
    results.write_text(
        json.dumps({"trials": [trial("native", 0.5, 1.0), trial("ours", 0.25, 0.5)]})
    )
    table = idle.report([results])
    assert "| 100 | ours | 0.25 | 0.50 | 0.50x | 0.50x |" in table
    assert "| 100 | native | 0.50 | 1.00 | 1.00x | 1.00x |" in table
