"""runtime/watch.py: list then watch, resumed from the last resourceVersion, relisted on 410.

Each test scripts what the API server says and checks what goes back over
the wire (the requests' resourceVersion) and what the consumer is given.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from coscheduler.runtime.kube import KubeClient
from coscheduler.runtime.watch import Event, Listed, Watch, WatchItem
from tests.runtime.apiserver import (
    FakeApiServer,
    WatchStream,
    added,
    bookmark,
    deleted,
    error_event,
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


async def test_a_stream_the_server_ends_is_resumed_from_the_last_events_version(
    apiserver: FakeApiServer, kube: KubeClient
) -> None:
    apiserver.on("GET", PODS, object_list([], resource_version="10"))
    apiserver.on(
        "WATCH",
        PODS,
        WatchStream([added(pod("a", "11")), modified(pod("a", "12"))], then="close"),
        WatchStream([deleted(pod("a", "13"))], then="hang"),
    )

    items = await take(make_watch(kube), 4)

    assert [type(i).__name__ for i in items] == ["Listed", "Event", "Event", "Event"]
    assert watched_versions(apiserver) == ["10", "12"]
    assert len(apiserver.requests_to("GET", PODS)) == 1, "a resumed watch does not list again"
    assert consume(items) == {}


async def test_a_bookmark_moves_the_version_without_being_delivered(
    apiserver: FakeApiServer, kube: KubeClient
) -> None:
    apiserver.on("GET", PODS, object_list([], resource_version="10"))
    apiserver.on(
        "WATCH",
        PODS,
        WatchStream([added(pod("a", "11")), bookmark("40")], then="close"),
        WatchStream([modified(pod("a", "41"))], then="hang"),
    )

    items = await take(make_watch(kube), 3)

    assert [names(i) for i in items] == [[], ["a"], ["a"]]
    assert [i.type for i in items if isinstance(i, Event)] == ["ADDED", "MODIFIED"]
    assert watched_versions(apiserver) == ["10", "40"]


async def test_a_410_answer_to_the_watch_lists_again(
    apiserver: FakeApiServer, kube: KubeClient
) -> None:
    apiserver.on(
        "GET",
        PODS,
        object_list([pod("a", "3"), pod("b", "4")], resource_version="10"),
        # b was deleted while we could not watch; the relist no longer has it.
        object_list([pod("a", "3"), pod("c", "55")], resource_version="60"),
    )
    apiserver.on(
        "WATCH",
        PODS,
        status_error(410, "Expired", "too old resource version: 10 (50)"),
        WatchStream([added(pod("d", "61"))], then="hang"),
    )

    items = await take(make_watch(kube), 3)

    assert [names(i) for i in items] == [["a", "b"], ["a", "c"], ["d"]]
    assert consume(items) == {"a": "3", "c": "55", "d": "61"}
    assert watched_versions(apiserver) == ["10", "60"]


async def test_a_410_error_event_in_the_stream_lists_again(
    apiserver: FakeApiServer, kube: KubeClient
) -> None:
    apiserver.on(
        "GET",
        PODS,
        object_list([pod("a", "3"), pod("b", "4")], resource_version="10"),
        object_list([pod("c", "55")], resource_version="60"),
    )
    apiserver.on(
        "WATCH",
        PODS,
        WatchStream(
            [modified(pod("a", "11")), error_event(410, "Expired", "too old resource version")]
        ),
        WatchStream([added(pod("d", "61"))], then="hang"),
    )

    items = await take(make_watch(kube), 4)

    assert [type(i).__name__ for i in items] == ["Listed", "Event", "Listed", "Event"]
    # a and b were deleted meanwhile: the consumer, told by the relist, holds c and d only.
    assert consume(items) == {"c": "55", "d": "61"}
    assert watched_versions(apiserver) == ["10", "60"]


async def test_another_error_event_resumes_the_watch_without_listing(
    apiserver: FakeApiServer, kube: KubeClient
) -> None:
    apiserver.on("GET", PODS, object_list([], resource_version="10"))
    apiserver.on(
        "WATCH",
        PODS,
        WatchStream(
            [added(pod("a", "11")), error_event(500, "InternalError", "etcd leader changed")]
        ),
        WatchStream([modified(pod("a", "12"))], then="hang"),
    )

    items = await take(make_watch(kube), 3)

    assert [names(i) for i in items] == [[], ["a"], ["a"]]
    assert watched_versions(apiserver) == ["10", "11"]
    assert len(apiserver.requests_to("GET", PODS)) == 1


async def test_an_error_answer_to_the_watch_is_retried_from_the_same_version(
    apiserver: FakeApiServer, kube: KubeClient
) -> None:
    apiserver.on("GET", PODS, object_list([pod("a", "3")], resource_version="10"))
    apiserver.on(
        "WATCH",
        PODS,
        status_error(503, "ServiceUnavailable"),
        status_error(429, "TooManyRequests"),
        WatchStream([deleted(pod("a", "11"))], then="hang"),
    )

    items = await take(make_watch(kube), 2)

    assert consume(items) == {}
    assert watched_versions(apiserver) == ["10", "10", "10"]
    assert len(apiserver.requests_to("GET", PODS)) == 1


async def test_a_silent_stream_is_given_up_and_reopened_from_the_last_version(
    apiserver: FakeApiServer, kube: KubeClient
) -> None:
    apiserver.on("GET", PODS, object_list([], resource_version="10"))
    apiserver.on(
        "WATCH",
        PODS,
        # Open, one event, then not a byte more: the connection is half dead.
        WatchStream([added(pod("a", "11"))], then="hang"),
        WatchStream([modified(pod("a", "12"))], then="hang"),
    )

    items = await take(make_watch(kube), 3)

    assert [names(i) for i in items] == [[], ["a"], ["a"]]
    assert watched_versions(apiserver) == ["10", "11"]
    assert len(apiserver.requests_to("GET", PODS)) == 1
