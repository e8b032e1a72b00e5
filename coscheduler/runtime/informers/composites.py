"""``CompositePodGroup`` (``scheduling.k8s.io/v1alpha3``): the child PodGroups placed as one gang.

:class:`Composites` is a resolver the pod informer asks: a pod whose native
PodGroup (``spec.schedulingGroup``) names a parent composite in its
``spec.parentCompositePodGroupName`` joins the composite's gang, keyed
``CompositePodGroup``, with its PodGroup's name as its *role* (the core
places every role to its minimum in one trial: :func:`~coscheduler.api.composite.compose`).
The child of a ``basic`` composite stays a gang of its own. A child whose
composite is not known yet waits (``GroupNotFound`` naming the composite).

It learns the children from the native PodGroups as they are stored
(:meth:`child`, called by the native PodGroup's informer) and the
composites from :class:`CompositeInformer`; either changing makes the
composite's group again and moves the pods of the children it touches
(:meth:`PodInformer.refeed`). The composite's group object carries its
status in upstream's words (:class:`~coscheduler.api.adapters.composite.CompositeAdapter`);
each child's status is derived from its own pods and the composite's
verdict (:meth:`whole_of`, asked by the read model), and every change of
the composite marks its children too (:meth:`fan_out`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import structlog

from coscheduler.api.adapters.composite import ADAPTER as COMPOSITE_ADAPTER
from coscheduler.api.adapters.composite import composite_object
from coscheduler.api.composite import ChildGroup, CompositePodGroup, read_composite
from coscheduler.api.labels import pod_role
from coscheduler.api.pod import PodInfo
from coscheduler.core.group import KIND_COMPOSITE, KIND_NATIVE_POD_GROUP, GroupKey
from coscheduler.runtime.groups import Groups
from coscheduler.runtime.informers.base import Complaints, InvalidObject, KeyedInformer, meta

__all__ = ["CompositeInformer", "Composites"]

log = structlog.get_logger(__name__)

#: A namespace and a name.
Name = tuple[str, str]


class Composites:
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
        self._groups: Groups | None = None
        self._refeed: Callable[[Iterable[str]], None] = lambda _uids: None

    def attach(self, groups: Groups, refeed: Callable[[Iterable[str]], None]) -> None:
        """The store, and the pod informer's way to feed pods in again (both made after)."""
        self._groups, self._refeed = groups, refeed
        groups.composites = self

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

    def preempted(self, key: GroupKey, message: str) -> None:
        """The group lost members to a preemption: a composite's children say so too."""
        if self._groups is None:
            return
        self._groups.preempted(key, message)
        if key.kind == KIND_COMPOSITE:
            for child in self._children.get((key.namespace, key.name), {}):
                self._groups.preempted(
                    GroupKey(key.namespace, child, KIND_NATIVE_POD_GROUP), message
                )

    # -- children and composites -------------------------------------------------------

    def child(
        self, namespace: str, name: str, parent: str | None, child: ChildGroup | None
    ) -> None:
        """A native PodGroup as stored (``child`` None: gone or unreadable): whose child it is."""
        where = (namespace, name)
        before = self._parent_of.get(where)
        known = self._children.get((namespace, before), {}).get(name) if before else None
        if before == parent and known == child:
            return
        if before is not None:
            siblings = self._children.get((namespace, before), {})
            siblings.pop(name, None)
            if not siblings:
                self._children.pop((namespace, before), None)
            del self._parent_of[where]
        if parent is not None and child is not None:
            self._children.setdefault((namespace, parent), {})[name] = child
            self._parent_of[where] = parent
        for touched in {before, parent} - {None}:
            assert touched is not None
            self._remake(namespace, touched)
        if before != parent:
            self._move(where)

    def upsert(self, composite: CompositePodGroup, raw_status: Mapping[str, Any]) -> None:
        where = (composite.namespace, composite.name)
        before = self.composites.get(where)
        self.composites[where] = composite
        self._raw_status[where] = raw_status
        self._remake(*where)
        if before is None or before.apart != composite.apart:
            for child in list(self._children.get(where, {})):
                self._move((composite.namespace, child))

    def remove(self, where: Name) -> None:
        if self.composites.pop(where, None) is None:
            return
        self._raw_status.pop(where, None)
        self._remake(*where)
        for child in list(self._children.get(where, {})):
            self._move((where[0], child))

    def _remake(self, namespace: str, name: str) -> None:
        """The composite's gang as its object and children now say (dropped when it has none)."""
        groups = self._groups
        if groups is None:
            return
        key = GroupKey(namespace, name, KIND_COMPOSITE)
        composite = self.composites.get((namespace, name))
        if composite is None or composite.apart:
            groups.drop_gang(key)
            return
        children = list(self._children.get((namespace, name), {}).values())
        previous = groups.podgroups.get(key)
        made = composite_object(
            composite, children, self._raw_status.get((namespace, name), {}), previous
        )
        groups.add_gang(key, made)

    def _move(self, child: Name) -> None:
        """The pods of a child whose composite changed are resolved again."""
        uids = list(self._pods.get(child, ()))
        if uids:
            self._refeed(uids)


class CompositeInformer(KeyedInformer[Name]):
    def __init__(
        self,
        composites: Composites,
        complaints: Complaints,
        *,
        namespaces: frozenset[str] = frozenset(),
    ) -> None:
        self.composites = composites
        self._complaints = complaints
        self._namespaces = namespaces

    def upsert(self, raw: Mapping[str, Any]) -> Name | None:
        where = self.key_of(raw)
        if self._namespaces and where[0] not in self._namespaces:
            return None
        try:
            composite = read_composite(raw)
        except ValueError as error:
            log.warning("CompositePodGroup skipped", composite="/".join(where), error=str(error))
            self._complaints.invalid(
                InvalidObject.of(
                    "CompositePodGroup",
                    raw,
                    error,
                    api_version=COMPOSITE_ADAPTER.api.api_version,
                )
            )
            self.forget(where)
            return None
        status = raw.get("status")
        self.composites.upsert(composite, status if isinstance(status, Mapping) else {})
        return where

    def known(self) -> Iterable[Name]:
        return list(self.composites.composites)

    def forget(self, key: Name) -> None:
        self.composites.remove(key)

    def key_of(self, raw: Mapping[str, Any]) -> Name:
        fields = meta(raw)
        return (str(fields.get("namespace", "")), str(fields.get("name", "")))
