"""The device search backtracks: where some allocation of a member's claims exists, it finds one.

The reference is a brute force over small instances: every alternative of
every request, every set of matching devices, kept when no device is taken
twice and every ``matchAttribute`` holds.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from coscheduler.api.devices import DeviceClassInfo, ResourceClaimInfo, ResourceSliceInfo
from coscheduler.core.device_cel import Selector
from coscheduler.core.devices import DeviceIndex, DeviceRefusalError, PodDevices
from tests.builders import node
from tests.dra import DRIVER, claim, device_class, exactly, gpu, gpu_slice

NVLINK = f"{DRIVER}/nvlink"
#: The classes the instances ask from, and which models each takes.
CLASSES = {"any": ("A", "B"), "a": ("A",), "b": ("B",)}


def _index(models_and_domains: Sequence[tuple[str, str]]) -> DeviceIndex:
    raw = gpu_slice("n1", 0)
    raw["spec"]["devices"] = [
        gpu(i, model=model, domain=domain) for i, (model, domain) in enumerate(models_and_domains)
    ]
    index = DeviceIndex()
    index.upsert_slice(ResourceSliceInfo.from_object(raw))
    for name, models in CLASSES.items():
        either = " || ".join(f'device.attributes["{DRIVER}"].model == "{m}"' for m in models)
        index.upsert_class(DeviceClassInfo.from_object(device_class(name, either)))
    return index


def _fit(index: DeviceIndex, *claims: dict[str, Any]) -> PodDevices:
    keys = []
    for raw in claims:
        info = ResourceClaimInfo.from_object(raw)
        index.upsert_claim(info)
        keys.append(info.key)
    return index.fit("p", keys, node("n1"))


def test_a_request_leaves_the_only_device_a_later_one_can_take() -> None:
    # gpu-0 is the only B; "first" could take it or gpu-1, "second" needs it.
    index = _index([("B", "x"), ("A", "x")])
    found = _fit(
        index,
        claim(
            "c",
            {"name": "first", "exactly": exactly(1, "any")},
            {"name": "second", "exactly": exactly(1, "b")},
        ),
    )
    given_to = {r.request: r.device for r in found.allocations[0].results}
    assert given_to == {"first": "gpu-1", "second": "gpu-0"}


def test_a_constrained_request_tries_the_other_domain_for_a_later_request() -> None:
    # Domain x has two A; domain y has two A and the only B. One NVLink domain for the claim.
    index = _index([("A", "x"), ("A", "x"), ("A", "y"), ("A", "y"), ("B", "y")])
    found = _fit(
        index,
        claim(
            "c",
            {"name": "pair", "exactly": exactly(2, "a")},
            {"name": "b", "exactly": exactly(1, "b")},
            constraints=[{"matchAttribute": NVLINK}],
        ),
    )
    assert sorted(r.device for r in found.allocations[0].results) == ["gpu-2", "gpu-3", "gpu-4"]


def test_the_search_spans_the_member_s_claims() -> None:
    index = _index([("B", "x"), ("A", "x")])
    found = _fit(
        index,
        claim("one", {"name": "r", "exactly": exactly(1, "any")}),
        claim("two", {"name": "r", "exactly": exactly(1, "b")}),
    )
    assert [[r.device for r in a.results] for a in found.allocations] == [["gpu-1"], ["gpu-0"]]


def test_a_hopeless_claim_is_refused_once_the_budget_is_spent() -> None:
    index = _index([("A", "x")] * 6 + [("B", "y")])
    # No allocation (two B asked, one there): the combinations of the "any" requests
    # before it outnumber the budget, and the search stops there.
    raw = claim(
        "c",
        *({"name": f"r{i}", "exactly": exactly(2, "any")} for i in range(3)),
        {"name": "b", "exactly": exactly(2, "b")},
    )
    with pytest.raises(DeviceRefusalError):
        _fit(index, raw)


# -- against a brute force -----------------------------------------------------

_choices = st.tuples(st.sampled_from(sorted(CLASSES)), st.integers(1, 3), st.booleans())


@st.composite
def instances(draw: st.DrawFn) -> tuple[list[tuple[str, str]], dict[str, Any]]:
    devices = draw(
        st.lists(st.tuples(st.sampled_from("AB"), st.sampled_from("xy")), min_size=1, max_size=6)
    )
    requests: list[dict[str, Any]] = []
    for number in range(draw(st.integers(1, 3))):
        alternatives = draw(st.lists(_choices, min_size=1, max_size=2))
        entries: list[dict[str, Any]] = [
            {
                "name": f"s{i}",
                "deviceClassName": cls,
                **({"allocationMode": "All"} if every else {"count": count}),
            }
            for i, (cls, count, every) in enumerate(alternatives)
        ]
        if len(entries) == 1 and draw(st.booleans()):
            del entries[0]["name"]
            requests.append({"name": f"r{number}", "exactly": entries[0]})
        else:
            requests.append({"name": f"r{number}", "firstAvailable": entries})
    constraints = None
    if draw(st.booleans()):
        names = [r["name"] for r in requests]
        covered = draw(st.lists(st.sampled_from(names), unique=True, max_size=len(names)))
        constraints = [{"matchAttribute": NVLINK, **({"requests": covered} if covered else {})}]
    return devices, claim("c", *requests, constraints=constraints)


def _alternatives(request: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    if "exactly" in request:
        return [(request["name"], request["exactly"])]
    return [(f"{request['name']}/{a['name']}", a) for a in request["firstAvailable"]]


def _matching(devices: Sequence[tuple[str, str]], choice: dict[str, Any]) -> list[int]:
    models = CLASSES[choice["deviceClassName"]]
    return [i for i, (model, _) in enumerate(devices) if model in models]


def _brute_force(
    devices: Sequence[tuple[str, str]], raw: dict[str, Any], taken: frozenset[int] = frozenset()
) -> bool:
    """Whether some allocation exists; ``taken`` devices are another claim's (All fails on them)."""
    spec = raw["spec"]["devices"]
    constraints = spec.get("constraints") or []

    def assignments(position: int, used: frozenset[int]) -> Iterator[list[tuple[str, list[int]]]]:
        if position == len(spec["requests"]):
            yield []
            return
        for name, choice in _alternatives(spec["requests"][position]):
            matching = _matching(devices, choice)
            if choice.get("allocationMode") == "All":
                options = [tuple(matching)] if matching and not taken & set(matching) else []
            else:
                free = [i for i in matching if i not in taken]
                options = list(itertools.combinations(free, choice["count"]))
            for option in options:
                if used & set(option):
                    continue
                for rest in assignments(position + 1, used | set(option)):
                    yield [(name, list(option)), *rest]

    for assignment in assignments(0, frozenset()):
        if _constraints_hold(devices, assignment, constraints):
            return True
    return False


def _constraints_hold(
    devices: Sequence[tuple[str, str]],
    assignment: Sequence[tuple[str, Sequence[int]]],
    constraints: Sequence[dict[str, Any]],
) -> bool:
    for constraint in constraints:
        covered = constraint.get("requests")
        domains = {
            devices[i][1]
            for name, picked in assignment
            if not covered or name.split("/", 1)[0] in covered
            for i in picked
        }
        if len(domains) > 1:
            return False
    return True


def _valid(devices: Sequence[tuple[str, str]], raw: dict[str, Any], found: PodDevices) -> bool:
    """What the allocator gave is an allocation: the brute force's rules, checked."""
    spec = raw["spec"]["devices"]
    results = found.allocations[0].results
    picked = [int(r.device.removeprefix("gpu-")) for r in results]
    if len(set(picked)) != len(picked):
        return False
    assignment: list[tuple[str, list[int]]] = []
    for request in spec["requests"]:
        mine = [r for r in results if r.request.split("/", 1)[0] == request["name"]]
        names = {r.request for r in mine}
        if len(names) != 1:
            return False
        (name,) = names
        choice = dict(_alternatives(request))[name]
        indices = sorted(int(r.device.removeprefix("gpu-")) for r in mine)
        matching = _matching(devices, choice)
        if choice.get("allocationMode") == "All":
            if indices != matching:
                return False
        elif len(indices) != choice["count"] or not set(indices) <= set(matching):
            return False
        assignment.append((name, indices))
    return _constraints_hold(devices, assignment, spec.get("constraints") or [])


@settings(max_examples=400, deadline=None)
@given(instances())
def test_where_an_allocation_exists_the_search_finds_one(
    instance: tuple[list[tuple[str, str]], dict[str, Any]],
) -> None:
    devices, raw = instance
    exists = _brute_force(devices, raw)
    index = _index(devices)
    try:
        found = _fit(index, raw)
    except DeviceRefusalError:
        assert not exists, "refused though an allocation exists"
        return
    assert exists
    assert _valid(devices, raw, found)


@settings(max_examples=200, deadline=None)
@given(instances(), st.lists(st.sampled_from(range(6)), unique=True, max_size=3))
def test_devices_already_taken_are_never_given(
    instance: tuple[list[tuple[str, str]], dict[str, Any]], taken: list[int]
) -> None:
    devices, raw = instance
    taken = [i for i in taken if i < len(devices)]
    index = _index(devices)
    if taken:
        holder = claim("holder", {"name": "r", "exactly": exactly(len(taken), "any")})
        status = {
            "allocation": {
                "devices": {
                    "results": [
                        {"request": "r", "driver": DRIVER, "pool": "n1", "device": f"gpu-{i}"}
                        for i in taken
                    ]
                }
            }
        }
        index.upsert_claim(ResourceClaimInfo.from_object({**holder, "status": status}))
    exists = _brute_force(devices, raw, frozenset(taken))
    try:
        found = _fit(index, raw)
    except DeviceRefusalError:
        assert not exists
        return
    given_devices = {int(r.device.removeprefix("gpu-")) for r in found.allocations[0].results}
    assert not given_devices & set(taken)
    assert exists


# -- the plain-equality reading of selectors agrees with CEL -------------------

_literals = st.one_of(st.sampled_from(["H100", "A100", "x", ""]), st.integers(-2, 2), st.booleans())
_fields = st.sampled_from(
    [
        "device.driver",
        f'device.attributes["{DRIVER}"].model',
        f'device.attributes["{DRIVER}"].index',
        f"device.attributes['{DRIVER}']['driverVersion']",
        f'device.attributes["{DRIVER}"].missing',
        'device.attributes["other.example.com"].model',
    ]
)


def _literal(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value) if isinstance(value, int) else f'"{value}"'


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(_fields, _literals), min_size=1, max_size=3),
    st.sampled_from(["H100", "A100"]),
    st.integers(0, 2),
)
def test_plain_equalities_answer_as_cel_does(
    terms: list[tuple[str, object]], model: str, number: int
) -> None:
    expression = " && ".join(f"{field} == {_literal(value)}" for field, value in terms)
    device = ResourceSliceInfo.from_object(_slice_of(gpu(number, model=model))).devices[0]
    selector = Selector(expression)

    def outcome(run: Any) -> object:
        try:
            return run(DRIVER, device)
        except ValueError as error:
            return type(error)

    assert outcome(selector.matches) == outcome(selector.evaluate)


def _slice_of(device: dict[str, Any]) -> dict[str, Any]:
    raw = gpu_slice("n1", 0)
    raw["spec"]["devices"] = [device]
    return raw
