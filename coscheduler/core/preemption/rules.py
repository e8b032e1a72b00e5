"""Who may be a victim of a preemptor: priority, queue, thrash and disruption budgets.

Victims are of strictly lower priority and of the preemptor's own queue
(pods of other schedulers are in none, so any may be). Taking from another
queue is reclaim, judged by the rule the caller gives for the preemptor. A
group the preemptor already chose once (or whose eviction was refused) is
*spared* while it waits.

Disruption budgets (:class:`~coscheduler.api.disruption.DisruptionBudget`)
are judged for the plan as a whole: a victim is allowed only while every
budget covering its pods, and the pods of the victims allowed before it,
still has room, and none of its pods is covered by two budgets (the
Eviction API refuses those: 500, "more than one PodDisruptionBudget").
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

from coscheduler.api.disruption import DisruptionBudget
from coscheduler.core.group import GroupKey
from coscheduler.core.preemption.search import Preemptor
from coscheduler.core.victims import Victim, VictimRule, lower_priority

__all__ = ["victim_rule"]


def victim_rule(
    who: Preemptor,
    spared: set[GroupKey],
    budgets: Iterable[DisruptionBudget],
    reclaiming: VictimRule | None = None,
    doubly: set[GroupKey] | None = None,
) -> VictimRule:
    """Who may be a victim of ``who``; ``doubly`` collects the groups it would take
    but for a pod under two budgets (so the plan can say why)."""
    by_priority = lower_priority(who.priority)
    budgets = list(budgets)

    def rule(victim: Victim, chosen: Sequence[Victim]) -> bool:
        if victim.group.key in spared:
            return False
        if victim.group.queue in (None, who.queue):
            allowed = by_priority(victim, chosen)
        else:  # another queue's: only reclaim takes from it, whatever the priority
            allowed = reclaiming is not None and reclaiming(victim, chosen)
        if not allowed or not budgets:
            return allowed
        if _under_two_budgets(budgets, victim):
            if doubly is not None:
                doubly.add(victim.group.key)
            return False
        return _within_budgets(budgets, victim, chosen)

    return rule


def _under_two_budgets(budgets: Sequence[DisruptionBudget], victim: Victim) -> bool:
    """A pod of the victim is covered by more than one budget: the Eviction API answers
    500 "This pod has more than one PodDisruptionBudget, which the eviction subresource
    does not support." (1.35), whatever the budgets allow."""
    covering = Counter(
        pod.uid
        for budget in budgets
        for pod in victim.pods
        if budget.covers(pod.namespace, pod.labels)
    )
    return any(count > 1 for count in covering.values())


def _within_budgets(
    budgets: Sequence[DisruptionBudget], victim: Victim, chosen: Sequence[Victim]
) -> bool:
    """Every budget covering the victim's pods still has room after them and ``chosen``'s."""
    for budget in budgets:
        mine = {p.uid for p in victim.pods if budget.covers(p.namespace, p.labels)}
        if not mine:
            continue
        taken = {p.uid for c in chosen for p in c.pods if budget.covers(p.namespace, p.labels)}
        if len(mine | taken) > budget.allowed:
            return False
    return True
