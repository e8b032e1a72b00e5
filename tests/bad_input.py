"""Hypothesis strategies for bad input: PodGroups and pods as careless or hostile users write them.

Each strategy starts from a valid object and changes one or two fields to a
value from the edges of the schema: quantities huge, tiny, negative or
malformed (``1.5.5``, ``1e400``, ``10Qi``), counts past int32 and int64,
unicode and maximal-length names and labels, fields missing or of the wrong
type, odd affinity, spread and toleration shapes, pods naming groups that do
not exist, roles with duplicate names. A :class:`Sample` carries the raw body
and the paths of the fields it changed, so that a test can check that a
refusal names one of them. A PodGroup's ``status`` is written by a second
request, to the status subresource, as another controller would.

Used twice: ``tests/api/test_bad_input_properties.py`` feeds them through the
parsing layer and the core without a server (many examples), and
``e2e/tests/test_bad_input.py`` sends them to the real API server with a
scheduler running (a few dozen).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Final

from hypothesis import strategies as st

from coscheduler.api.labels import POD_GROUP_LABEL, POD_GROUP_LABEL_ALIASES, ROLE_LABEL

__all__ = [
    "POOL_LABEL",
    "Sample",
    "counts",
    "label_values",
    "names",
    "podgroups",
    "pods",
    "quantities",
    "xk8s_podgroups",
]

Json = dict[str, Any]

#: The label a test's nodes carry; every generated pod selects it, so fuzzed pods
#: stay on the nodes the test gave them.
POOL_LABEL: Final = "e2e.coscheduler.dev/pool"
SCHEDULER_NAME: Final = "coscheduler"


@dataclass(frozen=True)
class Sample:
    """A raw object and the dotted paths of the fields changed from a valid one."""

    body: Json
    touched: tuple[str, ...]

    @property
    def kind(self) -> str:
        return str(self.body.get("kind", ""))

    def field_words(self) -> set[str]:
        """Words a message naming one of the touched fields contains (its last two names)."""
        words: set[str] = set()
        for path in self.touched:
            parts = [p for p in path.replace("[", ".").replace("]", "").split(".") if p]
            names = [p for p in parts if not p.isdigit()]
            words.update(names[-2:])
        return words


# -- leaves -----------------------------------------------------------------

#: Quantities the API server accepts, some at the edges of what fits an int64.
_GOOD_QUANTITIES: Final = (
    "0",
    "1",
    "500m",
    "1.5",
    ".5",
    "4Gi",
    "1e3",
    "1E3",
    "128974848",
    "1n",
    "1u",
    "8Ei",
    "16Ei",
    "1E",
    "1e18",
    "1e-3",
    "9223372036854775807",
    "9223372036854775808",
    "999999999999999999999999",
    "123456789012345678901234567890",
    "+1",
)
#: Quantities the API server refuses (or that must not be negative).
_BAD_QUANTITIES: Final = (
    "-1",
    "-500m",
    "-0.001",
    "1.5.5",
    "1e400",
    "1e-400",
    "10Qi",
    "",
    " 1",
    "1 ",
    "lots",
    "1e",
    "e3",
    "0x10",
    "1_000",
    "∞",
    "\uff11",  # a fullwidth digit one
    "1Ki1",
    "NaN",
    "+-1",
    "1e1.5",
    "1ki",
)


def quantities() -> st.SearchStrategy[object]:
    """Quantity values: good and bad strings, integers at the edges, and wrong types."""
    generated = st.builds(
        lambda sign, number, suffix: f"{sign}{number}{suffix}",
        st.sampled_from(["", "", "+", "-"]),
        st.one_of(
            st.integers(0, 10**30).map(str),
            st.decimals(0, 10**6, places=4, allow_nan=False).map(str),
        ),
        st.sampled_from(["", "m", "k", "M", "G", "Ki", "Mi", "Gi", "Ei", "e3", "e-2", "e20"]),
    )
    return st.one_of(
        st.sampled_from(_GOOD_QUANTITIES),
        st.sampled_from(_BAD_QUANTITIES),
        generated,
        st.sampled_from([0, 1, -1, 2**31 - 1, 2**63 - 1, 2**63, 10**30]),
        st.sampled_from([True, 1.5, None, [], {}, {"value": "1"}]),
    )


def counts() -> st.SearchStrategy[object]:
    """Integers for counts and seconds: zero, negative, past int32 and int64, and non-integers."""
    return st.one_of(
        st.sampled_from(
            [0, 1, 2, -1, 100_000, 100_001, 2**31 - 1, 2**31, -(2**31), 2**63 - 1, 2**63, 10**20]
        ),
        st.integers(-5, 5),
        st.sampled_from([1.5, 2.0, "3", True, None, [], {}]),
    )


_UNICODE: Final = ("трен", "gang-🚀", "ü", "名前", "a\u200bb", "e\u0301")


def names() -> st.SearchStrategy[object]:
    """Object names: valid, at and past the length limits, unicode, upper case, wrong types."""
    label = "a" * 62 + "z"
    return st.one_of(
        st.sampled_from(["g", "train", "a.b.c", "x-1"]),
        st.just(".".join([label, label, label, "a" * 61])),  # 253 characters: the maximum
        st.just("a" * 254),
        st.just("a" * 64),
        st.sampled_from(_UNICODE),
        st.sampled_from(["Train", "-lead", "trail-", "a_b", "", " ", "a/b", "..", "a..b"]),
        st.text(min_size=1, max_size=20),
        st.sampled_from([7, True, None, ["x"]]),
    )


def label_values() -> st.SearchStrategy[object]:
    """Label values: valid, 63 and 64 characters, unicode, slashes, wrong types."""
    return st.one_of(
        st.sampled_from(["g", "train", "a.b", "A_b-9"]),
        st.just("a" * 63),
        st.just("a" * 64),
        st.sampled_from(_UNICODE),
        st.sampled_from(["", "-x", "a/b", "a b"]),
        st.text(max_size=70),
        st.sampled_from([7, True, None]),
    )


def label_keys() -> st.SearchStrategy[str]:
    return st.one_of(
        st.sampled_from(
            [
                "rack",
                "topology.kubernetes.io/zone",
                "kubernetes.io/hostname",
                "example.com/" + "k" * 63,
                "example.com/" + "k" * 64,
                "a" * 254 + "/x",
                "Upper.Case/x",
                "/x",
                "x/",
                "",
                "ключ",
            ]
        ),
        st.text(max_size=12),
    )


def _resource_names() -> st.SearchStrategy[str]:
    return st.one_of(
        st.sampled_from(
            [
                "cpu",
                "memory",
                "ephemeral-storage",
                "pods",
                "nvidia.com/gpu",
                "hugepages-2Mi",
                "example.com/widget",
                "example.com/ü",
                "a" * 300,
                "",
                "CPU",
            ]
        ),
        st.text(min_size=1, max_size=10),
    )


def _anything() -> st.SearchStrategy[object]:
    """A JSON value of any type: for "the wrong type" in any field."""
    return st.recursive(
        st.one_of(
            st.none(),
            st.booleans(),
            st.integers(-(2**64), 2**64),
            st.floats(allow_nan=False, allow_infinity=False),
            st.text(max_size=8),
        ),
        lambda inner: st.one_of(
            st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3)
        ),
        max_leaves=6,
    )


# -- object assembly --------------------------------------------------------


@st.composite
def _mutated(
    draw: st.DrawFn,
    base: Json,
    fields: dict[str, st.SearchStrategy[object]],
    *,
    most: int = 2,
) -> Sample:
    """``base`` with one to ``most`` of ``fields`` set (a path to a value; ``MISSING`` deletes it).

    A path whose parent an earlier change replaced (``spec`` made a string) is left out.
    """
    body = copy.deepcopy(base)
    chosen = draw(st.lists(st.sampled_from(sorted(fields)), min_size=1, max_size=most, unique=True))
    touched = tuple(path for path in chosen if _set(body, path, draw(fields[path])))
    return Sample(body, touched)


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


#: Draw this from a field's strategy to delete the field.
MISSING: Final = _Missing()


def _set(body: Json, path: str, value: object) -> bool:
    """Set a dotted path (``spec.containers.0.resources``), making missing parents.

    False when the path cannot be reached (a parent is not an object or a list).
    """
    parts = path.split(".")
    here: Any = body
    for depth, part in enumerate(parts):
        if not isinstance(here, dict | list):
            return False
        if isinstance(here, list) and (not part.isdigit() or int(part) >= len(here)):
            return False
        if depth == len(parts) - 1:
            break
        here = here[int(part)] if isinstance(here, list) else here.setdefault(part, {})
    last = parts[-1]
    if isinstance(here, list):
        here[int(last)] = None if value is MISSING else value
    elif value is MISSING:
        here.pop(last, None)
    else:
        here[last] = value
    return True


def _or_missing(strategy: st.SearchStrategy[object]) -> st.SearchStrategy[object]:
    return st.one_of(strategy, st.just(MISSING))


# -- PodGroups ----------------------------------------------------------------


#: Node label keys at the edges of the pattern the CRD and the models share.
_EDGE_KEYS: Final = (
    "rack\n",
    "a" * 63,
    "a" * 64,
    "p" * 253 + "/" + "n" * 63,  # 317: the longest
    "p" * 254 + "/" + "n" * 63,
    "a/b/c",
    "a.b/c",
    "-a/b",
    "A/b",
    "a/B_c.d",
    "a/_b",
    "é/b",
    "a/b\u0301",
)


def _topologies() -> st.SearchStrategy[object]:
    edge = st.sampled_from(_EDGE_KEYS)
    return st.one_of(
        st.builds(lambda key: {"required": key}, edge),
        st.builds(lambda keys: {"preferred": keys}, st.lists(edge, min_size=1, max_size=3)),
        st.just({}),
        st.builds(lambda key: {"required": key}, label_keys()),
        st.builds(lambda keys: {"preferred": keys}, st.lists(label_keys(), max_size=10)),
        st.builds(lambda key: {"required": key, "preferred": [key]}, label_keys()),
        st.builds(lambda key: {"preferred": [key, key]}, label_keys()),
        _anything(),
    )


def _role_lists() -> st.SearchStrategy[object]:
    edge_names = st.sampled_from(["é" * 63, "é" * 64, "🚀" * 63, "a\n", " ", "a" * 63])
    role = st.fixed_dictionaries(
        {"name": st.one_of(label_values(), edge_names), "minMember": counts()},
        optional={"topology": _topologies()},
    )
    plain = st.builds(lambda n, m: {"name": f"r{n}", "minMember": m}, st.integers(0, 3), counts())
    return st.one_of(
        st.lists(role, max_size=4),
        st.lists(plain, min_size=2, max_size=4),  # duplicate names are likely
        st.builds(lambda n: [{"name": f"r{i}", "minMember": 1} for i in range(n)], st.just(33)),
        st.just([{"name": "a", "minMember": 1}, {"name": "a", "minMember": 1}]),
        st.just([{"name": "a"}]),
        st.just([{"minMember": 1}]),
        _anything(),
    )


def _resource_lists() -> st.SearchStrategy[object]:
    return st.one_of(
        st.dictionaries(_resource_names(), quantities(), max_size=3),
        st.just({f"example.com/r{i}": "1" for i in range(33)}),
        _anything(),
    )


def _timestamps() -> st.SearchStrategy[object]:
    return st.sampled_from(["2026-11-25T00:00:00Z", "2026-11-25T00:00:00.123456789Z", "noon", 7])


def _podgroup_statuses() -> st.SearchStrategy[object]:
    """A status someone else wrote (``kubectl edit --subresource status``, an old controller)."""
    condition = st.fixed_dictionaries(
        {
            "type": st.sampled_from(["Scheduled", "Unschedulable", "Custom", ""]),
            "status": st.sampled_from(["True", "False", "Unknown", "Maybe"]),
        },
        optional={
            "reason": st.text(max_size=10),
            "message": st.text(max_size=10),
            "lastTransitionTime": _timestamps(),
            "transitionID": st.text(max_size=10),
        },
    )
    return st.fixed_dictionaries(
        {},
        optional={
            "phase": st.sampled_from(["Pending", "Running", "Finished", "Bogus"]),
            "conditions": st.lists(condition, max_size=3),
            "scheduled": counts(),
            "running": counts(),
            "failed": counts(),
            "scheduleStartTime": _timestamps(),
            "occupiedBy": st.text(max_size=10),
            "allocated": st.dictionaries(_resource_names(), quantities(), max_size=2),
        },
    )


def _xk8s_statuses() -> st.SearchStrategy[object]:
    return st.fixed_dictionaries(
        {},
        optional={
            "phase": st.sampled_from(["Pending", "PreScheduling", "Scheduled", "Bogus", ""]),
            "running": counts(),
            "succeeded": counts(),
            "failed": counts(),
            "scheduleStartTime": _timestamps(),
            "occupiedBy": st.text(max_size=10),
        },
    )


def _podgroup_base(namespace: str | None, api_version: str) -> Json:
    metadata: Json = {"name": "g"}
    if namespace is not None:
        metadata["namespace"] = namespace
    return {"apiVersion": api_version, "kind": "PodGroup", "metadata": metadata, "spec": {}}


def podgroups(namespace: str | None = None) -> st.SearchStrategy[Sample]:
    """Our PodGroups (``scheduling.sigs.k8s.io/v1alpha1``), one or two fields off the schema."""
    base = _podgroup_base(namespace, "scheduling.sigs.k8s.io/v1alpha1")
    base["spec"] = {"minMember": 2}
    return _mutated(
        base,
        {
            "metadata.name": names(),
            "metadata.labels": st.dictionaries(label_keys(), label_values(), max_size=2),
            "spec": _or_missing(_anything()),
            "spec.minMember": _or_missing(counts()),
            "spec.minResources": _resource_lists(),
            "spec.scheduleTimeoutSeconds": counts(),
            "spec.priorityClassName": names(),
            "spec.priority": counts(),
            "spec.queue": st.one_of(names(), st.sampled_from(["é" * 253, "é" * 254, "\n"])),
            "spec.roles": _role_lists(),
            "spec.topology": _topologies(),
            "spec.minMembers": counts(),  # a typo: pruned by the schema
            "status": _podgroup_statuses(),
        },
    )


def xk8s_podgroups(namespace: str | None = None) -> st.SearchStrategy[Sample]:
    """scheduler-plugins' PodGroups (``scheduling.x-k8s.io/v1alpha1``): a looser schema."""
    base = _podgroup_base(namespace, "scheduling.x-k8s.io/v1alpha1")
    base["spec"] = {"minMember": 2}
    return _mutated(
        base,
        {
            "metadata.name": names(),
            "spec": _or_missing(_anything()),
            "spec.minMember": _or_missing(counts()),
            "spec.minResources": _resource_lists(),
            "spec.scheduleTimeoutSeconds": counts(),
            "status": _xk8s_statuses(),
        },
    )


def volcano_podgroups(namespace: str | None = None) -> st.SearchStrategy[Sample]:
    """Volcano's PodGroups (``scheduling.volcano.sh/v1beta1``): tasks, queue, topology."""
    base = _podgroup_base(namespace, "scheduling.volcano.sh/v1beta1")
    base["spec"] = {"minMember": 2}
    task_minimums = st.dictionaries(names().filter(lambda n: isinstance(n, str)), counts())
    return _mutated(
        base,
        {
            "metadata.name": names(),
            "spec": _or_missing(_anything()),
            "spec.minMember": _or_missing(counts()),
            "spec.minTaskMember": st.one_of(task_minimums, _anything()),
            "spec.minResources": _resource_lists(),
            "spec.priorityClassName": _or_missing(_anything()),
            "spec.queue": _or_missing(names()),
            "spec.networkTopology": _or_missing(_anything()),
            "spec.subGroupPolicy": _or_missing(_anything()),
            "status": _anything(),
        },
    )


def t9k_podgroups(namespace: str | None = None) -> st.SearchStrategy[Sample]:
    """T9k's PodGroups (``scheduler.tensorstack.dev/v1beta1``): roles, priority 0-100."""
    base = _podgroup_base(namespace, "scheduler.tensorstack.dev/v1beta1")
    base["spec"] = {"minMember": 2}
    return _mutated(
        base,
        {
            "metadata.name": names(),
            "spec": _or_missing(_anything()),
            "spec.minMember": _or_missing(counts()),
            "spec.roles": _role_lists(),
            "spec.priority": _or_missing(st.one_of(counts(), _anything())),
            "spec.queue": _or_missing(names()),
            "spec.topologyPolicy": _or_missing(_anything()),
            "status": _anything(),
        },
    )


# -- pods -----------------------------------------------------------------------


def _group_labels() -> st.SearchStrategy[object]:
    """Group and role labels: missing groups, two labels naming different groups, odd values."""
    keys = st.sampled_from([POD_GROUP_LABEL, *POD_GROUP_LABEL_ALIASES])
    return st.one_of(
        st.dictionaries(keys, label_values(), min_size=1, max_size=3),
        st.builds(lambda v, r: {POD_GROUP_LABEL: v, ROLE_LABEL: r}, label_values(), label_values()),
        st.just({POD_GROUP_LABEL: "a" * 63}),
        st.just({POD_GROUP_LABEL: "absent"}),
    )


def _node_selector_terms() -> st.SearchStrategy[object]:
    operator = st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Near", ""])
    requirement = st.fixed_dictionaries(
        {"key": label_keys(), "operator": operator},
        optional={"values": st.lists(st.one_of(label_values(), st.just("9" * 30)), max_size=3)},
    )
    term = st.fixed_dictionaries(
        {},
        optional={
            "matchExpressions": st.lists(requirement, max_size=2),
            "matchFields": st.lists(
                st.fixed_dictionaries(
                    {
                        "key": st.sampled_from(["metadata.name", "spec.nodeName", "x"]),
                        "operator": operator,
                    },
                    optional={"values": st.lists(names(), max_size=3)},
                ),
                max_size=2,
            ),
        },
    )
    return st.one_of(st.lists(term, max_size=2), _anything())


def _pod_affinity_terms() -> st.SearchStrategy[list[Json]]:
    selector = st.one_of(
        st.fixed_dictionaries(
            {},
            optional={
                "matchLabels": st.dictionaries(label_keys(), label_values(), max_size=2),
                "matchExpressions": st.lists(
                    st.fixed_dictionaries(
                        {
                            "key": label_keys(),
                            "operator": st.sampled_from(["In", "NotIn", "Exists", "Gt", "x"]),
                        },
                        optional={"values": st.lists(label_values(), max_size=2)},
                    ),
                    max_size=2,
                ),
            },
        ),
        _anything(),
    )
    term = st.fixed_dictionaries(
        {"topologyKey": label_keys()},
        optional={
            "labelSelector": selector,
            "namespaces": st.lists(names(), max_size=2),
            "namespaceSelector": selector,
            "matchLabelKeys": st.lists(label_keys(), max_size=2),
            "mismatchLabelKeys": st.lists(label_keys(), max_size=2),
        },
    )
    return st.lists(term, max_size=2)


def _affinities() -> st.SearchStrategy[object]:
    weighted = st.builds(
        lambda weight, term: {"weight": weight, "podAffinityTerm": term},
        counts(),
        _pod_affinity_terms().map(lambda terms: terms[0] if terms else {}),
    )
    node = st.fixed_dictionaries(
        {},
        optional={
            "requiredDuringSchedulingIgnoredDuringExecution": st.one_of(
                st.builds(lambda terms: {"nodeSelectorTerms": terms}, _node_selector_terms()),
                _anything(),
            ),
            "preferredDuringSchedulingIgnoredDuringExecution": st.lists(
                st.builds(
                    lambda weight, terms: {
                        "weight": weight,
                        "preference": terms[0] if isinstance(terms, list) and terms else {},
                    },
                    counts(),
                    _node_selector_terms(),
                ),
                max_size=2,
            ),
        },
    )
    pod = st.fixed_dictionaries(
        {},
        optional={
            "requiredDuringSchedulingIgnoredDuringExecution": _pod_affinity_terms(),
            "preferredDuringSchedulingIgnoredDuringExecution": st.lists(weighted, max_size=2),
        },
    )
    return st.one_of(
        st.fixed_dictionaries(
            {}, optional={"nodeAffinity": node, "podAffinity": pod, "podAntiAffinity": pod}
        ),
        _anything(),
    )


def _spread_constraints() -> st.SearchStrategy[object]:
    constraint = st.fixed_dictionaries(
        {
            "maxSkew": counts(),
            "topologyKey": label_keys(),
            "whenUnsatisfiable": st.sampled_from(["DoNotSchedule", "ScheduleAnyway", "Sometimes"]),
        },
        optional={
            "labelSelector": st.builds(
                lambda labels: {"matchLabels": labels},
                st.dictionaries(label_keys(), label_values(), max_size=2),
            ),
            "minDomains": counts(),
            "matchLabelKeys": st.lists(label_keys(), max_size=2),
            "nodeAffinityPolicy": st.sampled_from(["Honor", "Ignore", "Maybe"]),
            "nodeTaintsPolicy": st.sampled_from(["Honor", "Ignore", "Maybe"]),
        },
    )
    return st.one_of(st.lists(constraint, max_size=3), _anything())


def _tolerations() -> st.SearchStrategy[object]:
    toleration = st.fixed_dictionaries(
        {},
        optional={
            "key": label_keys(),
            "operator": st.sampled_from(["Equal", "Exists", "Lt", "", "exists"]),
            "value": label_values(),
            "effect": st.sampled_from(["", "NoSchedule", "PreferNoSchedule", "NoExecute", "Bad"]),
            "tolerationSeconds": counts(),
        },
    )
    return st.one_of(st.lists(toleration, max_size=3), _anything())


def _resources() -> st.SearchStrategy[object]:
    amounts = st.dictionaries(_resource_names(), quantities(), max_size=3)
    return st.one_of(
        st.fixed_dictionaries({}, optional={"requests": amounts, "limits": amounts}),
        _anything(),
    )


def _init_containers() -> st.SearchStrategy[object]:
    container = st.fixed_dictionaries(
        {"name": st.sampled_from(["init", "side"]), "image": st.just("pause")},
        optional={"resources": _resources(), "restartPolicy": st.sampled_from(["Always", "x"])},
    )
    return st.one_of(st.lists(container, max_size=2), _anything())


def _volumes() -> st.SearchStrategy[object]:
    return st.one_of(
        st.just([{"name": "data", "persistentVolumeClaim": {"claimName": "absent"}}]),
        st.builds(
            lambda claim: [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}],
            names(),
        ),
        _anything(),
    )


# Shapes the API server accepts, with values at their edges: these reach the scheduler.

_VALID_KEYS: Final = ("kubernetes.io/hostname", "rack", "example.com/" + "k" * 63)
_BIG_INTS: Final = (1, 2, 2**31 - 1)


def _edgy_spread() -> st.SearchStrategy[object]:
    constraint = st.fixed_dictionaries(
        {
            "maxSkew": st.sampled_from(_BIG_INTS),
            "topologyKey": st.sampled_from(_VALID_KEYS),
            "whenUnsatisfiable": st.sampled_from(["DoNotSchedule", "ScheduleAnyway"]),
            "labelSelector": st.just({"matchLabels": {"app": "fuzz"}}),
        },
        optional={"matchLabelKeys": st.just(["app"])},
    )
    strict = st.builds(
        lambda skew, domains: [
            {
                "maxSkew": skew,
                "minDomains": domains,
                "topologyKey": "rack",
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": "fuzz"}},
            }
        ],
        st.sampled_from(_BIG_INTS),
        st.sampled_from(_BIG_INTS),
    )
    return st.one_of(st.lists(constraint, min_size=1, max_size=2), strict)


def _edgy_affinity() -> st.SearchStrategy[object]:
    term = st.fixed_dictionaries(
        {"topologyKey": st.sampled_from(_VALID_KEYS)},
        optional={
            "labelSelector": st.sampled_from(
                [{}, {"matchLabels": {"app": "fuzz"}}, {"matchLabels": {"app": "nobody"}}]
            ),
            "namespaceSelector": st.just({}),
            "namespaces": st.just(["elsewhere"]),
        },
    )
    node_term = st.sampled_from(
        [
            {"matchExpressions": [{"key": "rack", "operator": "Gt", "values": ["9" * 18]}]},
            {"matchExpressions": [{"key": "rack", "operator": "Lt", "values": ["-" + "9" * 18]}]},
            {"matchExpressions": [{"key": "rack", "operator": "DoesNotExist"}]},
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["absent"]}]},
            {"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["x"]}]},
        ]
    )
    return st.one_of(
        st.builds(lambda t: {"podAntiAffinity": {_REQUIRED: [t]}}, term),
        st.builds(lambda t: {"podAffinity": {_REQUIRED: [t]}}, term),
        st.builds(
            lambda w, t: {"podAffinity": {_PREFERRED: [{"weight": w, "podAffinityTerm": t}]}},
            st.sampled_from([1, 100]),
            term,
        ),
        st.builds(lambda t: {"nodeAffinity": {_REQUIRED: {"nodeSelectorTerms": [t]}}}, node_term),
    )


def _edgy_tolerations() -> st.SearchStrategy[object]:
    return st.lists(
        st.sampled_from(
            [
                {"operator": "Exists"},
                {"key": "k", "operator": "Exists", "effect": "NoExecute"},
                {"key": "k", "value": "v", "effect": "NoExecute", "tolerationSeconds": 2**63 - 1},
                {"key": "k", "value": "v", "effect": "NoExecute", "tolerationSeconds": -(2**63)},
                {"key": "", "operator": "Exists", "effect": "NoSchedule"},
            ]
        ),
        min_size=1,
        max_size=3,
    )


_REQUIRED: Final = "requiredDuringSchedulingIgnoredDuringExecution"
_PREFERRED: Final = "preferredDuringSchedulingIgnoredDuringExecution"


def pods(namespace: str | None = None, pool: str = "pool") -> st.SearchStrategy[Sample]:
    """Pods of ours (``schedulerName: coscheduler``), one or two fields off the schema.

    Every pod keeps its nodeSelector on ``pool`` (fuzzed selectors add keys to it).
    """
    metadata: Json = {"name": "p", "labels": {"app": "fuzz"}}
    if namespace is not None:
        metadata["namespace"] = namespace
    base: Json = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {
            "schedulerName": SCHEDULER_NAME,
            "nodeSelector": {POOL_LABEL: pool},
            "terminationGracePeriodSeconds": 0,
            "containers": [
                {
                    "name": "work",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
                }
            ],
        },
    }
    selector = st.dictionaries(label_keys(), label_values(), max_size=2).map(
        lambda extra: {**extra, POOL_LABEL: pool} if isinstance(extra, dict) else extra
    )
    return _mutated(
        base,
        {
            "metadata.name": names(),
            "metadata.labels": _group_labels(),
            "spec.containers.0.resources": _resources(),
            "spec.containers.0.resources.requests.cpu": quantities(),
            "spec.containers.0.resources.requests.memory": quantities(),
            "spec.containers.0.resources.limits": st.dictionaries(
                _resource_names(), quantities(), max_size=2
            ),
            "spec.containers.0.ports": st.lists(
                st.fixed_dictionaries(
                    {"containerPort": counts()},
                    optional={"hostPort": counts(), "protocol": st.sampled_from(["TCP", "XTP"])},
                ),
                max_size=2,
            ),
            "spec.containers": st.one_of(st.just([]), _anything()),
            "spec.initContainers": _init_containers(),
            "spec.overhead": st.dictionaries(_resource_names(), quantities(), max_size=2),
            "spec.nodeSelector": selector,
            "spec.affinity": st.one_of(_affinities(), _edgy_affinity()),
            "spec.topologySpreadConstraints": st.one_of(_spread_constraints(), _edgy_spread()),
            "spec.tolerations": st.one_of(_tolerations(), _edgy_tolerations()),
            "spec.priority": counts(),
            "spec.priorityClassName": st.one_of(
                names(), st.sampled_from(["system-node-critical", "system-cluster-critical"])
            ),
            "spec.schedulingGates": st.one_of(st.just([{"name": "example.com/wait"}]), _anything()),
            "spec.volumes": _volumes(),
        },
    )
