"""A volume's zone and region labels keep its pods in its zone, as VolumeZone does."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from coscheduler.api.volume_zone import TOPOLOGY_LABELS, zone_terms
from coscheduler.api.volumes import ClaimInfo, VolumeInfo
from coscheduler.core import Scheduler
from coscheduler.core.filters.affinity import term_matches
from tests.builders import Clock, node, pod

ZONE = "topology.kubernetes.io/zone"
BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
GA_OF = {
    BETA_ZONE: ZONE,
    "failure-domain.beta.kubernetes.io/region": "topology.kubernetes.io/region",
}


def volume_zone_allows(volume: dict[str, str], node_labels: dict[str, str]) -> bool:
    """VolumeZone's filter, written out as kube-scheduler 1.37 states it."""
    if not any(key in node_labels for key in TOPOLOGY_LABELS):
        return True
    for key in TOPOLOGY_LABELS:
        if key not in volume:
            continue
        zones = {zone.strip() for zone in volume[key].split("__")}
        if "" in zones:
            continue
        value = node_labels.get(key, node_labels.get(GA_OF.get(key, key)))
        if value is None or value not in zones:
            return False
    return True


values = st.sampled_from(["a", "b", "c"])
volume_labels = st.dictionaries(
    st.sampled_from(TOPOLOGY_LABELS),
    st.sampled_from(["a", "b", "a__b", " b__c", "a__"]),
    max_size=3,
)
node_labels = st.dictionaries(st.sampled_from(TOPOLOGY_LABELS), values, max_size=3)


@given(volume_labels, node_labels)
def test_zone_terms_allow_exactly_the_nodes_volume_zone_allows(
    volume: dict[str, str], labels: dict[str, str]
) -> None:
    terms = zone_terms(volume)
    allowed = terms is None or any(term_matches(term, labels, "n") for term in terms)
    assert allowed == volume_zone_allows(volume, labels)


def test_a_pod_goes_to_the_zone_of_its_labelled_volume() -> None:
    made = Scheduler(Clock())
    made.upsert_node(node("n-a", labels={ZONE: "a"}))
    made.upsert_node(node("n-b", labels={BETA_ZONE: "b"}))
    labelled = {"metadata": {"name": "pv", "labels": {BETA_ZONE: "b"}}, "spec": {}}
    made.volumes.upsert_volume(VolumeInfo.from_object(labelled))
    made.volumes.upsert_claim(
        ClaimInfo.from_object(
            {
                "metadata": {"name": "data", "namespace": "default"},
                "spec": {"volumeName": "pv", "storageClassName": ""},
            }
        )
    )
    volumes = [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]
    made.upsert_pod(pod("w", spec_extra={"volumes": volumes}))
    decision = made.next_decision()
    assert decision is not None
    assert [(b.name, b.node) for b in decision.bindings] == [("w", "n-b")]
