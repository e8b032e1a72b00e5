"""What can go wrong with a request to the API server, as types.

The transport (:mod:`coscheduler.runtime.kube`) raises these and nothing else:
callers catch the case they handle (``NotFound``: the object is gone;
``Conflict``: someone else changed or created it first; ``Gone``: a watch's
resourceVersion expired) and let the rest propagate or log it. No caller
compares status codes or knows which HTTP library carries the requests.

``Transient`` and ``Unreachable`` are worth retrying (throttling, a server
starting or restarting, a dropped connection); the others are answers that
the same request will get again.
"""

from __future__ import annotations

import contextlib
from typing import Final

import orjson

__all__ = [
    "ApiError",
    "Conflict",
    "Forbidden",
    "Gone",
    "Invalid",
    "LeadershipLostError",
    "NotFound",
    "TooManyRequests",
    "Transient",
    "Unreachable",
]

_MESSAGE_LIMIT: Final = 500


class ApiError(Exception):
    """A request that did not succeed.

    ``status`` is the HTTP code of the answer (None when there was none);
    ``reason`` and ``message`` come from the Status object the server sends
    (``NotFound``, ``AlreadyExists``, ``Expired``...).
    """

    def __init__(
        self, *, method: str, path: str, status: int | None, reason: str = "", message: str = ""
    ) -> None:
        self.method = method
        self.path = path
        self.status = status
        self.reason = reason
        self.message = message
        text = f"{method} {path}: {'no answer' if status is None else status}"
        if reason:
            text += f" {reason}"
        if message:
            text += f": {message}"
        super().__init__(text)

    @property
    def retryable(self) -> bool:
        """Whether the same request may succeed later without any change."""
        return isinstance(self, Transient | Unreachable)

    @staticmethod
    def from_answer(*, method: str, path: str, status: int, body: bytes) -> ApiError:
        """The error of the type ``status`` means, with the Status the server sent in ``body``."""
        reason = ""
        message = body[:_MESSAGE_LIMIT].decode("utf-8", "replace")
        with contextlib.suppress(orjson.JSONDecodeError, AttributeError, TypeError):
            decoded = orjson.loads(body)
            reason = str(decoded.get("reason", ""))
            message = str(decoded.get("message", message))
        kind = _BY_STATUS.get(status) or (Transient if status >= 500 else ApiError)
        return kind(method=method, path=path, status=status, reason=reason, message=message)


class Unreachable(ApiError):
    """No answer: the connection failed, was reset, or timed out."""


class NotFound(ApiError):
    """404: the object (or its namespace) does not exist."""


class Conflict(ApiError):
    """409: changed since it was read, already exists, or (a Binding) already bound."""


class Gone(ApiError):
    """410: the resourceVersion asked for is too old; list again."""


class Invalid(ApiError):
    """400 or 422: the server refused the request's content."""


class Forbidden(ApiError):
    """401 or 403: not authenticated, or not allowed."""


class Transient(ApiError):
    """5xx: the server failed or is starting; worth retrying."""


class TooManyRequests(Transient):
    """429: throttled by the server's priority and fairness; worth retrying."""


_BY_STATUS: Final[dict[int, type[ApiError]]] = {
    400: Invalid,
    401: Forbidden,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    410: Gone,
    422: Invalid,
    429: TooManyRequests,
}


class LeadershipLostError(Exception):
    """The Lease could not be renewed in time; another replica may lead now.

    Raised by :mod:`coscheduler.runtime.leader`; the CLI exits on it.
    """
