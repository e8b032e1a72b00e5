"""Other projects' CRDs kept byte for byte in tests/upstream/, and ours held to them."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import yaml

UPSTREAM = Path(__file__).parent / "upstream"


def load(path: Path) -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load(path.read_text())
    return document


def without_descriptions(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: without_descriptions(v) for k, v in node.items() if k != "description"}
    if isinstance(node, list):
        return [without_descriptions(item) for item in node]
    return node


def assert_same_structure(ours: Path, theirs: Path) -> None:
    """Our CRD is upstream's but for its descriptions."""
    mine, upstream = load(ours), load(theirs)
    assert mine["metadata"]["name"] == upstream["metadata"]["name"]
    assert without_descriptions(mine["spec"]) == without_descriptions(upstream["spec"])


def kept_row(kept: Path) -> list[str]:
    """The cells of tests/upstream/README.md's row for the kept file, its digest checked:
    file, source repository, version, path there, sha256."""
    lines = (UPSTREAM / "README.md").read_text().splitlines()
    row = next(line for line in lines if line.startswith(f"| `{kept.name}`"))
    cells = [cell.strip(" `") for cell in row.strip("|").split("|")]
    assert hashlib.sha256(kept.read_bytes()).hexdigest() == cells[4], "edited: re-copy it"
    return cells
