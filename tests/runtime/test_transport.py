"""The transport's one promise: every failure leaves it as a typed error, chained to its cause."""

from __future__ import annotations

import pytest

from coscheduler.runtime.errors import (
    ApiError,
    Conflict,
    Forbidden,
    Gone,
    Invalid,
    NotFound,
    TooManyRequests,
    Transient,
    Unreachable,
)
from coscheduler.runtime.kube import KubeClient
from tests.runtime.apiserver import Disconnect, FakeApiServer, Reply, status_error

ANSWERS = [
    pytest.param(400, "BadRequest", Invalid, False, id="400-invalid"),
    pytest.param(401, "Unauthorized", Forbidden, False, id="401-forbidden"),
    pytest.param(403, "Forbidden", Forbidden, False, id="403-forbidden"),
    pytest.param(404, "NotFound", NotFound, False, id="404-not-found"),
    pytest.param(409, "AlreadyExists", Conflict, False, id="409-conflict"),
    pytest.param(410, "Expired", Gone, False, id="410-gone"),
    pytest.param(422, "Invalid", Invalid, False, id="422-invalid"),
    pytest.param(429, "TooManyRequests", TooManyRequests, True, id="429-throttled"),
    pytest.param(500, "InternalError", Transient, True, id="500-transient"),
    pytest.param(503, "ServiceUnavailable", Transient, True, id="503-transient"),
    pytest.param(418, "Teapot", ApiError, False, id="other-4xx-plain"),
]


@pytest.mark.parametrize(("code", "reason", "kind", "retryable"), ANSWERS)
async def test_each_refusal_is_its_type_with_the_servers_words(
    apiserver: FakeApiServer,
    kube: KubeClient,
    code: int,
    reason: str,
    kind: type[ApiError],
    retryable: bool,
) -> None:
    apiserver.on("POST", "/x", status_error(code, reason, "what the server said"))
    with pytest.raises(ApiError) as caught:
        await kube.send("POST", "/x", body={})
    error = caught.value
    assert type(error) is kind
    assert (error.method, error.path, error.status) == ("POST", "/x", code)
    assert (error.reason, error.message) == (reason, "what the server said")
    assert error.retryable is retryable
    assert str(error) == f"POST /x: {code} {reason}: what the server said"


async def test_a_body_that_is_not_a_status_is_quoted(
    apiserver: FakeApiServer, kube: KubeClient
) -> None:
    apiserver.on("GET", "/x", Reply(502, "bad gateway"))
    with pytest.raises(Transient) as caught:
        await kube.send("GET", "/x")
    assert caught.value.status == 502
    assert "bad gateway" in caught.value.message


@pytest.mark.parametrize(
    ("verb", "cause"),
    [
        pytest.param("POST", ConnectionError, id="write-lean-pool"),
        pytest.param("GET", ConnectionError, id="read-pool"),
    ],
)
async def test_no_answer_is_unreachable_and_chained_to_the_http_error(
    apiserver: FakeApiServer, kube: KubeClient, verb: str, cause: type[Exception]
) -> None:
    apiserver.on(verb, "/x", Disconnect())
    with pytest.raises(Unreachable) as caught:
        await kube.send(verb, "/x", body={} if verb == "POST" else None)
    error = caught.value
    assert error.status is None
    assert error.retryable
    assert isinstance(error.__cause__, cause)
    assert str(error).startswith(f"{verb} /x: no answer: ")


async def test_a_refused_connection_is_unreachable(tmp_path: object) -> None:
    async with FakeApiServer() as server:
        client = await server.connect(tmp_path)  # type: ignore[arg-type]
    try:  # the server is gone: nothing listens on its port any more
        with pytest.raises(Unreachable) as caught:
            await client.send("GET", "/x")
        assert isinstance(caught.value.__cause__, OSError)
    finally:
        await client.close()


async def test_reads_retry_what_is_retryable_and_writes_do_not(
    apiserver: FakeApiServer, kube: KubeClient
) -> None:
    apiserver.on("GET", "/x", status_error(429, "TooManyRequests"), Reply(200, {"ok": True}))
    assert await kube.call("GET", "/x") == {"ok": True}
    apiserver.on("POST", "/y", status_error(503, "ServiceUnavailable"), Reply(201, {}))
    with pytest.raises(Transient):
        await kube.call("POST", "/y", body={})
    assert len(apiserver.requests_to("POST", "/y")) == 1
    apiserver.on("GET", "/z", status_error(404, "NotFound"), Reply(200, {}))
    with pytest.raises(NotFound):
        await kube.call("GET", "/z")
    assert len(apiserver.requests_to("GET", "/z")) == 1


async def test_a_watch_refused_is_typed_too(apiserver: FakeApiServer, kube: KubeClient) -> None:
    apiserver.on("WATCH", "/api/v1/pods", status_error(410, "Expired"))
    lines = kube.stream_lines("/api/v1/pods", query=[("watch", "true")], read_timeout_seconds=1)
    with pytest.raises(Gone):
        async for _ in lines:
            pass
