"""CEL device selectors, evaluated as Kubernetes' DRA environment evaluates them.

Evaluated with cel-expr-python, the CEL team's Python binding of the C++
reference runtime (compiled once per expression, about 30 µs an evaluation).
The variable is Kubernetes' ``device``: ``driver``, ``attributes`` and
``capacity`` (maps by domain, then name; an unqualified name is in the
driver's domain), ``allowMultipleAllocations`` (always false: such devices
are refused). What Kubernetes adds to standard CEL for devices is here too:
``quantity()``/``isQuantity()`` with ``compareTo``, ``isGreaterThan``,
``isLessThan``, ``add``, ``sub``, ``asInteger``, ``asApproximateFloat``,
``isInteger``, ``sign``; ``semver()``/``isSemver()`` with ``compareTo``,
``isGreaterThan``, ``isLessThan``, ``major``, ``minor``, ``patch`` (a
``version`` attribute is a semver); ``cel.bind``; the strings extension.

What it lacks beside Kubernetes' environment: the regex extras (``find``,
``findAll``; standard ``matches`` is there), the URL, IP, CIDR, format and
lists libraries, and cost limits. An expression using them fails
to compile, and the claim says so (never a silent mismatch).

As in Kubernetes, ``device.attributes["some.domain"]`` is an empty map when
the device has no attribute of that domain, so ``has()`` and ``in`` work on
it; that default is given for the domains an expression names as string
literals (a domain computed at run time finds no default).

The selectors most classes use are conjunctions of equalities with literals
(``device.driver == "gpu.example.com" && device.attributes["gpu.example.com"].model == "H100"``).
Those are also read into plain comparisons, which answer without a CEL
evaluation when every value they name is there and of the literal's type;
anything else (a missing attribute, another type, any other expression) goes
to the CEL runtime, so the answer and the error are always CEL's.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from fractions import Fraction
from typing import Any, Final

from cel_expr_python import cel
from cel_expr_python.ext import ext_bindings, ext_strings

from coscheduler.api.devices import Device, Version
from coscheduler.api.quantity import QuantityError, parse_quantity

__all__ = ["CelError", "Selector", "compile_selector"]

#: How a quantity and a semver travel through CEL: a tagged map (the binding has no opaque types).
_QUANTITY: Final = "kubernetes.Quantity"
_SEMVER: Final = "kubernetes.Semver"
_LITERAL: Final = re.compile(r"""["']([^"'\\]+)["']""")
_SEMVER_RE: Final = re.compile(
    r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?"
)


class CelError(ValueError):
    """A selector that does not compile, or an evaluation that failed."""


def _quantity_value(amount: Fraction) -> dict[str, Any]:
    return {_QUANTITY: [amount.numerator, amount.denominator]}


def _semver_value(text: str) -> dict[str, Any]:
    if _SEMVER_RE.fullmatch(text) is None:
        raise CelError(f"{text!r} is not a semantic version")
    return {_SEMVER: text}


def _fraction(value: Mapping[str, Any]) -> Fraction:
    numerator, denominator = value[_QUANTITY]
    return Fraction(int(numerator), int(denominator))


def _semver_key(value: Mapping[str, Any]) -> tuple[Any, ...]:
    match = _SEMVER_RE.fullmatch(str(value[_SEMVER]))
    assert match is not None
    major, minor, patch, pre = match.groups()
    release = (int(major), int(minor), int(patch))
    if pre is None:
        return (*release, 1, ())
    parts = tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in pre.split("."))
    return (*release, 0, parts)


def _compare(left: Mapping[str, Any], right: Mapping[str, Any]) -> int:
    if _QUANTITY in left and _QUANTITY in right:
        a: Any = _fraction(left)
        b: Any = _fraction(right)
    elif _SEMVER in left and _SEMVER in right:
        a, b = _semver_key(left), _semver_key(right)
    else:
        raise CelError("compareTo needs two quantities or two semvers")
    return int(a > b) - int(a < b)


def _parse_quantity(text: str) -> dict[str, Any]:
    try:
        return _quantity_value(parse_quantity(text))
    except QuantityError as error:
        raise CelError(str(error)) from error


def _is_quantity(text: str) -> bool:
    try:
        parse_quantity(text)
    except QuantityError:
        return False
    return True


def _arith(left: Mapping[str, Any], right: Any, sign: int) -> dict[str, Any]:
    other = _fraction(right) if isinstance(right, Mapping) else Fraction(int(right))
    return _quantity_value(_fraction(left) + sign * other)


def _environment() -> cel.Env:

    tagged = cel.Type.Map(cel.Type.STRING, cel.Type.DYN)
    integer, boolean, double = cel.Type.INT, cel.Type.BOOL, cel.Type.DOUBLE
    string = cel.Type.STRING

    def member(name: str, result: cel.Type, params: list[cel.Type], impl: Any) -> cel.Overload:
        return cel.Overload(name, result, params, is_member=True, impl=impl)

    def function(name: str, result: cel.Type, params: list[cel.Type], impl: Any) -> cel.Overload:
        return cel.Overload(name, result, params, is_member=False, impl=impl)

    declarations = {
        "quantity": [function("quantity_string", tagged, [string], _parse_quantity)],
        "isQuantity": [function("is_quantity_string", boolean, [string], _is_quantity)],
        "semver": [function("semver_string", tagged, [string], _semver_value)],
        "isSemver": [
            function("is_semver_string", boolean, [string], lambda t: bool(_SEMVER_RE.fullmatch(t)))
        ],
        "compareTo": [member("tagged_compare", integer, [tagged, tagged], _compare)],
        "isGreaterThan": [
            member("tagged_greater", boolean, [tagged, tagged], lambda a, b: _compare(a, b) > 0)
        ],
        "isLessThan": [
            member("tagged_less", boolean, [tagged, tagged], lambda a, b: _compare(a, b) < 0)
        ],
        "add": [
            member("quantity_add", tagged, [tagged, tagged], lambda a, b: _arith(a, b, 1)),
            member("quantity_add_int", tagged, [tagged, integer], lambda a, b: _arith(a, b, 1)),
        ],
        "sub": [
            member("quantity_sub", tagged, [tagged, tagged], lambda a, b: _arith(a, b, -1)),
            member("quantity_sub_int", tagged, [tagged, integer], lambda a, b: _arith(a, b, -1)),
        ],
        "asInteger": [member("quantity_integer", integer, [tagged], lambda q: _as_integer(q))],
        "asApproximateFloat": [
            member("quantity_float", double, [tagged], lambda q: float(_fraction(q)))
        ],
        "isInteger": [
            member(
                "quantity_is_integer", boolean, [tagged], lambda q: _fraction(q).denominator == 1
            )
        ],
        "sign": [
            member(
                "quantity_sign",
                integer,
                [tagged],
                lambda q: (_fraction(q) > 0) - (_fraction(q) < 0),
            )
        ],
        "major": [member("semver_major", integer, [tagged], lambda v: _semver_key(v)[0])],
        "minor": [member("semver_minor", integer, [tagged], lambda v: _semver_key(v)[1])],
        "patch": [member("semver_patch", integer, [tagged], lambda v: _semver_key(v)[2])],
    }
    return cel.NewEnv(
        variables={"device": cel.Type.DYN},
        functions=[cel.FunctionDecl(name, overloads) for name, overloads in declarations.items()],
        extensions=[ext_bindings.ExtBindings(), ext_strings.ExtStrings()],
    )


def _as_integer(value: Mapping[str, Any]) -> int:
    amount = _fraction(value)
    if amount.denominator != 1 or not -(2**63) <= amount.numerator < 2**63:
        raise CelError("cannot convert value to integer")
    return amount.numerator


_ENV: cel.Env | None = None
#: CEL's error type, set with the environment (the binding's module is not imported before).
_ERROR: cel.Type | None = None


def _env() -> cel.Env:
    global _ENV, _ERROR
    if _ENV is None:
        _ENV = _environment()
        _ERROR = cel.Type.ERROR
    return _ENV


#: ``device.driver`` or ``device.attributes["domain"].name`` (or ``["name"]``).
_FIELD: Final = (
    r"""device\.(?:(?P<driver>driver)|attributes\[(?P<q>["'])(?P<domain>[^"'\\]+)(?P=q)\]"""
    r"""(?:\.(?P<name>[A-Za-z_][A-Za-z0-9_]*)|\[(?P<q2>["'])(?P<key>[^"'\\]+)(?P=q2)\]))"""
)
#: A string, int or bool literal (no escapes).
_VALUE: Final = (
    r"""(?:(?P<vq>["'])(?P<text>[^"'\\]*)(?P=vq)|(?P<int>-?[0-9]+)|(?P<bool>true|false))"""
)
_EQUALITY: Final = re.compile(rf"\s*{_FIELD}\s*==\s*{_VALUE}\s*")
_INT64: Final = range(-(2**63), 2**63)

#: One equality: (domain, or None for the driver; attribute name; literal value).
_Equality = tuple[str | None, str, str | int | bool]


def _equalities(expression: str) -> tuple[_Equality, ...] | None:
    """The expression as a conjunction of field == literal, or None when it is not one.

    Splitting at ``&&`` is safe: a literal holding ``&&`` leaves a piece with an
    unclosed quote, which no equality matches.
    """
    found: list[_Equality] = []
    for piece in expression.split("&&"):
        match = _EQUALITY.fullmatch(piece)
        if match is None:
            return None
        literal: str | int | bool
        if match["bool"] is not None:
            literal = match["bool"] == "true"
        elif match["int"] is not None:
            literal = int(match["int"])
            if literal not in _INT64:
                return None
        else:
            literal = match["text"]
        if match["driver"] is not None:
            if not isinstance(literal, str):
                return None
            found.append((None, "driver", literal))
        else:
            found.append((match["domain"], match["name"] or match["key"], literal))
    return tuple(found)


def _decide(equalities: tuple[_Equality, ...], driver: str, device: Device) -> bool | None:
    """The conjunction's value, or None when CEL must tell (a value missing or of another type).

    As CEL's ``&&``: one false equality makes it false whatever the others are.
    """
    unknown = False
    for domain, name, literal in equalities:
        if domain is None:
            value: object = driver
        else:
            value = device.attributes.get(domain, {}).get(name)
            if type(value) is not type(literal):
                unknown = True
                continue
        if value != literal:
            return False
    return None if unknown else True


class Selector:
    """One compiled selector expression."""

    __slots__ = ("_domains", "_equalities", "_program", "expression")

    def __init__(self, expression: str) -> None:
        self.expression = expression
        try:
            self._program = _env().compile(expression)
        except RuntimeError as error:
            raise CelError(f"CEL compile error: {error}") from error
        self._domains = frozenset(m.group(1) for m in _LITERAL.finditer(expression))
        self._equalities = _equalities(expression)

    def matches(self, driver: str, device: Device) -> bool:
        """Whether the device satisfies the expression; :class:`CelError` when it cannot be told."""
        if self._equalities is not None:
            decided = _decide(self._equalities, driver, device)
            if decided is not None:
                return decided
        return self.evaluate(driver, device)

    def evaluate(self, driver: str, device: Device) -> bool:
        """:meth:`matches` by the CEL runtime alone."""
        variables = {"device": device_variable(driver, device, self._domains)}
        try:
            result = self._program.eval(data=variables)
        except (RuntimeError, ValueError, TypeError) as error:
            raise CelError(f"CEL runtime error: {error}") from error
        value = result.value()
        if result.type() == _ERROR:
            raise CelError(f"CEL runtime error: {value}")
        if not isinstance(value, bool):
            raise CelError(f"CEL result of type {result.type().name()} is not a bool")
        return value


_SELECTORS: dict[str, Selector | CelError] = {}


def compile_selector(expression: str) -> Selector:
    """The expression compiled, once per process (a compile error is cached too)."""
    found = _SELECTORS.get(expression)
    if found is None:
        try:
            found = Selector(expression)
        except CelError as error:
            found = error
        _SELECTORS[expression] = found
    if isinstance(found, CelError):
        raise found
    return found


def device_variable(driver: str, device: Device, domains: frozenset[str]) -> dict[str, Any]:
    """The ``device`` variable for one device (empty maps for the named domains it lacks)."""
    attributes: dict[str, dict[str, Any]] = {
        domain: {
            name: _semver_value(value.text) if isinstance(value, Version) else value
            for name, value in values.items()
        }
        for domain, values in device.attributes.items()
    }
    capacity: dict[str, dict[str, Any]] = {
        domain: {name: _quantity_value(amount) for name, amount in values.items()}
        for domain, values in device.capacity.items()
    }
    for domain in domains:
        attributes.setdefault(domain, {})
        capacity.setdefault(domain, {})
    return {
        "driver": driver,
        "allowMultipleAllocations": False,
        "attributes": attributes,
        "capacity": capacity,
    }
