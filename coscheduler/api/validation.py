"""pydantic's validation errors as lines a person can act on, the same everywhere.

Settings at start-up, PodGroups that bypassed the CRD's schema and simulation
scenarios all report what is wrong the same way: the field's path as the user
wrote it (``spec.roles[0].minMember``), pydantic's message, and the value given.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import ValidationError

__all__ = ["field_path", "problems"]

# Problems whose input is the object around the field, not the field's value.
_NO_INPUT = frozenset({"missing", "extra_forbidden", "literal_error"})


def field_path(loc: Sequence[int | str]) -> str:
    """``("spec", "roles", 0, "name")`` → ``spec.roles[0].name``."""
    text = ""
    for part in loc:
        # pydantic names function validators in the path too; users need the field only.
        if str(part).startswith("function-"):
            continue
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(top level)"


def problems(error: ValidationError, *, with_input: bool = True) -> list[str]:
    """One line per problem: ``path: message (got value)``."""
    lines = []
    for item in error.errors():
        line = f"{field_path(item['loc'])}: {item['msg'].removeprefix('Value error, ')}"
        if with_input and item["type"] not in _NO_INPUT:
            line += f" (got {item.get('input')!r})"
        lines.append(line)
    return lines
