"""Claims, volumes and storage classes are read once; a malformed one names its field."""

from __future__ import annotations

import pytest

from coscheduler.api.pod import PodInfo
from coscheduler.api.volumes import ClaimInfo, StorageClassInfo, VolumeInfo, VolumeParseError
from tests.builders import pod_object


def test_a_claim_reads_its_volume_class_modes_and_selected_node() -> None:
    claim = ClaimInfo.from_object(
        {
            "metadata": {
                "name": "data",
                "namespace": "ml",
                "annotations": {"volume.kubernetes.io/selected-node": "n1"},
            },
            "spec": {"volumeName": "pv-1", "accessModes": ["ReadWriteOncePod"]},
        }
    )
    assert (claim.key, claim.volume_name, claim.storage_class) == ("ml/data", "pv-1", None)
    assert claim.once_per_pod
    assert claim.selected_node == "n1"


def test_a_volume_reads_its_node_affinity() -> None:
    term = {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}
    volume = VolumeInfo.from_object(
        {
            "metadata": {"name": "pv"},
            "spec": {"nodeAffinity": {"required": {"nodeSelectorTerms": [term]}}},
        }
    )
    assert volume.node_affinity is not None
    assert volume.node_affinity[0].match_expressions[0].values == ("a",)


def test_a_storage_class_reads_its_binding_mode_and_default_mark() -> None:
    storage_class = StorageClassInfo.from_object(
        {
            "metadata": {
                "name": "local",
                "annotations": {"storageclass.kubernetes.io/is-default-class": "true"},
            },
            "volumeBindingMode": "WaitForFirstConsumer",
        }
    )
    assert storage_class.wait_for_first_consumer
    assert storage_class.default


def test_a_malformed_volume_names_the_field() -> None:
    with pytest.raises(VolumeParseError, match=r"spec\.nodeAffinity\.required\.nodeSelectorTerms"):
        VolumeInfo.from_object(
            {
                "metadata": {"name": "pv"},
                "spec": {"nodeAffinity": {"required": {"nodeSelectorTerms": 3}}},
            }
        )


def test_a_pod_lists_its_claims_and_its_ephemeral_ones() -> None:
    raw = pod_object("w-0")
    raw["spec"]["volumes"] = [
        {"name": "tmp", "emptyDir": {}},
        {"name": "data", "persistentVolumeClaim": {"claimName": "data"}},
        {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}},
    ]
    assert PodInfo.from_object(raw).claims == ("data", "w-0-scratch")
