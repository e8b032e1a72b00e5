"""Cutting a streamed watch body into lines: chunk boundaries anywhere, gzip, a bound on a line."""

from __future__ import annotations

import gzip
import zlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from coscheduler.runtime.lines import MAX_LINE_BYTES, Lines


def read(lines: Lines, chunks: list[bytes]) -> list[bytes]:
    out = [line for chunk in chunks for line in lines.feed(chunk)]
    return out + lines.end()


def cut(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({min(c, len(data)) for c in cuts})
    return [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True)]


_LINE = st.binary(min_size=1, max_size=60).map(lambda b: b.replace(b"\n", b"x"))


@given(lines=st.lists(_LINE, max_size=12), cuts=st.lists(st.integers(0, 800), max_size=10))
def test_any_cutting_gives_the_same_lines(lines: list[bytes], cuts: list[int]) -> None:
    body = b"".join(line + b"\n" for line in lines)
    assert read(Lines(), cut(body, cuts)) == lines


@given(lines=st.lists(_LINE, max_size=12), cuts=st.lists(st.integers(0, 800), max_size=10))
def test_gzip_cut_anywhere_gives_the_same_lines(lines: list[bytes], cuts: list[int]) -> None:
    body = gzip.compress(b"".join(line + b"\n" for line in lines))
    assert read(Lines(b"gzip", source="/x"), cut(body, cuts)) == lines


@given(lines=st.lists(_LINE, max_size=12), cuts=st.lists(st.integers(0, 800), max_size=10))
def test_a_gzip_member_per_event_as_the_api_server_sends_them(
    lines: list[bytes], cuts: list[int]
) -> None:
    body = b"".join(gzip.compress(line + b"\n") for line in lines)
    assert read(Lines(b"gzip"), cut(body, cuts)) == lines


def test_a_last_line_without_its_newline_and_blank_lines() -> None:
    assert read(Lines(), [b"\n{a}\n\n{b", b"}"]) == [b"{a}", b"{b}"]


def test_deflate_too() -> None:
    assert read(Lines(b"deflate"), [zlib.compress(b"{a}\n{b}\n")]) == [b"{a}", b"{b}"]


def test_a_large_object_in_many_chunks_is_one_line() -> None:
    big = b"{" + b"x" * (1536 * 1024) + b"}"
    chunks = [big[i : i + 16384] for i in range(0, len(big), 16384)] + [b"\n"]
    assert read(Lines(), chunks) == [big]


def test_a_line_beyond_the_bound_is_refused() -> None:
    lines = Lines(source="/api/v1/pods")
    assert lines.feed(b"x" * MAX_LINE_BYTES) == []  # at the bound: still waiting for its end
    with pytest.raises(ValueError, match="/api/v1/pods"):
        lines.feed(b"x")


def test_garbage_that_claims_gzip_is_a_broken_connection() -> None:
    with pytest.raises(ConnectionError):
        Lines(b"gzip").feed(b"not gzip at all")


def test_an_encoding_never_asked_for_is_refused() -> None:
    with pytest.raises(ConnectionError, match="br"):
        Lines(b"br")
