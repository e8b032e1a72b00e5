"""Quantities: every form the API server accepts, and the ones it refuses."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from coscheduler.api.quantity import (
    QuantityError,
    parse_quantity,
    parse_resource_list,
    resource_amount,
    to_milli,
    to_units,
)

# (quantity, exact value): forms taken from what kube-apiserver accepts and
# how it canonicalises them (e.g. "129e6" is stored as "129M").
VALID = [
    ("0", Fraction(0)),
    ("1", Fraction(1)),
    ("100m", Fraction(1, 10)),
    ("1500m", Fraction(3, 2)),
    ("1.5", Fraction(3, 2)),
    ("0.1", Fraction(1, 10)),
    (".5", Fraction(1, 2)),
    ("5.", Fraction(5)),
    ("+2", Fraction(2)),
    ("-2", Fraction(-2)),
    ("1k", Fraction(1000)),
    ("1M", Fraction(10**6)),
    ("1G", Fraction(10**9)),
    ("1T", Fraction(10**12)),
    ("1P", Fraction(10**15)),
    ("1E", Fraction(10**18)),
    ("1Ki", Fraction(1024)),
    ("123Mi", Fraction(128974848)),
    ("2Gi", Fraction(2 * 2**30)),
    ("1.5Gi", Fraction(3 * 2**29)),
    ("1Ti", Fraction(2**40)),
    ("1Pi", Fraction(2**50)),
    ("1Ei", Fraction(2**60)),
    ("1e3", Fraction(1000)),
    ("1E3", Fraction(1000)),
    ("129e6", Fraction(129 * 10**6)),
    ("128974848", Fraction(128974848)),
    ("1e-3", Fraction(1, 1000)),
    ("12e+2", Fraction(1200)),
    ("250000000n", Fraction(1, 4)),
    ("500u", Fraction(1, 2000)),
    ("0.5m", Fraction(1, 2000)),
]

INVALID = [
    "",
    " 1",
    "1 ",
    "1 Gi",
    "abc",
    "Gi",
    "1gi",
    "1K",
    "1KiB",
    "1.5.5",
    "e3",
    "1e",
    "1e3.5",
    "--1",
    "+-1",
    "1Gb",
    "0x10",
    "1_000",
    "∞",
    "1e99999",
]


@pytest.mark.parametrize(("text", "expected"), VALID, ids=[v[0] for v in VALID])
def test_valid_quantities_parse_exactly(text: str, expected: Fraction) -> None:
    assert parse_quantity(text) == expected


@pytest.mark.parametrize("text", INVALID, ids=[repr(v) for v in INVALID])
def test_invalid_quantities_are_refused_quoting_the_value(text: str) -> None:
    with pytest.raises(QuantityError) as caught:
        parse_quantity(text)
    assert repr(text) in str(caught.value)


@pytest.mark.parametrize("value", [1.5, None, [], True], ids=["float", "none", "list", "bool"])
def test_non_string_values_are_refused(value: object) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(value)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "milli", "units"),
    [
        ("100m", 100, 1),
        ("1", 1000, 1),
        ("1.5", 1500, 2),
        ("0.5m", 1, 1),  # rounded up, as the API server's MilliValue() does
        ("1n", 1, 1),
        ("2Ki", 2048000, 2048),
        ("-1.5", -1500, -1),
    ],
)
def test_conversion_rounds_up(text: str, milli: int, units: int) -> None:
    assert to_milli(text) == milli
    assert to_units(text) == units


def test_integers_from_yaml_are_accepted() -> None:
    assert to_units(4) == 4
    assert to_milli(4) == 4000


def test_resource_amount_uses_millicores_for_cpu_only() -> None:
    assert resource_amount("cpu", "2") == 2000
    assert resource_amount("memory", "1Gi") == 2**30
    assert resource_amount("nvidia.com/gpu", "4") == 4
    assert resource_amount("pods", 110) == 110


@pytest.mark.parametrize("value", [True, False, 1.0, [1], {"a": 1}, None])
def test_resource_amount_refuses_what_is_not_a_quantity_every_time(value: object) -> None:
    # Amounts are remembered per value: a bool (equal to 1 or 0) and unhashable
    # values must still be refused, on every call.
    resource_amount("cpu", 1)
    resource_amount("cpu", 0)
    for _ in range(2):
        with pytest.raises(QuantityError):
            resource_amount("cpu", value)  # type: ignore[arg-type]


@given(st.integers(min_value=0, max_value=10**6), st.sampled_from(["", "m", "k", "Mi", "Gi"]))
def test_resource_amount_remembered_equals_the_exact_reading(number: int, suffix: str) -> None:
    text = f"{number}{suffix}"
    for resource in ("cpu", "memory"):
        exact = parse_quantity(text) * (1000 if resource == "cpu" else 1)
        assert resource_amount(resource, text) == -(-exact.numerator // exact.denominator)
        assert resource_amount(resource, text) == resource_amount(resource, text)


def test_resource_list_names_the_bad_resource() -> None:
    assert parse_resource_list({"cpu": "250m", "memory": "64Mi"}) == {
        "cpu": 250,
        "memory": 64 * 2**20,
    }
    assert parse_resource_list(None) == {}
    with pytest.raises(QuantityError, match=r"'memory'.*'lots'"):
        parse_resource_list({"cpu": "1", "memory": "lots"})
    with pytest.raises(QuantityError, match="must not be negative"):
        parse_resource_list({"cpu": "-1"})


@given(
    st.integers(min_value=0, max_value=10**12), st.sampled_from(["", "m", "k", "Ki", "Mi", "Gi"])
)
def test_integer_with_suffix_round_trips(number: int, suffix: str) -> None:
    scales: dict[str, int | Fraction] = {
        "": 1,
        "m": Fraction(1, 1000),
        "k": 1000,
        "Ki": 1024,
        "Mi": 2**20,
        "Gi": 2**30,
    }
    scale = scales[suffix]
    assert parse_quantity(f"{number}{suffix}") == number * scale


@given(st.decimals(min_value=0, max_value=10**9, places=3, allow_nan=False, allow_infinity=False))
def test_decimal_strings_are_exact(number: object) -> None:
    text = f"{number:f}"
    assert parse_quantity(text) == Fraction(text)
