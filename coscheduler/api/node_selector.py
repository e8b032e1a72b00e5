"""Node selectors as pods and volumes state them: terms of label (and field) requirements.

A pod's required node affinity and a PersistentVolume's node affinity are
both a ``NodeSelector``: terms that are ORed, each a list of requirements
that must all hold. Preferred node affinity gives one term per preference.
Operators: In, NotIn, Exists, DoesNotExist, Gt, Lt (Gt and Lt take one integer).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from coscheduler.api.fields import FieldReader

__all__ = [
    "NodeSelectorRequirement",
    "NodeSelectorTerm",
    "parse_node_selector",
    "parse_node_selector_term",
]

_SELECTOR_OPERATORS: Final = frozenset({"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"})


@dataclass(frozen=True, slots=True)
class NodeSelectorRequirement:
    """A ``matchExpressions``/``matchFields`` entry of a node selector term."""

    key: str
    operator: str
    values: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class NodeSelectorTerm:
    """Requirements that must all hold; an empty term matches no node."""

    match_expressions: tuple[NodeSelectorRequirement, ...] = ()
    match_fields: tuple[NodeSelectorRequirement, ...] = ()


def _parse_requirements(
    reader: FieldReader, raw: object, where: str
) -> tuple[NodeSelectorRequirement, ...]:
    requirements = []
    for index, item in enumerate(reader.items(raw, where)):
        here = f"{where}[{index}]"
        entry = reader.mapping(item, here)
        key = reader.text(entry.get("key"), f"{here}.key")
        operator = reader.text(entry.get("operator"), f"{here}.operator")
        if operator not in _SELECTOR_OPERATORS:
            raise reader.fail(
                f"{here}.operator = {operator!r} is not one of In, NotIn, "
                "Exists, DoesNotExist, Gt, Lt"
            )
        values = tuple(
            reader.text(value, f"{here}.values")
            for value in reader.items(entry.get("values"), f"{here}.values")
        )
        if operator in ("Gt", "Lt"):
            if len(values) != 1:
                raise reader.fail(f"{here}: {operator} needs exactly one value, got {values!r}")
            try:
                int(values[0])
            except ValueError as error:
                raise reader.fail(
                    f"{here}: {operator} value {values[0]!r} is not an integer"
                ) from error
        requirements.append(NodeSelectorRequirement(key=key, operator=operator, values=values))
    return tuple(requirements)


def parse_node_selector_term(reader: FieldReader, raw: object, where: str) -> NodeSelectorTerm:
    """One ``NodeSelectorTerm``: its ``matchExpressions`` and ``matchFields``."""
    term = reader.mapping(raw, where)
    return NodeSelectorTerm(
        match_expressions=_parse_requirements(
            reader, term.get("matchExpressions"), f"{where}.matchExpressions"
        ),
        match_fields=_parse_requirements(reader, term.get("matchFields"), f"{where}.matchFields"),
    )


def parse_node_selector(
    reader: FieldReader, raw: object, where: str
) -> tuple[NodeSelectorTerm, ...]:
    """A ``NodeSelector`` (its ``nodeSelectorTerms``, ORed), as pods and volumes state it."""
    selector = reader.mapping(raw, where)
    return tuple(
        parse_node_selector_term(reader, item, f"{where}.nodeSelectorTerms[{index}]")
        for index, item in enumerate(
            reader.items(selector.get("nodeSelectorTerms"), f"{where}.nodeSelectorTerms")
        )
    )
