"""The dra suite: its peers, its gangs' GPU demand, and members claiming from a template."""

from __future__ import annotations

from bench import peers, runner, submit
from bench import workloads as wl


def test_the_dra_suite_runs_ours_beside_kube_scheduler_with_demand_above_the_cluster() -> None:
    suite = runner.build_suite("dra", list(peers.ALL_PEERS), ["high"], "small")
    assert sorted(t.peer for t in suite.trials) == ["default", "native", "ours"]
    workload = suite.trials[0].workload
    assert isinstance(workload, wl.Dra)
    gpus = workload.params["nodes"] * workload.params["gpus_per_node"]
    asked = sum(g.size * g.gpus for g in workload.gangs)
    assert asked >= 2 * gpus
    assert all(g.job and g.gpus == 2 and g.min_member == g.size for g in workload.gangs)


def test_every_peer_gives_a_member_the_same_claim_from_the_template() -> None:
    gang = peers.Gang("j", 4, 4, gpus=2, job=True)
    for peer in (peers.Ours(), peers.Default(), peers.Native()):
        pod = submit.pod_template(peer, gang)
        assert pod["spec"]["resourceClaims"] == [
            {"name": "gpus", "resourceClaimTemplateName": "gpus-2"}
        ]
        assert pod["spec"]["containers"][0]["resources"]["claims"] == [{"name": "gpus"}]
    assert "resourceClaims" not in submit.pod_template(peers.Ours(), peers.Gang("c", 2, 2))["spec"]
