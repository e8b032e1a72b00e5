"""runtime/watch.py: list then watch, resumed from the last resourceVersion, relisted on 410.

Each test scripts what the API server says and checks what goes back over
the wire (the requests' resourceVersion) and what the consumer is given.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from typing import Any

import pytest

from coscheduler.runtime.kube import KubeClient
from coscheduler.runtime.watch import (
    Event,
    Listed,
    StopWatching,
    Watch,
    WatchItem,
    initial_events_ended,
)
from tests.runtime.apiserver import (
    Answer,
    FakeApiServer,
    Reply,
    WatchStream,
    added,
    bookmark,
    deleted,
    error_event,
    initial_events_end,
    modified,
    object_list,
    status_error,
)

PODS = "/api/v1/pods"


def pod(name: str, resource_version: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "default", "resourceVersion": resource_version}}


def make_watch(kube: KubeClient) -> Watch:
    # Tiny timeouts and backoff: a silent stream is given up after 0.2 s.
    return Watch(
        kube,
        PODS,
        timeout_seconds=0.1,  # type: ignore[arg-type]  # seconds; the server side is fake
        backoff_initial_seconds=0.001,
        backoff_max_seconds=0.01,
    )


async def take(watch: Watch, count: int) -> list[WatchItem]:
    """The first ``count`` items the consumer is given, then the watch is closed."""
    items: list[WatchItem] = []
    # Two seconds are plenty for any of these tests; a stuck watch fails instead of hanging.
    async with asyncio.timeout(2.0), contextlib.aclosing(aiter(watch)) as stream:  # type: ignore[type-var]
        async for item in stream:
            items.append(item)
            if len(items) == count:
                break
    return items


def given(item: WatchItem) -> str:
    return "Listed" if isinstance(item, Listed) else item.type


def names(item: WatchItem) -> list[str]:
    objects = item.objects if isinstance(item, Listed) else [item.object]
    return [o["metadata"]["name"] for o in objects]


def consume(items: list[WatchItem]) -> dict[str, str]:
    """What a consumer that follows the module's contract knows: name -> resourceVersion."""
    known: dict[str, str] = {}
    for item in items:
        if isinstance(item, Listed):
            known = {o["metadata"]["name"]: o["metadata"]["resourceVersion"] for o in item.objects}
        elif item.type == "DELETED":
            known.pop(item.object["metadata"]["name"], None)
        else:
            known[item.object["metadata"]["name"]] = item.object["metadata"]["resourceVersion"]
    return known


def watched_versions(apiserver: FakeApiServer) -> list[str | None]:
    return [r.query.get("resourceVersion") for r in apiserver.requests_to("WATCH", PODS)]


async def test_lists_every_page_then_watches_from_the_lists_resource_version(
    apiserver: FakeApiServer, kube: KubeClient
) -> None:
    apiserver.on(
        "GET",
        PODS,
        object_list([pod("a", "3")], resource_version="10", continue_token="page-2"),
        object_list([pod("b", "5")], resource_version="10"),
    )
    apiserver.on("WATCH", PODS, WatchStream([added(pod("c", "11"))], then="hang"))

    items = await take(make_watch(kube), 2)

    assert items[0] == Listed([pod("a", "3"), pod("b", "5")])
    assert items[1] == Event("ADDED", pod("c", "11"))
    lists = apiserver.requests_to("GET", PODS)
    assert [r.query.get("continue") for r in lists] == [None, "page-2"]
    [watch_request] = apiserver.requests_to("WATCH", PODS)
    assert watch_request.query["resourceVersion"] == "10"
    assert watch_request.query["allowWatchBookmarks"] == "true"


@dataclass(frozen=True)
class Story:
    """What the API server says, and what the watch must make of it."""

    #: The answers to the list, in turn (a relist gets the next one).
    lists: list[Reply]
    #: The answers to the watch, in turn.
    watches: list[Answer]
    #: What the consumer is given: "Listed" or the event's type, with the objects' names.
    given: list[tuple[str, list[str]]]
    #: What a consumer following the contract then knows: name -> resourceVersion.
    known: dict[str, str]
    #: The resourceVersion each watch request started from.
    watched_from: list[str]


def listed(*objects: dict[str, Any], resource_version: str) -> Reply:
    return object_list(list(objects), resource_version=resource_version)


STORIES = [
    pytest.param(
        Story(
            lists=[listed(resource_version="10")],
            watches=[
                WatchStream([added(pod("a", "11")), modified(pod("a", "12"))], then="close"),
                WatchStream([deleted(pod("a", "13"))], then="hang"),
            ],
            given=[("Listed", []), ("ADDED", ["a"]), ("MODIFIED", ["a"]), ("DELETED", ["a"])],
            known={},
            watched_from=["10", "12"],
        ),
        id="a-stream-the-server-ends-is-resumed-from-the-last-events-version",
    ),
    pytest.param(
        Story(
            lists=[listed(resource_version="10")],
            watches=[
                WatchStream([added(pod("a", "11")), bookmark("40")], then="close"),
                WatchStream([modified(pod("a", "41"))], then="hang"),
            ],
            given=[("Listed", []), ("ADDED", ["a"]), ("MODIFIED", ["a"])],
            known={"a": "41"},
            watched_from=["10", "40"],
        ),
        id="a-bookmark-moves-the-version-without-being-delivered",
    ),
    pytest.param(
        Story(
            lists=[
                listed(pod("a", "3"), pod("b", "4"), resource_version="10"),
                # b was deleted while we could not watch; the relist no longer has it.
                listed(pod("a", "3"), pod("c", "55"), resource_version="60"),
            ],
            watches=[
                status_error(410, "Expired", "too old resource version: 10 (50)"),
                WatchStream([added(pod("d", "61"))], then="hang"),
            ],
            given=[("Listed", ["a", "b"]), ("Listed", ["a", "c"]), ("ADDED", ["d"])],
            known={"a": "3", "c": "55", "d": "61"},
            watched_from=["10", "60"],
        ),
        id="a-410-answer-to-the-watch-lists-again",
    ),
    pytest.param(
        Story(
            lists=[
                listed(pod("a", "3"), pod("b", "4"), resource_version="10"),
                listed(pod("c", "55"), resource_version="60"),
            ],
            watches=[
                WatchStream(
                    [
                        modified(pod("a", "11")),
                        error_event(410, "Expired", "too old resource version"),
                    ]
                ),
                WatchStream([added(pod("d", "61"))], then="hang"),
            ],
            # a and b were deleted meanwhile: the consumer, told by the relist, holds c and d only.
            given=[
                ("Listed", ["a", "b"]),
                ("MODIFIED", ["a"]),
                ("Listed", ["c"]),
                ("ADDED", ["d"]),
            ],
            known={"c": "55", "d": "61"},
            watched_from=["10", "60"],
        ),
        id="a-410-error-event-in-the-stream-lists-again",
    ),
    pytest.param(
        Story(
            lists=[listed(resource_version="10")],
            watches=[
                WatchStream(
                    [
                        added(pod("a", "11")),
                        error_event(500, "InternalError", "etcd leader changed"),
                    ]
                ),
                WatchStream([modified(pod("a", "12"))], then="hang"),
            ],
            given=[("Listed", []), ("ADDED", ["a"]), ("MODIFIED", ["a"])],
            known={"a": "12"},
            watched_from=["10", "11"],
        ),
        id="another-error-event-resumes-the-watch-without-listing",
    ),
    pytest.param(
        Story(
            lists=[listed(pod("a", "3"), resource_version="10")],
            watches=[
                status_error(503, "ServiceUnavailable"),
                status_error(429, "TooManyRequests"),
                WatchStream([deleted(pod("a", "11"))], then="hang"),
            ],
            given=[("Listed", ["a"]), ("DELETED", ["a"])],
            known={},
            watched_from=["10", "10", "10"],
        ),
        id="an-error-answer-to-the-watch-is-retried-from-the-same-version",
    ),
    pytest.param(
        Story(
            lists=[listed(resource_version="10")],
            watches=[
                # Open, one event, then not a byte more: the connection is half dead.
                WatchStream([added(pod("a", "11"))], then="hang"),
                WatchStream([modified(pod("a", "12"))], then="hang"),
            ],
            given=[("Listed", []), ("ADDED", ["a"]), ("MODIFIED", ["a"])],
            known={"a": "12"},
            watched_from=["10", "11"],
        ),
        id="a-silent-stream-is-given-up-and-reopened-from-the-last-version",
    ),
]


@pytest.mark.parametrize("story", STORIES)
async def test_watch_story(apiserver: FakeApiServer, kube: KubeClient, story: Story) -> None:
    apiserver.on("GET", PODS, *story.lists)
    apiserver.on("WATCH", PODS, *story.watches)

    items = await take(make_watch(kube), len(story.given))

    assert [(given(i), names(i)) for i in items] == story.given
    assert consume(items) == story.known
    assert watched_versions(apiserver) == story.watched_from
    relists = sum(1 for kind, _ in story.given[1:] if kind == "Listed")
    assert len(apiserver.requests_to("GET", PODS)) == 1 + relists, (
        "a resumed watch does not list again"
    )


# -- the streaming watch-list ---------------------------------------------------------


def watch_lists(apiserver: FakeApiServer) -> int:
    return len(apiserver.requests_to("WATCHLIST", PODS))


async def test_a_watch_list_is_one_listed_at_its_end_bookmark_then_the_same_stream_goes_on(
    apiserver: FakeApiServer, kube: KubeClient
) -> None:
    apiserver.on(
        "WATCHLIST",
        PODS,
        WatchStream(
            [
                added(pod("b", "7")),  # key order, not version order
                added(pod("a", "9")),
                initial_events_end("20"),
                modified(pod("a", "21")),
            ],
            then="hang",
        ),
    )

    items = await take(make_watch(kube), 2)

    assert items == [Listed([pod("b", "7"), pod("a", "9")]), Event("MODIFIED", pod("a", "21"))]
    [request] = apiserver.requests_to("WATCHLIST", PODS)
    assert request.query["sendInitialEvents"] == "true"
    assert request.query["resourceVersionMatch"] == "NotOlderThan"
    assert request.query["allowWatchBookmarks"] == "true"
    assert "resourceVersion" not in request.query  # a consistent picture: the newest
    assert apiserver.requests_to("GET", PODS) == []
    assert apiserver.requests_to("WATCH", PODS) == []


async def test_managed_fields_are_dropped_from_a_watch_list(
    apiserver: FakeApiServer, kube: KubeClient
) -> None:
    heavy = pod("a", "3")
    heavy["metadata"]["managedFields"] = [{"manager": "kubectl"}]
    apiserver.on("WATCHLIST", PODS, WatchStream([added(heavy), initial_events_end("5")], "hang"))

    [first] = await take(make_watch(kube), 1)

    assert first == Listed([pod("a", "3")])


STREAM_STORIES = [
    pytest.param(
        Story(
            lists=[],
            watches=[WatchStream([modified(pod("a", "31"))], then="hang")],
            given=[("Listed", ["a"]), ("ADDED", ["b"]), ("MODIFIED", ["a"])],
            known={"a": "31", "b": "30"},
            # The stream ended after the bookmark: resumed from the last version it told.
            watched_from=["30"],
        ),
        id="a-watch-list-the-server-ends-is-resumed-from-its-last-version",
    ),
]


@pytest.mark.parametrize("story", STREAM_STORIES)
async def test_watch_list_story(apiserver: FakeApiServer, kube: KubeClient, story: Story) -> None:
    apiserver.on(
        "WATCHLIST",
        PODS,
        WatchStream(
            [added(pod("a", "3")), initial_events_end("20"), added(pod("b", "30"))], then="close"
        ),
    )
    apiserver.on("WATCH", PODS, *story.watches)

    items = await take(make_watch(kube), len(story.given))

    assert [(given(i), names(i)) for i in items] == story.given
    assert consume(items) == story.known
    assert watched_versions(apiserver) == story.watched_from
    assert watch_lists(apiserver) == 1


async def test_a_watch_list_broken_before_its_end_is_read_again_from_the_start(
    apiserver: FakeApiServer, kube: KubeClient
) -> None:
    apiserver.on(
        "WATCHLIST",
        PODS,
        # Dropped mid-list: none of these versions is a place to resume from.
        WatchStream([added(pod("b", "7")), added(pod("a", "9"))], then="hang"),
        WatchStream([added(pod("a", "9")), initial_events_end("20")], then="hang"),
    )

    [first] = await take(make_watch(kube), 1)

    assert first == Listed([pod("a", "9")])
    assert watch_lists(apiserver) == 2
    assert apiserver.requests_to("WATCH", PODS) == []
    assert apiserver.requests_to("GET", PODS) == []


@pytest.mark.parametrize(
    "refusal",
    [
        pytest.param(
            status_error(422, "Invalid", "sendInitialEvents is forbidden for watch"),
            id="the-gate-off-answers-422",
        ),
        pytest.param(status_error(400, "BadRequest", "unknown parameter"), id="a-400-answer"),
        pytest.param(
            # A server that ignores sendInitialEvents: objects, then the end of the stream.
            WatchStream([added(pod("a", "3"))], then="close"),
            id="a-stream-that-ends-without-the-bookmark",
        ),
    ],
)
async def test_a_server_without_watch_lists_is_listed_in_pages_from_then_on(
    apiserver: FakeApiServer, kube: KubeClient, refusal: Answer
) -> None:
    apiserver.on("WATCHLIST", PODS, refusal)
    apiserver.on(
        "GET",
        PODS,
        listed(pod("a", "3"), resource_version="10"),
        listed(pod("b", "4"), resource_version="60"),
    )
    apiserver.on(
        "WATCH",
        PODS,
        status_error(410, "Expired", "too old resource version"),
        WatchStream([added(pod("c", "61"))], then="hang"),
    )

    items = await take(make_watch(kube), 3)

    assert [(given(i), names(i)) for i in items] == [
        ("Listed", ["a"]),
        ("Listed", ["b"]),  # the relist after 410 pages too: no second watch-list
        ("ADDED", ["c"]),
    ]
    assert watch_lists(apiserver) == 1
    assert watched_versions(apiserver) == ["10", "60"]


async def test_a_410_in_the_watch_after_a_watch_list_lists_again_by_watch_list(
    apiserver: FakeApiServer, kube: KubeClient
) -> None:
    apiserver.on(
        "WATCHLIST",
        PODS,
        WatchStream([added(pod("a", "3")), initial_events_end("10")], then="close"),
        WatchStream([added(pod("b", "55")), initial_events_end("60")], then="hang"),
    )
    apiserver.on("WATCH", PODS, status_error(410, "Expired", "too old resource version"))

    items = await take(make_watch(kube), 2)

    assert [(given(i), names(i)) for i in items] == [("Listed", ["a"]), ("Listed", ["b"])]
    assert watched_versions(apiserver) == ["10"]
    assert watch_lists(apiserver) == 2


async def test_a_watch_list_answered_404_is_none_served_when_missing_is_fine(
    apiserver: FakeApiServer, kube: KubeClient
) -> None:
    apiserver.on(
        "WATCHLIST",
        PODS,
        status_error(404, "NotFound"),
        WatchStream([added(pod("a", "3")), initial_events_end("10")], then="hang"),
    )
    watch = make_watch(kube)
    watch.missing_ok = True

    items = await take(watch, 2)

    assert items == [Listed([], served=False), Listed([pod("a", "3")])]


async def test_a_watch_list_answered_403_stops_when_told_to(
    apiserver: FakeApiServer, kube: KubeClient
) -> None:
    apiserver.on("WATCHLIST", PODS, status_error(403, "Forbidden"))
    watch = make_watch(kube)
    watch.stop_if_forbidden = True

    with pytest.raises(StopWatching):
        await take(watch, 1)
    assert apiserver.requests_to("GET", PODS) == []  # a refusal of rights, not of the protocol


def test_only_the_annotated_bookmark_ends_the_initial_events() -> None:
    assert initial_events_ended(initial_events_end("5")["object"])
    assert not initial_events_ended(bookmark("5")["object"])
    assert not initial_events_ended({})
