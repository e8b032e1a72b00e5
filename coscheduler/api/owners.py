"""Jobs that ask for a gang by annotation, and the PodGroup each one gets.

A Job whose pod template names our scheduler and that carries

    scheduling.sigs.k8s.io/gang: "true"   (or a member count, e.g. "4")

gets a PodGroup named after it and owned by it; its pods belong to that group
through their controlling owner reference, with no label. This module reads a
Job's raw object into a :class:`GangOwner`: whether it asks for a gang, the
spec its PodGroup should have, or what is wrong with the annotation, in words
that say what to fix. It never raises on a malformed Job.

Only ``batch/v1`` Jobs are gang owners (``GANG_OWNER_KINDS``). A ReplicaSet's
pods are replicas a Deployment replaces one by one in a rolling update; a gang
there would hold the new ReplicaSet's first pod until all its pods exist, which
the Deployment's surge limit never allows. A StatefulSet's default
``OrderedReady`` policy creates pod N+1 only once pod N runs, so a gang of more
than one would never gather; with ``Parallel`` it could work, and a PodGroup and
label do that today. Under Volcano's scheduler name, Volcano's own owner
annotation makes ReplicaSets and StatefulSets owners all the same, as Volcano's
controller does (:mod:`~coscheduler.api.adapters.volcano_owners`).

The PodGroup's ``minMember`` follows the Job: ``spec.parallelism`` (1 when
unset), but never more pods than the Job still has to complete
(``spec.completions`` less ``status.succeeded``), so the last wave of a Job
whose completions are not a multiple of its parallelism is not held forever.
An Indexed Job is the same: its pods of one wave are the gang. A count in the
annotation replaces parallelism (it may not exceed it: the Job would never run
that many pods at once), and is capped by the remaining completions the same
way.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Final

from pydantic import ValidationError

from coscheduler.api import validation
from coscheduler.api.adapters import apis
from coscheduler.api.adapters.apis import GroupApi
from coscheduler.api.labels import GROUP
from coscheduler.api.podgroup import MAX_MIN_MEMBER, PodGroupSpec

__all__ = [
    "GANG_ANNOTATION",
    "GANG_OWNER_KINDS",
    "JOB_API_VERSION",
    "PRIORITY_CLASS_ANNOTATION",
    "QUEUE_ANNOTATION",
    "GangOwner",
    "controller_reference",
    "owner_identity",
    "owns",
]

#: On a Job: "true" (minMember follows parallelism), a member count, or "false".
GANG_ANNOTATION: Final = f"{GROUP}/gang"
#: On a Job: the PodGroup's ``spec.queue``.
QUEUE_ANNOTATION: Final = f"{GROUP}/queue"
#: On a Job: the PodGroup's ``spec.priorityClassName`` (else the pod template's).
PRIORITY_CLASS_ANNOTATION: Final = f"{GROUP}/priority-class-name"

JOB_API_VERSION: Final = "batch/v1"
#: Controlling owner kinds whose pods join the owner's gang (see the module doc).
GANG_OWNER_KINDS: Final = frozenset({"Job"})

_TRUE: Final = frozenset({"true", "yes", "on"})
_FALSE: Final = frozenset({"false", "no", "off", ""})


@dataclass(frozen=True, slots=True)
class GangOwner:
    """One Job as far as gangs are concerned.

    ``wants_gang`` is True when the annotation is present and not "false",
    valid or not: the Job's pods are then members of the group named after it,
    and wait while ``problem`` says what to fix (no PodGroup is made for an
    invalid annotation; placing the pods one by one would go against what the
    annotation asks). ``spec`` is the PodGroup to make when all is well.
    """

    kind: str
    namespace: str
    name: str
    uid: str
    wants_gang: bool = False
    spec: PodGroupSpec | None = None
    problem: str | None = None
    #: ``spec.template.spec.schedulerName``; empty when unset (the default scheduler).
    scheduler_name: str = ""
    #: Being deleted: its PodGroup goes with it, none is made.
    deleting: bool = False
    #: The most pods it runs at once: ``spec.parallelism``, capped by the completions
    #: left; None when its sizes cannot be read.
    most_pods: int | None = None
    #: The API of the PodGroup made for it, the owner's own apiVersion, the group's name
    #: (None: the owner's) and the annotation that asks for it: ours for a Job, Volcano's
    #: for a plain pod's owner under Volcano's name (``api/adapters/volcano_owners.py``).
    api: GroupApi = apis.SIGS
    api_version: str = JOB_API_VERSION
    group: str | None = None
    annotation: str = GANG_ANNOTATION

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def group_name(self) -> str:
        """The PodGroup made for its pods: named after the Job, or as Volcano names it."""
        return self.group or self.name

    @classmethod
    def from_job(cls, raw: Mapping[str, Any]) -> GangOwner | None:
        """Read a Job; None when it has no namespace, name or uid (nothing can refer to it)."""
        identity = owner_identity(raw)
        if identity is None:
            return None
        namespace, name, uid = identity
        meta = _mapping(raw.get("metadata"))
        spec = _mapping(raw.get("spec"))
        template = _mapping(_mapping(spec.get("template")).get("spec"))
        scheduler = template.get("schedulerName")
        sizes = _job_sizes(spec, raw, None)
        owner = cls(
            kind="Job",
            namespace=namespace,
            name=name,
            uid=uid,
            scheduler_name=scheduler if isinstance(scheduler, str) and scheduler else "",
            deleting=meta.get("deletionTimestamp") is not None,
            most_pods=_most_pods(*sizes[:3]) if sizes[3] is None else None,
        )
        annotations = _mapping(meta.get("annotations"))
        value = annotations.get(GANG_ANNOTATION)
        if value is None:
            return owner
        if not isinstance(value, str):  # the API server only stores strings; be safe
            value = str(value)
        asked = value.strip().lower()
        if asked in _FALSE:
            return owner
        owner = replace(owner, wants_gang=True)
        problem = None
        count: int | None = None
        if asked not in _TRUE:
            count, problem = _member_count(value)
        parallelism, completions, succeeded, problem = _job_sizes(spec, raw, problem)
        if problem is None and count is not None and count > parallelism:
            problem = (
                f"annotation {GANG_ANNOTATION}={value!r} asks for {count} members, but "
                f"spec.parallelism is {parallelism}: the Job never runs {count} pods at once; "
                f"set the annotation to at most {parallelism}, or raise parallelism"
            )
        if problem is not None:
            return replace(owner, problem=problem)
        wanted = count if count is not None else parallelism
        if completions is not None:
            wanted = min(wanted, completions - succeeded)
        fields: dict[str, Any] = {"min_member": max(1, wanted)}
        queue = annotations.get(QUEUE_ANNOTATION)
        if queue is not None:
            fields["queue"] = queue
        priority_class = annotations.get(PRIORITY_CLASS_ANNOTATION) or template.get(
            "priorityClassName"
        )
        if priority_class is not None:
            fields["priority_class_name"] = priority_class
        try:
            return replace(owner, spec=PodGroupSpec(**fields))
        except ValidationError as error:
            words = "; ".join(validation.problems(error))
            return replace(
                owner,
                problem=f"the PodGroup made from the annotations {QUEUE_ANNOTATION} and "
                f"{PRIORITY_CLASS_ANNOTATION} (or the pod template's priorityClassName) would "
                f"be invalid: {words}",
            )

    def podgroup(self, api_version: str) -> dict[str, Any]:
        """The PodGroup to create: named after the Job, controlled by it (so collected with it)."""
        if self.spec is None:
            raise ValueError(f"Job {self.key} asks for no PodGroup")
        return {
            "apiVersion": api_version,
            "kind": "PodGroup",
            "metadata": {
                "name": self.group_name,
                "namespace": self.namespace,
                "labels": {"app.kubernetes.io/managed-by": "coscheduler"},
                "ownerReferences": [
                    {
                        "apiVersion": self.api_version,
                        "kind": self.kind,
                        "name": self.name,
                        "uid": self.uid,
                        "controller": True,
                    }
                ],
            },
            "spec": self.spec_fields(),
        }

    def spec_fields(self) -> dict[str, Any]:
        """The spec fields this Job decides, as the API spells them (a merge patch's body)."""
        if self.spec is None:
            return {}
        return {
            "minMember": self.spec.min_member,
            "queue": self.spec.queue,
            "priorityClassName": self.spec.priority_class_name,
        }


def owner_identity(raw: Mapping[str, Any]) -> tuple[str, str, str] | None:
    """An owner's namespace, name and uid; None when one is missing (nothing can refer to it)."""
    meta = _mapping(raw.get("metadata"))
    namespace, name, uid = meta.get("namespace"), meta.get("name"), meta.get("uid")
    if not (isinstance(namespace, str) and isinstance(name, str) and isinstance(uid, str)):
        return None
    if not (namespace and name and uid):
        return None
    return namespace, name, uid


def controller_reference(metadata: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """``metadata``'s controlling owner reference (an object has at most one), or None."""
    for ref in metadata.get("ownerReferences") or ():
        if isinstance(ref, Mapping) and ref.get("controller") is True:
            return ref
    return None


def owns(owner_uid: str, metadata: Mapping[str, Any]) -> bool:
    """Whether ``metadata``'s controlling owner reference is the object of ``owner_uid``."""
    ref = controller_reference(metadata)
    return ref is not None and ref.get("uid") == owner_uid


def _member_count(value: str) -> tuple[int | None, str | None]:
    try:
        count = int(value.strip())
    except ValueError:
        count = None
    if count is None or not 1 <= count <= MAX_MIN_MEMBER:
        return None, (
            f'annotation {GANG_ANNOTATION}={value!r} is not understood: write "true" (the '
            f"gang is the Job's parallelism), a member count from 1 to {MAX_MIN_MEMBER}, "
            f'or "false"'
        )
    return count, None


def _job_sizes(
    spec: Mapping[str, Any], raw: Mapping[str, Any], problem: str | None
) -> tuple[int, int | None, int, str | None]:
    """parallelism, completions (None: a work queue), succeeded; or what is wrong with them."""
    parallelism = spec.get("parallelism", 1)
    completions = spec.get("completions")
    succeeded = _mapping(raw.get("status")).get("succeeded") or 0
    for field, value in (("spec.parallelism", parallelism), ("spec.completions", completions)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            return 1, None, 0, problem or f"{field} must be an integer, got {value!r}"
    if isinstance(succeeded, bool) or not isinstance(succeeded, int):
        succeeded = 0
    return (parallelism if parallelism is not None else 1), completions, succeeded, problem


def _most_pods(parallelism: int, completions: int | None, succeeded: int) -> int:
    """How many pods a Job runs at once: its parallelism, but no more than it has left to do."""
    if completions is None:
        return max(0, parallelism)
    return max(0, min(parallelism, completions - succeeded))


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}
