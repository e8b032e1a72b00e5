"""What admission says about PodGroups, Queues and pods, beyond what the CRD schema can.

The CRD's schema and CEL rules refuse what one object alone can get wrong
(roles asking more than ``minMember``, ``max`` below ``nominal``). What needs
the rest of the cluster is checked here, against the read model, with the
reason words status uses (:class:`~coscheduler.api.reasons.Reason`):

- a PodGroup naming a Closed queue (``QueueClosed``) or a queue its namespace
  may not use (``QueueNotAllowed``) is refused: it could never be placed
  from there. A queue that does not exist yet is a warning (``QueueNotFound``):
  it may be created next, and the group waits for it.
- a Queue whose ``parent`` would close a cycle (``QueueInvalid``) is refused.
- a pod created with no ``schedulerName`` (or the default one) in a namespace
  labelled for coscheduler gets ours; the webhook configuration selects those
  namespaces, so no other pod reaches it.

Until every kind is listed nothing is refused: an answer from a partial
picture would be a guess.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from pydantic import ValidationError

from coscheduler.api.podgroup import PodGroupSpec
from coscheduler.api.queue import QueueSpec, QueueState
from coscheduler.api.reasons import Reason
from coscheduler.runtime.readmodel import ReadModel

__all__ = ["OPT_IN_LABEL", "Verdict", "pod_scheduler_name", "podgroup_verdict", "queue_verdict"]

#: A namespace labelled with it, ``enabled``, has its new pods without a scheduler
#: name given ours (the chart's webhook configuration selects those namespaces).
OPT_IN_LABEL: Final = "scheduling.sigs.k8s.io/coscheduler"

_DEFAULT_SCHEDULERS: Final = frozenset({"", "default-scheduler"})


@dataclass(frozen=True, slots=True)
class Verdict:
    """Refused (with the message) or allowed, with warnings for ``kubectl`` to show."""

    refusal: str | None = None
    warnings: list[str] = field(default_factory=list)


def podgroup_verdict(spec: Mapping[str, Any], namespace: str, view: ReadModel) -> Verdict:
    try:
        queue_name = PodGroupSpec.model_validate(spec).queue
    except ValidationError:
        return Verdict()  # the CRD's schema answers for the object alone
    queue = view.queues().get(queue_name)
    if queue is None:
        if queue_name == "default":
            return Verdict()  # the implicit default queue
        return Verdict(
            warnings=[f"{Reason.QUEUE_NOT_FOUND}: no Queue {queue_name}: the group waits for it"]
        )
    if queue.spec.state is QueueState.CLOSED:
        return Verdict(f"{Reason.QUEUE_CLOSED}: Queue {queue_name} is Closed: it admits no group")
    if not view.queue_allows(queue_name, namespace):
        return Verdict(
            f"{Reason.QUEUE_NOT_ALLOWED}: Queue {queue_name} does not admit groups of "
            f"namespace {namespace} (its namespaces and namespaceSelector)"
        )
    return Verdict()


def queue_verdict(name: str, spec: Mapping[str, Any], view: ReadModel) -> Verdict:
    try:
        parent = QueueSpec.model_validate(spec).parent
    except ValidationError:
        return Verdict()
    queues = view.queues()
    chain = [name]
    while parent is not None:
        chain.append(parent)
        if parent == name:
            return Verdict(
                f"{Reason.QUEUE_INVALID}: its parents would form a cycle ({' -> '.join(chain)})"
            )
        above = queues.get(parent)
        parent = None if above is None or len(chain) > len(queues) + 1 else above.spec.parent
    return Verdict()


def pod_scheduler_name(spec: Mapping[str, Any], ours: str) -> str | None:
    """The scheduler name to give a new pod of an opted-in namespace, if any."""
    if spec.get("schedulerName", "") in _DEFAULT_SCHEDULERS:
        return ours
    return None
