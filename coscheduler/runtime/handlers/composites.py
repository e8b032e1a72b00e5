"""``CompositePodGroup`` (``scheduling.k8s.io/v1alpha3``): the child PodGroups placed as one gang.

:class:`CompositeIndex` is a resolver the pod handler asks: a pod whose native
PodGroup (``spec.schedulingGroup``) names a parent composite in its
``spec.parentCompositePodGroupName`` joins the composite's gang, keyed
``CompositePodGroup``, with its PodGroup's name as its *role* (the core
places every role to its minimum in one trial: :func:`~coscheduler.api.composite.compose`).
The child of a ``basic`` composite stays a gang of its own. A child whose
composite is not known yet waits (``GroupNotFound`` naming the composite).

It learns the children from the native PodGroups as the groups store keeps
them (:meth:`child`) and the composites from :class:`CompositeHandler`;
either change returns a :class:`CompositeChange`: the composites whose gang
the groups store makes again (:meth:`gang`), and the pods of the children
whose composite changed, which the handler feeds in again
(:meth:`PodHandler.refeed`). The composite's group object carries its
status in upstream's words (:class:`~coscheduler.api.adapters.composite.CompositeAdapter`);
each child's status is derived from its own pods and the composite's
verdict (:meth:`whole_of`, asked by the read model), and every change of
the composite marks its children too (:meth:`fan_out`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from coscheduler.api.adapters.base import GroupObject
from coscheduler.api.adapters.composite import ADAPTER as COMPOSITE_ADAPTER
from coscheduler.api.adapters.composite import composite_object
from coscheduler.api.composite import ChildGroup, CompositePodGroup, read_composite
from coscheduler.api.labels import pod_role
from coscheduler.api.pod import PodInfo
from coscheduler.core.group import KIND_COMPOSITE, KIND_NATIVE_POD_GROUP, GroupKey
from coscheduler.runtime.handlers.base import Complaints, NamespacedHandler, ObjectName

if TYPE_CHECKING:
    from coscheduler.runtime.groups import Groups

__all__ = ["CompositeChange", "CompositeHandler", "CompositeIndex"]


Name = ObjectName


@dataclasses.dataclass(frozen=True, slots=True)
class CompositeChange:
    """What a change of a composite or of a child did, for the groups store and the pods."""

    namespace: str = ""
    #: The composites of ``namespace`` whose gang is to be made again (:meth:`CompositeIndex.gang`).
    remade: tuple[str, ...] = ()
    #: The pods whose composite changed: resolved again.
    moved: tuple[str, ...] = ()


class CompositeIndex:
    """Readable composites, which native PodGroup is whose child, and the pods of each child."""

    def __init__(self) -> None:
        self.composites: dict[Name, CompositePodGroup] = {}
        self._raw_status: dict[Name, Mapping[str, Any]] = {}
        #: (namespace, composite) -> its children as read, by name.
        self._children: dict[Name, dict[str, ChildGroup]] = {}
        #: (namespace, child PodGroup) -> the composite it names.
        self._parent_of: dict[Name, str] = {}
        #: (namespace, child PodGroup) -> the uids of the pods naming it.
        self._pods: dict[Name, set[str]] = {}
        self._pod_child: dict[str, Name] = {}

    # -- pods --------------------------------------------------------------------

    def resolve(self, pod: PodInfo) -> PodInfo:
        """The pod as the core gets it: in its composite's gang, or as it was read."""
        pod = self._unresolved(pod)
        child = pod.scheduling_group
        if child is None or pod.group is not None:
            return pod
        parent = self._parent_of.get((pod.namespace, child))
        if parent is None or self._apart(pod.namespace, parent):
            return pod
        return dataclasses.replace(pod, composite=parent, role=child)

    def track(self, pod: PodInfo) -> None:
        """Remember the pods that name each native PodGroup, to move them when it changes."""
        self.untrack(pod.uid)
        if pod.scheduling_group is not None and pod.group is None:
            where = (pod.namespace, pod.scheduling_group)
            self._pods.setdefault(where, set()).add(pod.uid)
            self._pod_child[pod.uid] = where

    def untrack(self, uid: str) -> None:
        where = self._pod_child.pop(uid, None)
        if where is None:
            return
        uids = self._pods.get(where)
        if uids is not None:
            uids.discard(uid)
            if not uids:
                del self._pods[where]

    @staticmethod
    def _unresolved(pod: PodInfo) -> PodInfo:
        """The pod as read: no composite, its role its label's."""
        if pod.composite is None:
            return pod
        return dataclasses.replace(pod, composite=None, role=pod_role(pod.labels))

    def _apart(self, namespace: str, parent: str) -> bool:
        """The children of a known ``basic`` composite are gangs of their own."""
        composite = self.composites.get((namespace, parent))
        return composite is not None and composite.apart

    # -- what the controller asks ----------------------------------------------------

    def whole_of(self, key: GroupKey) -> GroupKey | None:
        """The composite gang a native PodGroup's pods are placed in, if they are."""
        if key.kind != KIND_NATIVE_POD_GROUP:
            return None
        parent = self._parent_of.get((key.namespace, key.name))
        if parent is None or self._apart(key.namespace, parent):
            return None
        return GroupKey(key.namespace, parent, KIND_COMPOSITE)

    def fan_out(self, changed: Callable[[GroupKey], None]) -> Callable[[GroupKey], None]:
        """``changed``, telling a composite's children too (their status follows its verdict)."""

        def tell(key: GroupKey) -> None:
            changed(key)
            if key.kind == KIND_COMPOSITE:
                for child in self._children.get((key.namespace, key.name), {}):
                    changed(GroupKey(key.namespace, child, KIND_NATIVE_POD_GROUP))

        return tell

    def children_of(self, key: GroupKey) -> list[GroupKey]:
        """A composite's children, as native PodGroups."""
        if key.kind != KIND_COMPOSITE:
            return []
        children = self._children.get((key.namespace, key.name), {})
        return [GroupKey(key.namespace, child, KIND_NATIVE_POD_GROUP) for child in children]

    # -- children and composites -------------------------------------------------------

    def child(
        self, namespace: str, name: str, parent: str | None, child: ChildGroup | None
    ) -> CompositeChange:
        """A native PodGroup as stored (``child`` None: gone or unreadable): whose child it is."""
        where = (namespace, name)
        before = self._parent_of.get(where)
        known = self._children.get((namespace, before), {}).get(name) if before else None
        if before == parent and known == child:
            return CompositeChange()
        if before is not None:
            siblings = self._children.get((namespace, before), {})
            siblings.pop(name, None)
            if not siblings:
                self._children.pop((namespace, before), None)
            del self._parent_of[where]
        if parent is not None and child is not None:
            self._children.setdefault((namespace, parent), {})[name] = child
            self._parent_of[where] = parent
        return CompositeChange(
            namespace,
            remade=tuple(sorted(name for name in {before, parent} if name is not None)),
            moved=self._pods_of(namespace, [name]) if before != parent else (),
        )

    def upsert(
        self, composite: CompositePodGroup, raw_status: Mapping[str, Any]
    ) -> CompositeChange:
        where = (composite.namespace, composite.name)
        before = self.composites.get(where)
        self.composites[where] = composite
        self._raw_status[where] = raw_status
        moved = before is None or before.apart != composite.apart
        children = list(self._children.get(where, {})) if moved else []
        return CompositeChange(
            where[0], remade=(where[1],), moved=self._pods_of(where[0], children)
        )

    def remove(self, where: Name) -> CompositeChange:
        if self.composites.pop(where, None) is None:
            return CompositeChange()
        self._raw_status.pop(where, None)
        children = list(self._children.get(where, {}))
        return CompositeChange(
            where[0], remade=(where[1],), moved=self._pods_of(where[0], children)
        )

    def gang(self, namespace: str, name: str, previous: GroupObject | None) -> GroupObject | None:
        """The composite's gang as its object and children now say; None: it has none."""
        composite = self.composites.get((namespace, name))
        if composite is None or composite.apart:
            return None
        children = list(self._children.get((namespace, name), {}).values())
        return composite_object(
            composite, children, self._raw_status.get((namespace, name), {}), previous
        )

    def _pods_of(self, namespace: str, children: Iterable[str]) -> tuple[str, ...]:
        """The pods naming these native PodGroups."""
        return tuple(uid for child in children for uid in self._pods.get((namespace, child), ()))


class CompositeHandler(NamespacedHandler[CompositePodGroup]):
    """Reads the composites into :class:`CompositeIndex`; the groups store makes their gangs
    again and the pods whose composite changed are fed in again."""

    kind = "CompositePodGroup"
    api_version = COMPOSITE_ADAPTER.api.api_version

    def __init__(
        self,
        index: CompositeIndex,
        groups: Groups,
        refeed: Callable[[Iterable[str]], None],
        complaints: Complaints,
        *,
        namespaces: frozenset[str] = frozenset(),
    ) -> None:
        super().__init__(complaints, namespaces=namespaces)
        self.index = index
        self._groups = groups
        self._refeed = refeed

    def _apply(self, change: CompositeChange) -> None:
        moved = self._groups.apply(change)
        if moved:
            self._refeed(moved)

    def read(self, raw: Mapping[str, Any]) -> CompositePodGroup:
        return read_composite(raw)

    def take(self, where: Name, composite: CompositePodGroup, raw: Mapping[str, Any]) -> None:
        status = raw.get("status")
        self._apply(self.index.upsert(composite, status if isinstance(status, Mapping) else {}))

    def known(self) -> Iterable[Name]:
        return list(self.index.composites)

    def forget(self, key: Name) -> None:
        self._apply(self.index.remove(key))
