"""The fairness figures of the bench: shares over the backlogged window, from pod events."""

from __future__ import annotations

from typing import Any

import pytest

from bench.fairness import share_figures
from bench.observe import Event, PodRecord


class _Replay:
    """What share_figures reads of a Recorder: its pods and events."""

    def __init__(self) -> None:
        self.pods: dict[str, PodRecord] = {}
        self.events: list[Event] = []

    def bind(self, t: float, name: str, namespace: str, cpu: float) -> None:
        self.pods[name] = PodRecord(name, name, cpu, 0.0, bound=t, namespace=namespace)
        self.events.append(Event(t, "bind", name))

    def finish(self, t: float, name: str) -> None:
        self.events.append(Event(t, "finish", name))


def test_shares_are_measured_while_every_tenant_has_a_backlog() -> None:
    replay = _Replay()
    replay.bind(0.0, "a1", "a", 2)
    replay.bind(0.0, "b1", "b", 6)
    replay.finish(10.0, "a1")
    replay.bind(10.0, "a2", "a", 2)  # a's last binding: its backlog is gone after it
    replay.finish(10.0, "b1")
    replay.bind(10.0, "b2", "b", 6)
    replay.bind(12.0, "b3", "b", 2)  # after the window: b takes what is left
    recorder: Any = replay
    figures = share_figures(recorder, {"a": 0.25, "b": 0.75}, capacity=8)
    assert figures["backlogged_window_s"] == 10.0
    assert figures["mean_share"] == {"a": 0.25, "b": 0.75}
    assert figures["mean_abs_deviation"] == 0.0
    assert figures["utilization_in_window"] == 1.0
    assert figures["share_series"]["cpu"]["b"][-1] == 8


def test_an_unfair_split_shows_as_deviation() -> None:
    replay = _Replay()
    replay.bind(0.0, "a1", "a", 4)
    replay.bind(0.0, "b1", "b", 4)
    replay.bind(5.0, "a2", "a", 1)
    replay.bind(5.0, "b2", "b", 1)
    recorder: Any = replay
    figures = share_figures(recorder, {"a": 0.25, "b": 0.75}, capacity=10)
    assert figures["mean_share"]["a"] == pytest.approx(0.5)
    assert figures["mean_abs_deviation"] == pytest.approx(0.25)
    assert figures["utilization_in_window"] == pytest.approx(0.8)
