"""The dashboard in a real browser against a real cluster, with ``make demo``'s gangs.

Chromium (Debian's, ``make browser``) loads the page a running scheduler serves
(``--dashboard``): the waiting gang's place and reason are those of
``/debug/queue``, the queue tree is the cluster's Queue objects, and a click on
a running gang outlines its members' nodes. Screenshots go to ``.e2e/artefacts/``.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from e2e import browser
from e2e import workloads as w
from e2e.controlplane import Cluster
from e2e.scheduler import SchedulerProcess, StartScheduler, console_script
from e2e.tests.test_examples import apply_example, phase_of
from e2e.waiting import wait_for

pytestmark = pytest.mark.e2e

AddNodes = Callable[..., list[str]]


def line_of(process: SchedulerProcess, namespace: str) -> dict[str, dict[str, Any]]:
    """``/debug/queue``'s rows of the namespace, by group name."""
    url = f"http://127.0.0.1:{process.port}/debug/queue?namespace={namespace}"
    with urllib.request.urlopen(url, timeout=5) as answer:
        return {row["name"]: row for row in json.load(answer)["groups"]}


def gang_of(url: str, namespace: str, name: str) -> dict[str, Any]:
    """A gang's page's data, as the page fetches it."""
    with urllib.request.urlopen(f"{url}api/gangs/{namespace}/{name}", timeout=5) as answer:
        found: dict[str, Any] = json.load(answer)
        return found


def overview_of(url: str) -> dict[str, Any]:
    """The overview's data, as ``/api/overview`` answers."""
    with urllib.request.urlopen(f"{url}api/overview", timeout=5) as answer:
        found: dict[str, Any] = json.load(answer)
        return found


def dashboard(start_scheduler: StartScheduler) -> tuple[SchedulerProcess, str]:
    process = start_scheduler("--dashboard", "--dashboard-port", "0")
    assert process.dashboard_port is not None, "the scheduler did not log its dashboard's port"
    return process, f"http://127.0.0.1:{process.dashboard_port}/"


@contextlib.contextmanager
def viewer(cluster: Cluster, log: Path) -> Iterator[str]:
    """``coscheduler dashboard``: a process that only reads; its page's address."""
    argv = [*console_script(), "dashboard", "--kubeconfig", str(cluster.kubeconfig), "--port", "0"]
    with log.open("wb") as out:
        process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
    try:
        line = wait_for(
            lambda: next(
                (line for line in log.read_text().splitlines() if '"event": "dashboard"' in line),
                "",
            ),
            describe=f"coscheduler dashboard to log its address ({log})",
        )
        yield str(json.loads(line)["url"])
    finally:
        process.terminate()
        process.wait(15)


def test_teams_on_the_page_as_the_cluster_has_them(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: AddNodes,
    start_scheduler: StartScheduler,
) -> None:
    add_nodes(3, cpu="8")
    try:
        process, url = dashboard(start_scheduler)
        apply_example(cluster, namespace, "teams.yaml", pool, run_seconds="600s")
        team_b = ("train-b", "etl-b")
        phases = wait_for(
            lambda: {g: phase_of(cluster, namespace, g) for g in ("train-a", *team_b)},
            lambda seen: (
                seen["train-a"] == "Running"
                and sorted(seen[g] for g in team_b) == ["Pending", "Running"]
            ),
            describe="train-a Running, one of team-b's gangs Running and the other Pending",
            timeout=90,
        )
        waiting = next(g for g in team_b if phases[g] == "Pending")
        row = wait_for(
            lambda: line_of(process, namespace).get(waiting, {}),
            lambda found: found.get("reason") is not None,
            describe=f"{waiting} in /debug/queue with its reason",
        )
        queues = {q["metadata"]["name"]: q for q in cluster.api.get(w.QUEUES)["items"]}
        members = w.list_pods(cluster.api, namespace, "job-name=train-a")
        train_a_nodes = {pod["spec"]["nodeName"] for pod in members}

        with browser.page() as page:
            page.goto(url)
            page.wait_for_selector("body[data-loaded=true]")
            waiting_row = page.locator(f'#line tr[data-group="{namespace}/{waiting}"]')
            waiting_row.wait_for()
            cells = waiting_row.locator("td").all_inner_texts()
            assert cells[0] == str(row["clusterPosition"])
            assert cells[1] == str(row["queuePosition"])
            assert cells[2] == "team-b"
            assert row["reason"] in cells[8]

            shown = page.locator("#queues tr[data-queue]:not([data-implicit])")
            assert sorted(shown.evaluate_all("rows => rows.map(r => r.dataset.queue)")) == sorted(
                queues
            )
            for name in ("team-a", "team-b"):
                cells = page.locator(f'#queues tr[data-queue="{name}"] td').all_inner_texts()
                spec = queues[name]["spec"]
                assert cells[1] == str(spec["weight"])
                assert f"cpu={spec['nominal']['cpu']}" in cells[2]
            browser.screenshot(page, "dashboard-teams")

            page.locator(f'#line a[href="#gang/{namespace}/{waiting}"]').click()
            page.wait_for_selector("#gang:not([hidden])")
            page.get_by_text(f"place {row['clusterPosition']} in the cluster").wait_for()

            page.locator("#find input").fill(f"{namespace}/train-a")
            page.locator("#find input").press("Enter")
            page.locator("#gang-body").get_by_text("Members (2)").wait_for()
            page.wait_for_function(
                "n => document.querySelectorAll('.node.chosen').length === n",
                arg=len(train_a_nodes),
            )
            chosen = page.locator(".node.chosen").evaluate_all(
                "cells => cells.map(c => c.dataset.node)"
            )
            assert set(chosen) == train_a_nodes
            browser.screenshot(page, "dashboard-gang")
    finally:
        for queue in ("team-a", "team-b"):
            cluster.api.delete(f"{w.QUEUES}/{queue}")


def test_a_gang_short_of_room_shows_which_nodes_refuse_it_and_why(
    cluster: Cluster,
    namespace: str,
    pool: str,
    add_nodes: AddNodes,
    start_scheduler: StartScheduler,
    tmp_path: Path,
) -> None:
    add_nodes(2, cpu="8")  # room for one of the two gangs of 6-cpu pods
    process, url = dashboard(start_scheduler)
    apply_example(cluster, namespace, "contention-pair.yaml", pool, run_seconds="600s")
    pair = ("contender-a", "contender-b")
    phases = wait_for(
        lambda: {g: phase_of(cluster, namespace, g) for g in pair},
        lambda seen: sorted(seen.values()) == ["Pending", "Running"],
        describe="one contender Running, the other Pending",
        timeout=90,
    )
    waiting = next(g for g in pair if phases[g] == "Pending")
    row = wait_for(
        lambda: line_of(process, namespace).get(waiting, {}),
        lambda found: found.get("reason") == "NotEnoughResources",
        describe=f"{waiting} refused for want of room in /debug/queue",
    )
    with browser.page() as page:
        page.goto(url)
        page.wait_for_selector("body[data-loaded=true]")
        why = page.locator(f'#line tr[data-group="{namespace}/{waiting}"] td.why')
        why.get_by_text("NotEnoughResources").wait_for()
        assert "2 nodes: Insufficient cpu" in why.inner_text(), (row["message"], why.inner_text())
        wait_for(
            lambda: gang_of(url, namespace, waiting)["timeline"],
            lambda timeline: any(t.get("reason") == "FailedScheduling" for t in timeline),
            describe=f"the events written about {waiting}'s pods on its page",
        )
        page.goto(f"{url}#gang/{namespace}/{waiting}")
        page.locator("#gang-body .histogram canvas").wait_for()
        page.locator("#gang-body").get_by_text("FailedScheduling").first.wait_for()
        browser.screenshot(page, "dashboard-refusals")

        # A process that only reads shows the same line, the reason from the group's status.
        with viewer(cluster, tmp_path / "dashboard.log") as viewer_url:
            page.goto(viewer_url)
            page.wait_for_selector("body[data-loaded=true]")
            assert page.locator("#role").inner_text() == "viewer"
            why = page.locator(f'#line tr[data-group="{namespace}/{waiting}"] td.why')
            why.get_by_text("2 nodes: Insufficient cpu").wait_for()
            browser.screenshot(page, "dashboard-viewer")
            # Its gang page says why its timeline has no events.
            page.goto(f"{viewer_url}#gang/{namespace}/{waiting}")
            note = page.locator("#timeline-note")
            note.wait_for()
            assert "This process is a viewer: it writes no events" in note.inner_text()
