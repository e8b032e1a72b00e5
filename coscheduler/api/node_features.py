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
        for index, item in enumerate(reader.items(spec.get(kind), f"spec.{kind}")):
            where = f"spec.{kind}[{index}]"
            container = reader.mapping(item, where)
            rules = container.get("restartPolicyRules")
            if rules is not None and _restarts_all(reader, rules, f"{where}.restartPolicyRules"):
                needed.add(RESTART_ALL)
            mounts = container.get("volumeMounts")
            # Most pods mount a token volume: look closer only at a mount with options.
            if isinstance(mounts, list) and all(
                isinstance(m, Mapping) and not m.get("bindMountOptions") for m in mounts
            ):
                continue
            for number, mount in enumerate(reader.items(mounts, f"{where}.volumeMounts")):
                here = f"{where}.volumeMounts[{number}]"
                options = reader.mapping(mount, here).get("bindMountOptions")
                if reader.items(options, f"{here}.bindMountOptions"):
                    needed.add(BIND_MOUNT_OPTIONS)
    if spec.get("hostNetwork") is True and spec.get("hostUsers") is False:
        needed.add(HOST_NETWORK_USER_NAMESPACE)
    return tuple(sorted(needed))


def _restarts_all(reader: FieldReader, rules: object, where: str) -> bool:
    """Whether a ``restartPolicyRules`` list has the action ``RestartAllContainers``."""
    found = False
    for number, rule in enumerate(reader.items(rules, where)):
        here = f"{where}[{number}]"
        action = reader.text(reader.mapping(rule, here).get("action"), f"{here}.action")
        found = found or action == "RestartAllContainers"
    return found
