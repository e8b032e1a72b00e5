"""`coscheduler run`'s flags come from the settings: one source for flag, default and help."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from coscheduler import cli
from coscheduler.core.strategy import Strategy
from coscheduler.runtime.settings import Settings, documented_settings, settings_table

README = Path(__file__).resolve().parents[1] / "README.md"


@pytest.fixture
def loaded(monkeypatch: pytest.MonkeyPatch) -> list[Settings]:
    """Run `run` up to its settings: record them instead of starting the operator."""
    seen: list[Settings] = []
    real = cli._load_settings

    def stop_after_loading(values: dict[str, Any]) -> Settings:
        seen.append(real(values))
        raise SystemExit(0)

    monkeypatch.setattr(cli, "_load_settings", stop_after_loading)
    return seen


def test_the_readme_table_is_the_settings_own() -> None:
    assert settings_table() in README.read_text(), (
        "README's Settings table differs from the settings; regenerate it with\n"
        "python -c 'from coscheduler.runtime.settings import settings_table; "
        "print(settings_table())'"
    )


def test_every_setting_has_a_flag_and_help_that_shows_its_default() -> None:
    result = CliRunner().invoke(cli.main, ["run", "--help"], terminal_width=400)
    assert result.exit_code == 0
    for doc in documented_settings():
        assert doc.flag.replace("/", " / ") in result.output
        assert f"[{doc.default.strip('`')}]" in result.output


def test_flags_reach_the_settings(loaded: list[Settings]) -> None:
    args = [
        "run",
        "--qps=200",
        "--namespace=a",
        "--namespace=b",
        "--score-strategy=least-allocated",
        "--no-leader-elect",
        "--watch-timeout-seconds=60",
        "--unschedulable-flush-seconds=5",
        "--event-interval-seconds=0",
    ]
    assert CliRunner().invoke(cli.main, args).exit_code == 0
    (settings,) = loaded
    assert settings.client.qps == 200
    assert settings.namespaces == ("a", "b")
    assert settings.score_strategy is Strategy.LEAST_ALLOCATED
    assert settings.leader_election.enabled is False
    assert settings.client.watch_timeout_seconds == 60
    assert settings.backoff.unschedulable_flush_seconds == 5
    assert settings.event_interval_seconds == 0


def test_a_flag_wins_over_the_environment_which_wins_over_the_default(
    loaded: list[Settings],
) -> None:
    env = {"COSCHEDULER_CLIENT__QPS": "70", "COSCHEDULER_CLIENT__BURST": "7"}
    assert CliRunner(env=env).invoke(cli.main, ["run", "--qps=90"]).exit_code == 0
    (settings,) = loaded
    assert (settings.client.qps, settings.client.burst) == (90, 7)
    assert settings.client.bind_concurrency == 64


def test_a_bad_value_names_the_setting() -> None:
    result = CliRunner().invoke(cli.main, ["run", "--qps=0"])
    assert result.exit_code != 0
    assert "client.qps: Input should be greater than 0 (got 0.0)" in result.output


def test_run_settings_parses_flags_as_run_does_without_running() -> None:
    settings = cli.run_settings(["--qps=200", "--namespace=a", "--no-leader-elect"])
    assert settings.client.qps == 200
    assert settings.namespaces == ("a",)
    assert settings.leader_election.enabled is False
    with pytest.raises(click.UsageError, match="No such option"):
        cli.run_settings(["--qsp=200"])
    with pytest.raises(click.UsageError, match=r"client\.qps: Input should be greater than 0"):
        cli.run_settings(["--qps=0"])
