"""The writer's inbox: groups marked changed, taken once, lone pods ignored; a namespace's
follower's inbox."""

from __future__ import annotations

from coscheduler.core.group import KIND_POD, GroupKey
from coscheduler.runtime.readmodel import ChangedGroups, Marks


def test_marks_are_taken_once_and_wake_the_writer() -> None:
    changed = ChangedGroups()
    assert not changed.wake.is_set()
    changed.mark(GroupKey("ml", "train"))
    changed.mark(GroupKey("ml", "train"))
    changed.mark(GroupKey("ml", "serve"))
    assert changed.wake.is_set()
    assert changed.take() == {GroupKey("ml", "train"), GroupKey("ml", "serve")}
    assert not changed.wake.is_set()
    assert changed.take() == set()


def test_a_lone_pod_has_no_podgroup_to_write() -> None:
    changed = ChangedGroups()
    changed.mark(GroupKey("ml", "web-0", KIND_POD))
    assert not changed.wake.is_set()
    assert changed.take() == set()


def test_a_namespaces_inbox_gets_its_groups_marks_until_it_unfollows() -> None:
    changed = ChangedGroups()
    inbox = Marks[GroupKey]()
    changed.follow_namespace("ml", inbox)
    changed.mark(GroupKey("ml", "train"))
    changed.mark(GroupKey("web", "serve"))
    assert inbox.take() == {GroupKey("ml", "train")}

    changed.namespace_changed("web")
    assert not inbox.wake.is_set()
    changed.namespace_changed("ml")  # it may be gone
    assert inbox.wake.is_set()
    assert inbox.take() == set()

    changed.unfollow_namespace("ml", inbox)
    changed.mark(GroupKey("ml", "train"))
    assert inbox.take() == set()
    assert changed.take() == {GroupKey("ml", "train"), GroupKey("web", "serve")}
