"""A streamed body, decompressed and cut into lines: how a watch is read.

The API server sends a watch as one JSON object per line, gzip-compressed
when asked (it then compresses watch-list streams too). Chunks arrive cut
anywhere, in a line or between lines; an object can be as large as etcd
allows (1.5 MiB), and a line longer than :data:`MAX_LINE_BYTES` is refused
rather than buffered without end.
"""

from __future__ import annotations

import zlib
from typing import Final

__all__ = ["MAX_LINE_BYTES", "Lines", "decompressor"]

#: Watch streams can carry objects up to etcd's request limit in one line.
MAX_LINE_BYTES: Final = 4 * 1024 * 1024


class _Decompressor:
    """zlib's streaming decompressor, across the members of a gzip stream.

    The API server compresses each event of a watch as a gzip member of its
    own (a header, the event, a trailer): one decompressor per member.
    """

    def __init__(self, wbits: int) -> None:
        self._wbits = wbits
        self._zlib = zlib.decompressobj(wbits)

    def decompress(self, data: bytes) -> bytes:
        try:
            out = self._zlib.decompress(data)
            while self._zlib.eof and self._zlib.unused_data:
                rest = self._zlib.unused_data
                self._zlib = zlib.decompressobj(self._wbits)
                out += self._zlib.decompress(rest)
        except zlib.error as error:
            raise ConnectionError(
                f"a compressed answer that does not decompress: {error}"
            ) from error
        return out

    def flush(self) -> bytes:
        try:
            return self._zlib.flush()
        except zlib.error as error:
            raise ConnectionError(
                f"a compressed answer that does not decompress: {error}"
            ) from error


def decompressor(encoding: bytes) -> _Decompressor | None:
    """The decompressor of a Content-Encoding (None for none); ``ConnectionError`` if unknown."""
    if not encoding or encoding == b"identity":
        return None
    if encoding in (b"gzip", b"x-gzip"):
        return _Decompressor(16 + zlib.MAX_WBITS)
    if encoding == b"deflate":
        return _Decompressor(zlib.MAX_WBITS)
    raise ConnectionError(f"an answer in an encoding never asked for: {encoding!r}")


class Lines:
    """Cut a stream of chunks into its non-empty lines (without their newlines).

    ``source`` names the stream in the error of a line too long.
    """

    def __init__(self, encoding: bytes = b"", *, source: str = "") -> None:
        self._decompressor = decompressor(encoding)
        self._source = source
        self._pending: list[bytes] = []
        self._pending_size = 0

    def feed(self, chunk: bytes) -> list[bytes]:
        """The lines that ``chunk`` completes."""
        if self._decompressor is not None:
            chunk = self._decompressor.decompress(chunk)
        if b"\n" not in chunk:
            if chunk:
                self._pending.append(chunk)
                self._pending_size += len(chunk)
                if self._pending_size > MAX_LINE_BYTES:
                    raise ValueError(f"watch line over {MAX_LINE_BYTES} bytes from {self._source}")
            return []
        if self._pending:
            self._pending.append(chunk)
            chunk = b"".join(self._pending)
            self._pending.clear()
        *lines, rest = chunk.split(b"\n")
        self._pending_size = len(rest)
        if rest:
            self._pending.append(rest)
        return [line for line in lines if line]

    def end(self) -> list[bytes]:
        """The lines left when the stream ends (the last may lack its newline)."""
        if self._decompressor is not None:
            self._pending.append(self._decompressor.flush())
        rest = b"".join(self._pending)
        self._pending.clear()
        self._pending_size = 0
        return [line for line in rest.split(b"\n") if line.strip()]
