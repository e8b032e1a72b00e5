"""The gang planner: place a group's needed members all together, or none.

:func:`plan` takes one group (its policy, its pending and bound members) and
the snapshot, and returns a :class:`Decision`. It follows these rules, in
order; the first that ends the attempt decides:

1. A pod naming a PodGroup that does not exist waits: ``GroupNotFound``.
1a. A group whose policy refuses it as it is (a field not honoured yet,
   members under two schedulers) waits with the policy's reason.
1b. A pending member that asks for a field coscheduler does not honour yet
   (:mod:`~coscheduler.api.asks`) is never placed against it: the group
   waits, ``UnsupportedField``, the message naming the pod and the field.
1c. A pending member whose claims are not ready (:mod:`~coscheduler.core.volumes`)
   holds its group: ``VolumeNotReady``, retried when volumes change.
2. Members must exist: at least ``minMember`` pending + bound, and per role at
   least its minimum; otherwise the group waits: ``NotEnoughMembers``, the
   message saying so when what creates the members (``GroupPolicy.creator``,
   a Job) runs fewer pods at once than the minimum.
3. A group already *admitted* (``minMember`` and every role's minimum bound)
   places its pending members one by one, each on its own (inside the
   narrowest domain holding the bound ones, for a group with
   ``spec.topology``); those that do not fit wait for the next attempt.
4. ``minResources``, less what the bound members already hold, must fit in
   the free capacity of schedulable nodes: otherwise ``MinResourcesUnavailable``.
5. The trial: on a :class:`~coscheduler.core.statement.Statement`, members are
   assumed in member order (priority, creation, name) until every role's
   minimum and ``minMember`` are reached, counting bound members. A member
   that does not fit is skipped (another of the same role may), and its
   shape is not tried again in this trial. If the needs are met, the trial is
   committed, then the remaining pending members are placed as in rule 3;
   otherwise it is discarded, the snapshot is unchanged, and the group is
   ``NotEnoughResources`` with the per-node histogram of the first member
   that did not fit. Members left pending by rule 3 get the same reason
   (``Decision.unplaced``), so that every pending member has one.
5a. A group with ``spec.topology`` runs the trial inside one domain at a
   time (:mod:`~coscheduler.core.domains` says which, in what order),
   narrowest level first, and takes the first domain that holds every needed
   member; its other members are placed inside that domain too. If none
   does, the group waits, the message naming the closest domain.
5b. When the trial fails, a small gang (no host ports, few members and
   nodes) gets an exact search (:mod:`~coscheduler.core.search`): the greedy
   trial can miss a packing of members of different sizes, and an answer
   that is not monotone in capacity would let lower-priority groups pass.
6. A failure after ``scheduleTimeoutSeconds`` since the first attempt is
   reported as ``Timeout``, with the reason underneath as its ``cause`` (the
   code stays, so the queue still backs off).

The cost is that of placing each member attempted (vector work over the nodes
per run of identical pods, see :mod:`~coscheduler.core.placement`): linear in
nodes x members, at worst.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence

from coscheduler.api.pod import PodInfo
from coscheduler.api.reasons import Reason
from coscheduler.core import messages
from coscheduler.core.attempt import Attempt
from coscheduler.core.decision import Decision
from coscheduler.core.domains import Domain, bound_domain, candidate_domains
from coscheduler.core.group import KIND_COMPOSITE, GroupKey, GroupPolicy
from coscheduler.core.placement import place_run
from coscheduler.core.scoring import Scoring
from coscheduler.core.search import find_packing
from coscheduler.core.snapshot import Snapshot
from coscheduler.core.statement import Binding, Statement
from coscheduler.core.status import Code, Status
from coscheduler.core.trial import Failure, run_trial, runs

__all__ = ["Decision", "member_order", "plan"]

#: Most-allocated, every resource weighing 1.
_DEFAULT = Scoring()


def member_order(pod: PodInfo) -> tuple[int, float, str]:
    """Members are tried by priority (high first), creation, then name."""
    return (-pod.priority, pod.created, pod.name)


def plan(
    snapshot: Snapshot,
    group: GroupKey,
    policy: GroupPolicy | None,
    pending: Sequence[PodInfo],
    bound: Sequence[PodInfo],
    *,
    scoring: Scoring = _DEFAULT,
    elapsed: float | None = None,
) -> Decision:
    """One attempt for one group (rules 1-6). ``elapsed`` is seconds since its first."""
    pending = sorted(pending, key=member_order)
    members = len(pending) + len(bound)

    def refused(status: Status, needed: int = 0) -> Decision:
        """The attempt ends without a binding (rule 6 applied)."""
        decision = Decision(
            group, status, members=members, bound=len(bound), needed=needed, pending=_keys(pending)
        )
        return _finish(group, policy, elapsed, decision)

    if policy is None:
        return refused(
            Status(Code.WAITING, Reason.GROUP_NOT_FOUND, messages.group_not_found(group, members))
        )
    if policy.refused is not None:
        reason, why = policy.refused
        return refused(Status(Code.WAITING, reason, why))
    waits = _waits(pending)
    if waits is not None:
        return refused(waits)
    if policy.creator is not None and members < policy.min_member:
        creator, most = policy.creator
        if most < policy.min_member:
            short = messages.creator_too_small(members, policy.min_member, creator, most)
            return refused(Status(Code.WAITING, Reason.NOT_ENOUGH_MEMBERS, short))

    have = Counter(pod.role for pod in [*pending, *bound])
    held = Counter(pod.role for pod in bound)
    roles = {role: (have[role], minimum) for role, minimum in policy.role_minimums.items()}
    if members < policy.min_member or any(h < m for h, m in roles.values()):
        word = "PodGroup" if group.kind == KIND_COMPOSITE else "role"
        missing = messages.not_enough_members(members, policy.min_member, roles, word)
        if roles:
            # A member whose role the group does not declare fills no role's minimum: say so,
            # or the user sees a short role and cannot tell why their pod does not count.
            undeclared = {r: n for r, n in have.items() if r is not None and r not in roles}
            missing += messages.undeclared_roles(undeclared, word)
        return refused(Status(Code.WAITING, Reason.NOT_ENOUGH_MEMBERS, missing))

    role_needs = {
        role: max(0, minimum - held[role]) for role, minimum in sorted(policy.role_minimums.items())
    }
    needed = max(policy.min_member - len(bound), sum(role_needs.values()), 0)
    attempt = Attempt(snapshot, group, policy, pending, bound, role_needs, needed, scoring)
    if needed == 0:
        home = None
        if policy.topology_levels:
            home = bound_domain(snapshot, policy.topology_levels, attempt.bound_nodes)
        return _elastic(attempt, Statement(snapshot, within=None if home is None else home.nodes))

    short = _min_resources_short(attempt)
    if short:
        return refused(Status(Code.UNSCHEDULABLE, Reason.MIN_RESOURCES_UNAVAILABLE, short), needed)
    if policy.topology_levels:
        return _in_one_domain(attempt, refused)
    statement = Statement(snapshot)
    trial = run_trial(statement, attempt)
    placed, rest, failure = trial.placed, trial.rest, trial.failure
    if placed < needed:
        statement.discard()
        # The search knows nothing of domains: roles kept in one are the trial's alone.
        packing = (
            None if policy.role_topology else find_packing(snapshot, pending, role_needs, needed)
        )
        if packing is not None:
            for pod, node in packing:
                statement.assume((pod,), node)
            placed = needed
            chosen = {pod.uid for pod, _ in packing}
            rest = [pod for pod in pending if pod.uid not in chosen]
    if placed < needed:
        message = messages.unavailable(failure.diagnosis, group, needed, placed) if failure else ""
        message = f"{trial.note}. {message}" if trial.note else message
        filter_name = failure.diagnosis.filter if failure else None
        return refused(
            Status(Code.UNSCHEDULABLE, Reason.NOT_ENOUGH_RESOURCES, message, filter_name), needed
        )
    return _admit(attempt, statement, rest, placed)


def _waits(pending: Sequence[PodInfo]) -> Status | None:
    """Rules 1b and 1c: a member asks for what is not honoured, or its claims are not ready."""
    asking = [pod for pod in pending if pod.asks.unsupported]
    if asking:
        return Status(Code.WAITING, Reason.UNSUPPORTED_FIELD, messages.unsupported(asking))
    unready = [pod for pod in pending if pod.volume_wait]
    if unready:
        waits = messages.volumes_not_ready(unready)
        return Status(Code.UNSCHEDULABLE, Reason.VOLUME_NOT_READY, waits)
    return None


def _min_resources_short(attempt: Attempt) -> str:
    """Rule 4: what ``minResources`` (less what bound members hold) lacks of free room."""
    policy = attempt.policy
    if not policy.min_resources:
        return ""
    wanted = dict(policy.min_resources)
    for pod in attempt.bound:
        for resource, amount in pod.requests.items():
            if resource in wanted:
                wanted[resource] = max(0, wanted[resource] - amount)
    free = attempt.snapshot.free_capacity()
    if any(amount > free.get(resource, 0) for resource, amount in wanted.items()):
        return messages.min_resources_exceed(wanted, free)
    return ""


def _admit(
    attempt: Attempt, statement: Statement, rest: list[PodInfo], placed: int, where: str = ""
) -> Decision:
    """A successful trial: commit it, then place the other members one by one (rule 3)."""
    bindings = statement.commit()
    extra, left = _place_each(statement, rest, attempt.scoring)
    bound, members = len(attempt.bound), attempt.members
    return Decision(
        attempt.key,
        Status(
            Code.SUCCESS,
            Reason.MIN_MEMBER_SCHEDULED,
            f"{bound + placed + len(extra)}/{members} members bound{where}",
        ),
        bindings=bindings + extra,
        members=members,
        bound=bound,
        needed=attempt.needed,
        admitted=True,
        pending=_keys(left),
        unplaced=_unplaced(statement.snapshot, attempt.key, left),
    )


def _in_one_domain(attempt: Attempt, refused: Callable[[Status, int], Decision]) -> Decision:
    """Rule 5a: the trial inside one domain at a time, narrow levels first."""

    snapshot, group, policy, needed = attempt.snapshot, attempt.key, attempt.policy, attempt.needed
    bound_nodes = attempt.bound_nodes
    closest: tuple[int, Domain, Failure | None, str] | None = None
    for key in policy.topology_levels:
        for domain in candidate_domains(snapshot, key, attempt.pending[0], needed, bound_nodes):
            statement = Statement(snapshot, within=domain.nodes)
            trial = run_trial(statement, attempt)
            if trial.placed >= needed:
                return _admit(attempt, statement, trial.rest, trial.placed, f" in {domain}")
            statement.discard()
            if closest is None or trial.placed > closest[0]:
                closest = (trial.placed, domain, trial.failure, trial.note)
    widest = policy.topology_levels[-1]
    if closest is None:
        message = messages.no_domain(group, needed, widest)
        return refused(Status(Code.UNSCHEDULABLE, Reason.NOT_ENOUGH_RESOURCES, message), needed)
    placed, domain, failure, note = closest
    message = messages.no_domain(group, needed, widest, str(domain), placed)
    if note:
        message += f" {note}."
    if failure is not None:
        message += " " + messages.unavailable(failure.diagnosis, group, needed, placed)
    filter_name = failure.diagnosis.filter if failure else None
    return refused(
        Status(Code.UNSCHEDULABLE, Reason.NOT_ENOUGH_RESOURCES, message, filter_name), needed
    )


def _elastic(attempt: Attempt, statement: Statement) -> Decision:
    """Rule 3: an admitted group's pending members, each on its own."""
    group, bound, members = attempt.key, len(attempt.bound), attempt.members
    bindings, left = _place_each(statement, attempt.pending, attempt.scoring)
    unplaced = _unplaced(statement.snapshot, group, left)
    if bindings or unplaced is None:
        return Decision(
            group,
            Status(
                Code.SUCCESS,
                Reason.MIN_MEMBER_SCHEDULED,
                f"{bound + len(bindings)}/{members} members bound",
            ),
            bindings=bindings,
            members=members,
            bound=bound,
            admitted=True,
            pending=_keys(left),
            unplaced=unplaced,
        )
    return Decision(
        group,
        unplaced,
        members=members,
        bound=bound,
        admitted=True,
        pending=_keys(left),
        unplaced=unplaced,
    )


def _unplaced(snapshot: Snapshot, group: GroupKey, left: list[PodInfo]) -> Status | None:
    """Why the pending members left after placing the others do not fit, if any are left."""
    if not left:
        return None
    diagnosis = snapshot.diagnose(left[0])
    return Status(
        Code.UNSCHEDULABLE,
        Reason.NOT_ENOUGH_RESOURCES,
        messages.unavailable(diagnosis, group, len(left)),
        diagnosis.filter,
    )


def _place_each(
    statement: Statement, pods: Sequence[PodInfo], scoring: Scoring
) -> tuple[tuple[Binding, ...], list[PodInfo]]:
    """Place pods individually (no gang): each kept if it fits."""
    left: list[PodInfo] = []
    failed_shapes: set[tuple[object, ...]] = set()
    for run in runs(pods):
        if run[0].shape in failed_shapes:
            left.extend(run)
            continue
        count = place_run(statement, run, scoring)
        if count < len(run):
            failed_shapes.add(run[0].shape)
            left.extend(run[count:])
    return statement.commit(), left


def _keys(pods: Sequence[PodInfo]) -> tuple[str, ...]:
    return tuple(pod.key for pod in pods)


def _finish(
    group: GroupKey, policy: GroupPolicy | None, elapsed: float | None, decision: Decision
) -> Decision:
    """Rule 6: a failure past the group's timeout is reported as a timeout."""
    timeout = policy.schedule_timeout_seconds if policy is not None else None
    if timeout is None or elapsed is None or elapsed < timeout:
        return decision
    status = decision.status
    return Decision(
        group,
        Status(
            status.code,
            Reason.TIMEOUT,
            messages.timed_out(timeout, status.message),
            status.filter,
            cause=status.reason,
        ),
        members=decision.members,
        bound=decision.bound,
        needed=decision.needed,
        pending=decision.pending,
    )
