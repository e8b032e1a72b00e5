"""core/requeue.py: waking only the groups a change can help places what retrying every
waiting group after each change places, and leaves no placeable group asleep (hypothesis)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from hypothesis import given
from hypothesis import strategies as st

from coscheduler.core import Scheduler
from coscheduler.core.decision import Decision
from coscheduler.core.group import GroupKey
from coscheduler.core.queue import ClusterEvent, QueueSettings
from coscheduler.core.requeue import Wants
from coscheduler.core.settings import SchedulerSettings
from coscheduler.core.status import Code
from tests.builders import Clock, gang, group, node, pod

ZONES = ("a", "b")
GPU_TAINT = ("gpu", "true", "NoSchedule")


class RetryEverything(Scheduler):
    """The reference: every group refused for room backs off, and every change retries
    every waiting group (the test wakes them all after each change)."""

    def _wants(self, key: GroupKey, decision: Decision, code: Code) -> Wants | None:
        return None


@dataclass(frozen=True)
class Gang:
    name: str
    size: int
    min_member: int
    cpu: int
    zone: str | None
    tolerates: bool
    #: Its members must share one zone (``PodGroup.spec.topology``).
    one_zone: bool = False


@dataclass(frozen=True)
class Change:
    """One cluster change: ``kind`` and the numbers that pick what it touches."""

    kind: str
    pick: int
    amount: int


KINDS = ("delete", "finish", "add-node", "uncordon", "relabel", "untaint", "grow", "other", "gang")

gangs = st.builds(
    Gang,
    name=st.just(""),
    size=st.integers(1, 4),
    min_member=st.integers(1, 4),
    cpu=st.integers(1, 6),
    zone=st.sampled_from((None, *ZONES)),
    tolerates=st.booleans(),
    one_zone=st.booleans(),
)
changes = st.builds(
    Change, kind=st.sampled_from(KINDS), pick=st.integers(0, 99), amount=st.integers(1, 8)
)


class World:
    """Drives a scheduler through changes the same way for both runs."""

    def __init__(self, scheduler: Scheduler, clock: Clock, reference: bool) -> None:
        self.scheduler, self.clock, self.reference = scheduler, clock, reference
        self.nodes: dict[str, dict[str, object]] = {}
        self.others: list[str] = []
        self.gangs = 0

    def upsert_node(self, name: str, **fields: object) -> None:
        self.nodes[name] = {**self.nodes.get(name, {}), **fields}
        self.scheduler.upsert_node(node(name, **self.nodes[name]))

    def add_gang(self, spec: Gang) -> None:
        name = f"g{self.gangs}"
        self.gangs += 1
        extra: dict[str, object] = {"cpu": str(spec.cpu), "created": self.gangs}
        if spec.zone is not None:
            extra["node_selector"] = {"zone": spec.zone}
        if spec.tolerates:
            extra["tolerations"] = [{"key": "gpu", "operator": "Exists"}]
        policy = group(name, min(spec.min_member, spec.size), created=self.gangs)
        if spec.one_zone:
            policy = replace(policy, topology_levels=("zone",))
        self.scheduler.upsert_group(policy)
        for member in gang(name, spec.size, **extra):
            self.scheduler.upsert_pod(member)

    def apply(self, change: Change) -> None:
        scheduler = self.scheduler
        names = sorted(self.nodes)
        target = names[change.pick % len(names)]
        bound = sorted(
            p.uid for p in scheduler.pods() if scheduler.snapshot.node_of(p.uid) is not None
        )
        if change.kind == "delete" and bound:
            scheduler.remove_pod(bound[change.pick % len(bound)])
        elif change.kind == "finish" and bound:
            key = scheduler.group_of(bound[change.pick % len(bound)])
            for uid in bound:
                if scheduler.group_of(uid) == key:
                    scheduler.remove_pod(uid)
        elif change.kind == "add-node":
            self.upsert_node(
                f"n{len(names)}",
                cpu=str(change.amount),
                labels={"zone": ZONES[change.pick % 2]},
                taints=[GPU_TAINT] if change.pick % 3 == 0 else [],
            )
        elif change.kind == "uncordon":
            self.upsert_node(target, unschedulable=False)
        elif change.kind == "relabel":
            self.upsert_node(target, labels={"zone": ZONES[change.amount % 2]})
        elif change.kind == "untaint":
            self.upsert_node(target, taints=[])
        elif change.kind == "grow":
            self.upsert_node(target, cpu=str(int(str(self.nodes[target]["cpu"])) + change.amount))
        elif change.kind == "other":
            uid = f"other-{len(self.others)}"
            self.others.append(uid)
            scheduler.upsert_pod(
                pod(uid, cpu=str(change.amount), node=target, scheduler="default-scheduler")
            )
        elif change.kind == "gang":
            self.add_gang(Gang("", change.amount % 4 + 1, 2, change.pick % 5 + 1, None, False))
        if self.reference:
            scheduler.queue.on_event(ClusterEvent.QUEUE_CHANGED)  # wakes every waiting group

    def settle(self) -> list[tuple[str, str]]:
        """Decide until nothing is ready; the bindings made, in order."""
        placed = []
        while (decision := self.scheduler.next_decision()) is not None:
            placed += [(b.name, b.node) for b in decision.bindings]
        return placed


def _world(reference: bool) -> World:
    clock = Clock()
    # No flush and no backoff ending while the test runs: only changes wake a group.
    queue = QueueSettings(
        initial_backoff_seconds=1e9, max_backoff_seconds=1e9, unschedulable_flush_seconds=1e9
    )
    kind = RetryEverything if reference else Scheduler
    return World(kind(clock, SchedulerSettings(queue=queue)), clock, reference)


@given(
    st.lists(st.tuples(st.integers(2, 8), st.booleans(), st.booleans()), min_size=1, max_size=4),
    st.lists(gangs, min_size=1, max_size=6),
    st.lists(changes, max_size=12),
)
def test_hinted_requeue_places_what_retrying_everything_places(
    nodes: list[tuple[int, bool, bool]], waiting: list[Gang], steps: list[Change]
) -> None:
    hinted, reference = _world(False), _world(True)
    for world in (hinted, reference):
        for number, (cpu, cordoned, tainted) in enumerate(nodes):
            world.upsert_node(
                f"n{number}",
                cpu=str(cpu),
                labels={"zone": ZONES[number % 2]},
                unschedulable=cordoned,
                taints=[GPU_TAINT] if tainted else [],
            )
        for spec in waiting:
            world.add_gang(spec)
    assert hinted.settle() == reference.settle()
    for step in steps:
        hinted.apply(step)
        reference.apply(step)
        assert hinted.settle() == reference.settle(), step
        scheduler = hinted.scheduler
        for key, _, _ in scheduler.queue.entries():
            # Asleep, it must be unplaceable: a try now would bind nothing.
            assert not scheduler.try_group(key).bindings, (key, scheduler.queue.pool(key))
