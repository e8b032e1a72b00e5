"""Reading fields of raw API objects (decoded JSON) with messages that name the field.

Pods and nodes arrive as plain dicts. A value of the wrong type or a bad
quantity must not surface as a bare ``KeyError`` or ``TypeError`` deep in the
scheduler: the reader checks each field as it is read and raises its object's
parse error quoting the path and the value (``spec.containers[0].resources...``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from functools import lru_cache
from typing import Any, Final

from coscheduler.api.quantity import MAX_AMOUNT, QuantityError, resource_amount

__all__ = ["TOO_LARGE", "FieldReader", "ObjectParseError"]


@lru_cache(maxsize=4096)
def _amount(resource: str, value: str | int) -> int:
    # Pods of one workload repeat the same few quantity strings: parse each once.
    return resource_amount(resource, value)


#: Why an amount above :data:`~coscheduler.api.quantity.MAX_AMOUNT` is refused.
TOO_LARGE: Final = (
    f"is more than coscheduler can count (at most {MAX_AMOUNT} millicores, bytes or units)"
)


class ObjectParseError(ValueError):
    """An object the scheduler cannot read; the message names the object and the value."""

    kind = "object"

    def __init__(self, name: str, why: str) -> None:
        self.name = name
        super().__init__(f"{self.kind} {name}: {why}")


class FieldReader:
    """Typed access to a raw object that turns every surprise into the reader's error.

    ``fail`` makes the error for a reason: it names the object (``pod ns/p``,
    ``node n1``) so that every message says which object and which field.
    """

    __slots__ = ("fail",)

    def __init__(self, fail: Callable[[str], ValueError]) -> None:
        self.fail = fail

    # ``type(x) is dict`` (what decoded JSON holds) first: the ABC's isinstance
    # costs several times as much, and every field of every pod update is read here.

    def mapping(self, value: object, where: str) -> Mapping[str, Any]:
        if type(value) is dict:
            return value
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            raise self.fail(f"{where} must be an object, got {value!r}")
        return value

    def items(self, value: object, where: str) -> list[Any]:
        if value is None:
            return []
        if not isinstance(value, list):
            raise self.fail(f"{where} must be a list, got {value!r}")
        return value

    def text(self, value: object, where: str, default: str = "") -> str:
        if type(value) is str:
            return value
        if value is None:
            return default
        if not isinstance(value, str):
            raise self.fail(f"{where} must be a string, got {value!r}")
        return value

    def integer(self, value: object, where: str, default: int = 0) -> int:
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(f"{where} must be an integer, got {value!r}")
        return value

    def strings(self, value: object, where: str) -> dict[str, str]:
        mapping = self.mapping(value, where)
        for key, item in mapping.items():
            if not isinstance(item, str):
                raise self.fail(f"{where}[{key!r}] must be a string, got {item!r}")
        return dict(mapping)

    def resources(self, value: object, where: str) -> dict[str, int]:
        amounts: dict[str, int] = {}
        for resource, quantity in self.mapping(value, where).items():
            try:
                amount = _amount(resource, quantity)
            except (QuantityError, TypeError) as error:
                raise self.fail(f"{where}[{resource!r}] = {quantity!r}: {error}") from error
            if amount < 0:
                raise self.fail(f"{where}[{resource!r}] = {quantity!r} must not be negative")
            if amount > MAX_AMOUNT:
                raise self.fail(f"{where}[{resource!r}] = {quantity!r} {TOO_LARGE}")
            amounts[resource] = amount
        return amounts

    def timestamp(self, value: object, where: str) -> float:
        if value is None:
            return 0.0
        text = self.text(value, where)
        try:
            return datetime.fromisoformat(text).timestamp()
        except ValueError as error:
            raise self.fail(f"{where} = {text!r} is not an RFC 3339 time") from error
