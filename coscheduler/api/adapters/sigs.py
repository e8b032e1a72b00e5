"""Our own PodGroup, ``scheduling.sigs.k8s.io/v1alpha1``: the model is the wire shape."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from pydantic import ValidationError

from coscheduler.api.adapters import apis
from coscheduler.api.adapters.base import GroupObject
from coscheduler.api.pod import PodInfo
from coscheduler.api.podgroup import PodGroup, PodGroupStatus

__all__ = ["ADAPTER", "API", "SigsAdapter"]

API: Final = apis.SIGS


class SigsAdapter:
    """Reads and writes our PodGroup field for field: nothing is lost either way."""

    api: Final = API
    #: Our API is ours alone: every group in the namespaces we serve is ours to write.
    shared: Final = False

    def parse(self, raw: Mapping[str, Any]) -> GroupObject:
        try:
            group = PodGroup.model_validate(raw)
        except ValidationError:
            # A status someone else wrote (the schema lets status.allocated hold any
            # string) must not make the group unreadable: ours replaces it.
            group = PodGroup.model_validate({k: v for k, v in raw.items() if k != "status"})
            return GroupObject(self, group.metadata, group.spec, group.status, None)
        return GroupObject(self, group.metadata, group.spec, group.status, group.status)

    def read_status(self, wire: Mapping[str, Any]) -> PodGroupStatus:
        return PodGroupStatus.model_validate(wire)

    def stored_form(self, wire: Mapping[str, Any]) -> object:
        try:
            return PodGroupStatus.model_validate(wire)
        except ValidationError:
            return None

    def conclude(self, status: PodGroupStatus) -> PodGroupStatus:
        return status

    def render_status(self, status: PodGroupStatus, members: Sequence[PodInfo]) -> dict[str, Any]:
        del members  # our status carries the owners' UIDs already
        return status.model_dump(mode="json", by_alias=True)


ADAPTER: Final = SigsAdapter()
