"""Kubernetes quantities, just the cpu and memory forms the benchmark writes and reads."""

from __future__ import annotations

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": 1e-9,
    "u": 1e-6,
    "m": 1e-3,
    "": 1.0,
    "k": 1e3,
    "M": 1e6,
    "G": 1e9,
    "T": 1e12,
    "P": 1e15,
    "E": 1e18,
}


def parse_quantity(text: str | int | float) -> float:
    if isinstance(text, int | float):
        return float(text)
    text = text.strip()
    for suffix, factor in _BINARY.items():
        if text.endswith(suffix):
            return float(text[: -len(suffix)]) * factor
    if text and text[-1] in _DECIMAL and not text[-1].isdigit():
        return float(text[:-1]) * _DECIMAL[text[-1]]
    return float(text)


def parse_cpu(text: str | int | float) -> float:
    return parse_quantity(text)


def parse_memory(text: str | int | float) -> float:
    return parse_quantity(text)
