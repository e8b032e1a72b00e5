"""The first lists' apply bench (bench/list_apply.py): one rep runs, on a small cluster."""

from __future__ import annotations

from pathlib import Path

from bench import list_apply


def test_one_rep_applies_the_lists_and_decides(tmp_path: Path) -> None:
    for name, body in list_apply._bodies(nodes=4, gangs=2, gang_size=2).items():
        (tmp_path / f"{name}.json").write_bytes(body)
    spent = list_apply._child(tmp_path, profile=None)
    assert set(list_apply.STEPS) <= set(spent)
    assert spent["bound"] == 2  # the first gang, whole
