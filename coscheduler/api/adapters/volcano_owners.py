"""Plain pods under Volcano's scheduler name, grouped by their owner as Volcano's controller
groups them.

Volcano's PodGroup controller gives every pod of ``schedulerName: volcano``
that names no group a PodGroup of ``scheduling.volcano.sh`` named
``podgroup-<uid of its controlling owner>``; the owner (a ReplicaSet, and so
a Deployment, whose annotations it copies; a StatefulSet; a Job) asks for a
gang with ``scheduling.volcano.sh/group-min-member: "N"``, the group's
``minMember``. The group's ``queue`` is the pod template's
``scheduling.volcano.sh/queue-name`` annotation, its ``priorityClassName``
the template's.

coscheduler, run under Volcano's name, reads such an owner into a
:class:`~coscheduler.api.owners.GangOwner` whose group is that Volcano
PodGroup: its pods are members through their owner reference, and the
controller makes the PodGroup as it makes a Job's (``controller/jobgroups.py``).
An owner without the annotation asks for no gang: its pods are placed one by
one, as Volcano places a group of one. ``/group-min-resources`` is not read,
as Volcano's controller does not read it either (it inherits it as an
annotation only).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any, Final

from pydantic import ValidationError

from coscheduler.api import validation
from coscheduler.api.adapters import apis
from coscheduler.api.labels import VOLCANO_QUEUE_ANNOTATION
from coscheduler.api.owners import GangOwner, owner_identity
from coscheduler.api.podgroup import MAX_MIN_MEMBER, PodGroupSpec

__all__ = ["MIN_MEMBER_ANNOTATION", "OWNER_KINDS", "group_name", "volcano_owner"]

#: On the owner: the minimum members of the group Volcano's controller makes for its pods.
MIN_MEMBER_ANNOTATION: Final = "scheduling.volcano.sh/group-min-member"
#: The owners whose annotation Volcano's controller reads, by kind: their apiVersion.
OWNER_KINDS: Final[Mapping[str, str]] = {
    "ReplicaSet": "apps/v1",
    "StatefulSet": "apps/v1",
    "Job": "batch/v1",
}
_PREFIX: Final = "podgroup-"


def group_name(owner_uid: str) -> str:
    """The PodGroup Volcano's controller makes for the pods of the owner of that uid."""
    return f"{_PREFIX}{owner_uid}"


def volcano_owner(raw: Mapping[str, Any], kind: str) -> GangOwner | None:
    """Read an owner of ``kind`` (:data:`OWNER_KINDS`); None when it has no namespace, name
    or uid (nothing can refer to it)."""
    identity = owner_identity(raw)
    if identity is None:
        return None
    namespace, name, uid = identity
    meta = _mapping(raw.get("metadata"))
    template = _mapping(_mapping(raw.get("spec")).get("template"))
    pod_spec = _mapping(template.get("spec"))
    scheduler = pod_spec.get("schedulerName")
    owner = GangOwner(
        kind=kind,
        namespace=namespace,
        name=name,
        uid=uid,
        scheduler_name=scheduler if isinstance(scheduler, str) else "",
        deleting=meta.get("deletionTimestamp") is not None,
        api=apis.VOLCANO,
        api_version=OWNER_KINDS[kind],
        group=group_name(uid),
        annotation=MIN_MEMBER_ANNOTATION,
    )
    value = _mapping(meta.get("annotations")).get(MIN_MEMBER_ANNOTATION)
    if value is None:
        return owner
    owner = replace(owner, wants_gang=True)
    try:
        count = int(str(value).strip())
    except ValueError:
        count = -1
    if not 1 <= count <= MAX_MIN_MEMBER:
        return replace(
            owner,
            problem=f"annotation {MIN_MEMBER_ANNOTATION}={value!r} is not a member count "
            f"from 1 to {MAX_MIN_MEMBER}",
        )
    fields: dict[str, Any] = {"min_member": count}
    queue = _mapping(_mapping(template.get("metadata")).get("annotations")).get(
        VOLCANO_QUEUE_ANNOTATION
    )
    if queue:
        fields["queue"] = queue
    if pod_spec.get("priorityClassName"):
        fields["priority_class_name"] = pod_spec["priorityClassName"]
    try:
        return replace(owner, spec=PodGroupSpec(**fields))
    except ValidationError as error:
        words = "; ".join(validation.problems(error))
        return replace(owner, problem=f"the PodGroup made for its pods would be invalid: {words}")


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}
