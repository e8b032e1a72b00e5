"""Kubernetes resource quantities, parsed exactly.

The API server accepts quantities in the grammar of ``resource.Quantity``::

    quantity ::= sign? number suffix
    number   ::= digits | digits "." digits? | "." digits
    suffix   ::= binarySI | decimalSI | ("e" | "E") sign? digits
    binarySI ::= Ki | Mi | Gi | Ti | Pi | Ei
    decimalSI::= n | u | m | "" | k | M | G | T | P | E

We parse that grammar into an exact :class:`fractions.Fraction` and convert
it once to the integers the scheduler computes with: milli-units for cpu and
plain units (bytes, counts) for everything else. Like the API server's
``MilliValue()`` and ``Value()``, the conversion rounds up, so a request is
never under-counted. No float ever enters: ``0.1`` cpu is 100 millicores,
not 100.00000000000001.

No well-kept Python library parses this grammar on its own (the official
synchronous client has a helper, but it is one function in a very large
package, and lax about forms the API server refuses), so the grammar lives
here and is tested against a table of quantities the API server accepts and
refuses.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from functools import lru_cache
from typing import Final

__all__ = [
    "MAX_AMOUNT",
    "MILLI_RESOURCES",
    "QuantityError",
    "ResourceAmounts",
    "float_quantity",
    "format_quantity",
    "format_resource_list",
    "parse_quantity",
    "parse_resource_list",
    "resource_amount",
    "to_milli",
    "to_units",
]

#: A ResourceList in the scheduler's integers: resource name → amount.
ResourceAmounts = dict[str, int]

#: Resources counted in milli-units; every other resource in whole units.
MILLI_RESOURCES: Final[frozenset[str]] = frozenset({"cpu"})

#: The largest amount the scheduler counts (millicores, bytes, units): 2**52, that
#: is 4 PiB of memory or 4.5 trillion cpus. The core keeps amounts in int64
#: arrays and sums them over nodes; a quantity the API server accepts, such as
#: cpu "1e18" (10**21 millicores), would overflow them. No real node or pod comes
#: near it, so more than this is refused as unreadable rather than rounded.
MAX_AMOUNT: Final = 2**52

#: Resources counted in bytes, written in binary units when exact.
_BYTE_RESOURCES: Final = frozenset({"memory", "ephemeral-storage"})
_BINARY_SUFFIXES: Final[dict[str, int]] = {
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
    "Pi": 2**50,
    "Ei": 2**60,
}
_DECIMAL_SUFFIXES: Final[dict[str, Fraction]] = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 1000),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}

# "E" alone is the exa suffix; "E" followed by digits is an exponent. The
# regular expression tries the exponent form first, as the API server does.
_QUANTITY_RE: Final = re.compile(
    r"""
    (?P<sign>[+-])?
    (?P<number>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)
    (?:
        [eE](?P<exponent>[+-]?[0-9]+)
      | (?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)
    )?
    """,
    re.VERBOSE,
)

# The API server refuses exponents this large; so do we, before Fraction
# would try to build a number with a billion digits.
_MAX_EXPONENT: Final = 1000


class QuantityError(ValueError):
    """A quantity that the Kubernetes API server would refuse."""

    def __init__(self, value: object, why: str) -> None:
        self.value = value
        super().__init__(f"invalid quantity {value!r}: {why}")


def parse_quantity(value: str | int) -> Fraction:
    """Parse a Kubernetes quantity into its exact value.

    ``value`` is a string as the API server stores it (``"100m"``, ``"2Gi"``,
    ``"1e3"``) or a plain integer as YAML may give it. Raises
    :class:`QuantityError`, quoting the value, for anything else.
    """
    if isinstance(value, bool):
        raise QuantityError(value, "a boolean is not a quantity")
    if isinstance(value, int):
        return Fraction(value)
    if not isinstance(value, str):
        raise QuantityError(value, f"expected a string or an integer, got {type(value).__name__}")
    text = value.strip()
    if text != value:
        raise QuantityError(value, "surrounding whitespace is not allowed")
    match = _QUANTITY_RE.fullmatch(text)
    if match is None:
        raise QuantityError(
            value,
            "expected a number with an optional suffix "
            "(n, u, m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei) or an exponent (e3)",
        )
    number = Fraction(match["number"])
    if match["exponent"] is not None:
        exponent = int(match["exponent"])
        if abs(exponent) > _MAX_EXPONENT:
            raise QuantityError(value, "exponent out of range")
        scale = Fraction(10) ** exponent
    elif match["suffix"] in _BINARY_SUFFIXES:
        scale = Fraction(_BINARY_SUFFIXES[match["suffix"]])
    else:
        scale = _DECIMAL_SUFFIXES[match["suffix"] or ""]
    magnitude = number * scale
    return -magnitude if match["sign"] == "-" else magnitude


def float_quantity(value: str | int | float) -> float:
    """A quantity as a float in base units (``500m`` → 0.5), for figures, not decisions."""
    return float(value) if isinstance(value, float) else float(parse_quantity(value))


def to_milli(value: str | int) -> int:
    """The quantity in thousandths, rounded up (``"100m"`` → 100, ``"1.5"`` → 1500)."""
    return math.ceil(parse_quantity(value) * 1000)


def to_units(value: str | int) -> int:
    """The quantity in whole units, rounded up (``"2Ki"`` → 2048, ``"1500m"`` → 2)."""
    return math.ceil(parse_quantity(value))


def resource_amount(resource: str, value: str | int) -> int:
    """The integer the scheduler uses for ``resource``: millicores for cpu, units otherwise."""
    if type(value) is str or type(value) is int:  # not a bool, nor anything unhashable
        return _remembered_amount(resource, value)
    return _exact_amount(resource, value)


def _exact_amount(resource: str, value: str | int) -> int:
    return to_milli(value) if resource in MILLI_RESOURCES else to_units(value)


#: A cluster names the same few quantities over and over (each status written is
#: checked again), and the exact arithmetic is dear; a refused one raises each time.
_remembered_amount: Final = lru_cache(maxsize=4096)(_exact_amount)


def parse_resource_list(resources: dict[str, str | int] | None) -> ResourceAmounts:
    """Convert a Kubernetes ResourceList into integers, refusing negative amounts.

    The error names the resource as well as the value, so a user can find it.
    """
    amounts: ResourceAmounts = {}
    for name, value in (resources or {}).items():
        try:
            amount = resource_amount(name, value)
        except QuantityError as error:
            raise QuantityError(value, f"resource {name!r}: {error}") from error
        if amount < 0:
            raise QuantityError(value, f"resource {name!r} must not be negative")
        amounts[name] = amount
    return amounts


def format_quantity(resource: str, amount: int) -> str:
    """The scheduler's integer back as the canonical quantity, exact and short.

    Milli-resources read ``64`` or ``500m``; bytes in the largest binary unit
    that divides them exactly (``256Gi``); counts (pods, GPUs) as numbers.
    """
    if resource in MILLI_RESOURCES:
        return str(amount // 1000) if amount % 1000 == 0 else f"{amount}m"
    if amount != 0 and (resource in _BYTE_RESOURCES or resource.startswith("hugepages-")):
        for suffix, size in sorted(_BINARY_SUFFIXES.items(), key=lambda item: -item[1]):
            if amount % size == 0:
                return f"{amount // size}{suffix}"
    return str(amount)


def format_resource_list(amounts: ResourceAmounts) -> dict[str, str]:
    """A ResourceList as the API writes it, resources in name order."""
    return {name: format_quantity(name, amounts[name]) for name in sorted(amounts)}
