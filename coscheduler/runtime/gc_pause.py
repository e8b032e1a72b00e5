"""The cyclic garbage collector held off while big lists are decoded.

Decoding a list of 50,000 pods makes millions of fresh dicts and lists, and
every few thousand of them the collector walks the young heap, and often the
whole of it: half the CPU of the list, with nothing to collect (JSON has no
cycles). Lists of several kinds run at once, so the pause is counted: the
collector is enabled again when the last list that paused it ends, and only
if it was enabled before the first.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["paused"]

_holders = 0
_was_enabled = False


@contextmanager
def paused() -> Iterator[None]:
    """No cyclic collection while any ``paused()`` block runs."""
    global _holders, _was_enabled
    if _holders == 0:
        _was_enabled = gc.isenabled()
        gc.disable()
    _holders += 1
    try:
        yield
    finally:
        _holders -= 1
        if _holders == 0 and _was_enabled:
            gc.enable()
