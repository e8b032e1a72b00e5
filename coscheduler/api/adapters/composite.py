"""A CompositePodGroup's gang as a :class:`GroupObject`, and its status in upstream's words.

The composite is read by :mod:`coscheduler.api.composite`; here its gang (its
children as roles, :func:`~coscheduler.api.composite.compose`) becomes the
one group model, and our status goes back as upstream words it:
``CompositePodGroupInitiallyScheduled`` False with reason ``Unschedulable``
(``SchedulerError`` when coscheduler failed; ``Invalid`` when coscheduler
refuses the composite as it is, the message naming the field) while it
waits, True with reason ``Scheduled`` once every child is placed, and never
False again (terminal, as for a PodGroup). ``DisruptionTarget`` when it is
preempted. It is the native PodGroup's adapter with the composite's API and
condition (:class:`~coscheduler.api.adapters.native.NativeAdapter`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from coscheduler.api.adapters.base import GroupObject
from coscheduler.api.adapters.native import NativeAdapter
from coscheduler.api.composite import (
    API,
    CONDITION_INITIALLY_SCHEDULED,
    REASON_INVALID,
    ChildGroup,
    Composed,
    CompositeGang,
    CompositePodGroup,
    Refused,
    basic_refusal,
    compose,
)
from coscheduler.api.podgroup import (
    DEFAULT_QUEUE,
    ConditionStatus,
    PodGroupSpec,
    PodGroupStatus,
)
from coscheduler.api.reasons import Reason

__all__ = ["ADAPTER", "CompositeAdapter", "composite_object"]


class CompositeAdapter(NativeAdapter):
    """The status side of a composite's gang: upstream's placement condition on the composite."""

    def __init__(self) -> None:
        super().__init__("v1beta1")
        self.api = API
        self._initially_scheduled = CONDITION_INITIALLY_SCHEDULED

    def __repr__(self) -> str:
        return "CompositeAdapter()"

    def conclude(self, status: PodGroupStatus) -> PodGroupStatus:
        concluded = super().conclude(status)
        placement = concluded.condition(CONDITION_INITIALLY_SCHEDULED)
        refused = f"{Reason.UNSUPPORTED_FIELD.value}: "
        if (
            placement is None
            or placement.status != ConditionStatus.FALSE
            or not (placement.message or "").startswith(refused)
        ):
            return concluded
        # A composite refused as it is: kube-scheduler's word for a layout it cannot honour.
        invalid = placement.model_copy(
            update={
                "reason": REASON_INVALID,
                "message": (placement.message or "").removeprefix(refused),
            }
        )
        kept = [c for c in concluded.conditions if c.type != CONDITION_INITIALLY_SCHEDULED]
        return concluded.model_copy(update={"conditions": [*kept, invalid]})


ADAPTER: Final = CompositeAdapter()


def composite_object(
    composite: CompositePodGroup,
    children: Sequence[ChildGroup],
    raw_status: Mapping[str, Any],
    previous: GroupObject | None,
) -> GroupObject:
    """The composite's gang; the refusal it waits with when it cannot be one as it is.

    ``previous``'s status is kept: it is ours as last derived (the object read
    again is most often the echo of our own write).
    """
    refusal = basic_refusal(composite) if composite.min_group_count is None else None
    outcome = compose(composite, children) if refusal is None else refusal
    if isinstance(outcome, Composed):
        spec, waits = outcome.spec, None
    else:
        refused = isinstance(outcome, Refused)
        reason = Reason.UNSUPPORTED_FIELD if refused else Reason.NOT_ENOUGH_MEMBERS
        message = f"{composite.describe()}: {outcome.message}" if refused else outcome.message
        # A spec the core can hold; the refusal keeps the gang from being placed.
        spec = PodGroupSpec(
            min_member=1,
            priority=composite.priority,
            priority_class_name=composite.priority_class_name,
            queue=composite.queue or DEFAULT_QUEUE,
        )
        waits = (reason, message)
    try:
        status = ADAPTER.read_status(raw_status)
    except ValueError:
        status = PodGroupStatus()
    return GroupObject(
        ADAPTER,
        composite.metadata,
        spec,
        previous.status if previous is not None else status,
        ADAPTER.stored_form(raw_status),
        composite=CompositeGang(composite, waits),
    )
