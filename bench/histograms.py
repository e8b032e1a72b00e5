"""Quantiles from a peer's Prometheus histograms (its ``/metrics``, read at a trial's end).

The samples come as ``name_bucket{labels,le="x"}`` -> cumulative count; a quantile is
read as Prometheus' ``histogram_quantile`` does: linear within the bucket it falls in.
A quantile in the ``+Inf`` bucket is given as the largest finite bound (a floor).
"""

from __future__ import annotations

import re

_LE = re.compile(r'(?:,)?le="([^"]+)"')


def buckets(samples: dict[str, float], name: str, labels: str = "") -> list[tuple[float, float]]:
    """(upper bound, cumulative count) of histogram ``name``, series whose other labels
    contain ``labels`` (``members="65-512"``; empty: every series, summed), by bound."""
    prefix = f"{name}_bucket{{"
    summed: dict[float, float] = {}
    for key, value in samples.items():
        if not key.startswith(prefix) or labels not in key:
            continue
        match = _LE.search(key)
        if match is None:
            continue
        bound = float(match.group(1))
        summed[bound] = summed.get(bound, 0.0) + value
    return sorted(summed.items())


def quantile(samples: dict[str, float], name: str, q: float, labels: str = "") -> float | None:
    """The ``q`` quantile (0..1) of histogram ``name`` in seconds; None without observations."""
    counts = buckets(samples, name, labels)
    if not counts or counts[-1][1] <= 0:
        return None
    total = counts[-1][1]
    rank = q * total
    lower, below = 0.0, 0.0
    for bound, cumulative in counts:
        if cumulative >= rank:
            if bound == float("inf"):
                return lower
            inside = cumulative - below
            share = (rank - below) / inside if inside else 1.0
            return lower + (bound - lower) * share
        lower, below = bound, cumulative
    return lower


def count(samples: dict[str, float], name: str, labels: str = "") -> int:
    """Observations of histogram ``name`` (its ``+Inf`` bucket)."""
    counts = buckets(samples, name, labels)
    return int(counts[-1][1]) if counts else 0
