"""The node features a pod needs, as kube-scheduler's NodeDeclaredFeatures infers them.

Kubernetes 1.37 (``NodeDeclaredFeatures``, GA) has each kubelet list the
features it supports in ``status.declaredFeatures``, and kube-scheduler sends
a pod that uses one only to nodes that declare it. The features inferred from
a pod's spec for scheduling in 1.37 (``k8s.io/component-helpers/nodedeclaredfeatures``):

- ``RestartAllContainersOnContainerExits``: a container's (or init
  container's) ``restartPolicyRules`` has the action ``RestartAllContainers``;
- ``UserNamespacesHostNetworkSupport``: ``hostNetwork`` with ``hostUsers: false``;
- ``VolumeBindMountOptions``: a ``volumeMounts`` entry with ``bindMountOptions``.

The others in the registry need a node only for updates (resizes), not to schedule.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from coscheduler.api.fields import FieldReader

__all__ = ["required_node_features"]

RESTART_ALL: Final = "RestartAllContainersOnContainerExits"
HOST_NETWORK_USER_NAMESPACE: Final = "UserNamespacesHostNetworkSupport"
BIND_MOUNT_OPTIONS: Final = "VolumeBindMountOptions"


def required_node_features(reader: FieldReader, spec: Mapping[str, Any]) -> tuple[str, ...]:
    """The features a node must declare to take the pod, sorted; () for most pods."""
    needed: set[str] = set()
    for kind in ("containers", "initContainers"):
        items = spec.get(kind)
        if type(items) is list and all(type(c) is dict and _plain(c) for c in items):
            continue  # nearly every pod: nothing here needs a feature
        for index, item in enumerate(reader.items(items, f"spec.{kind}")):
            where = f"spec.{kind}[{index}]"
            container = reader.mapping(item, where)
            rules = container.get("restartPolicyRules")
            if rules is not None and _restarts_all(reader, rules, f"{where}.restartPolicyRules"):
                needed.add(RESTART_ALL)
            mounts = container.get("volumeMounts")
            for number, mount in enumerate(reader.items(mounts, f"{where}.volumeMounts")):
                here = f"{where}.volumeMounts[{number}]"
                options = reader.mapping(mount, here).get("bindMountOptions")
                if reader.items(options, f"{here}.bindMountOptions"):
                    needed.add(BIND_MOUNT_OPTIONS)
    if spec.get("hostNetwork") is True and spec.get("hostUsers") is False:
        needed.add(HOST_NETWORK_USER_NAMESPACE)
    return tuple(sorted(needed))


def _plain(container: dict[str, Any]) -> bool:
    """A container with no restart rules and no mount with options (read as JSON, unchecked)."""
    if "restartPolicyRules" in container:
        return False
    mounts = container.get("volumeMounts")
    if mounts is None:
        return True
    return type(mounts) is list and all(
        type(m) is dict and "bindMountOptions" not in m for m in mounts
    )


def _restarts_all(reader: FieldReader, rules: object, where: str) -> bool:
    """Whether a ``restartPolicyRules`` list has the action ``RestartAllContainers``."""
    found = False
    for number, rule in enumerate(reader.items(rules, where)):
        here = f"{where}[{number}]"
        action = reader.text(reader.mapping(rule, here).get("action"), f"{here}.action")
        found = found or action == "RestartAllContainers"
    return found
