"""Times as the Kubernetes API writes them: UTC, RFC 3339, ``Z``-suffixed."""

from __future__ import annotations

import datetime

__all__ = ["rfc3339", "utc_now"]


def utc_now(*, whole_seconds: bool = False) -> datetime.datetime:
    """Now, in UTC; ``whole_seconds`` drops the microseconds (metav1.Time's precision)."""
    now = datetime.datetime.now(datetime.UTC)
    return now.replace(microsecond=0) if whole_seconds else now


def rfc3339(moment: datetime.datetime | None = None, *, micro: bool = False) -> str:
    """``2026-11-24T19:10:45Z`` (metav1.Time), or with ``micro`` ``...45.123456Z`` (MicroTime)."""
    moment = (moment or utc_now()).astimezone(datetime.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ" if micro else "%Y-%m-%dT%H:%M:%SZ")
