"""Bounded decompression: a body is capped by its size AFTER decoding, chunk by chunk.

zlib is asked for at most ``room + 1`` bytes per call (``max_length``), so a gzip bomb
costs at most the cap in memory before it is refused, never its inflated size. Also what
an error message quotes of a body (``snippet``), for every HTTP client.
"""

from __future__ import annotations

import zlib
from typing import TYPE_CHECKING

from kbctl.errors import FetchError

if TYPE_CHECKING:
    import httpx

#: What we advertise in Accept-Encoding and can undo.
ACCEPT_ENCODING = "gzip, deflate"


class TooLarge(Exception):
    """The decoded body went past the cap."""


class BoundedDecoder:
    """Undo one content coding (identity, gzip, deflate) without exceeding ``max_bytes``."""

    def __init__(self, coding: str, max_bytes: int) -> None:
        coding = coding.strip().lower()
        if coding in ("", "identity"):
            self._wbits: int | None = None
        elif coding in ("gzip", "x-gzip"):
            self._wbits = zlib.MAX_WBITS | 16
        elif coding == "deflate":
            self._wbits = zlib.MAX_WBITS  # zlib-wrapped; raw deflate tried on failure
        else:
            raise ValueError(f"unsupported content-encoding {coding!r}")
        self._zlib = None if self._wbits is None else zlib.decompressobj(self._wbits)
        self._started = False
        self.max_bytes = max_bytes
        self.size = 0

    def feed(self, data: bytes) -> bytes:
        """Decode the next raw chunk; raise ``TooLarge`` once the output passes the cap."""
        out = data if self._zlib is None else self._inflate(data)
        self.size += len(out)
        if self.size > self.max_bytes:
            raise TooLarge
        return out

    @property
    def identity(self) -> bool:
        return self._wbits is None

    @property
    def complete(self) -> bool:
        """False when a compressed stream ended early (a truncated body)."""
        return self._zlib is None or self._zlib.eof

    def _inflate(self, data: bytes) -> bytes:
        assert self._zlib is not None
        pieces: list[bytes] = []
        produced = 0
        room = self.max_bytes - self.size
        while data and produced <= room:
            try:
                piece = self._zlib.decompress(data, room - produced + 1)
            except zlib.error:
                if self._started or self._wbits != zlib.MAX_WBITS:
                    raise
                self._wbits = -zlib.MAX_WBITS  # "deflate" sent as raw deflate
                self._zlib = zlib.decompressobj(self._wbits)
                continue
            self._started = True
            pieces.append(piece)
            produced += len(piece)
            data = self._zlib.unconsumed_tail
            if self._zlib.eof:
                rest = self._zlib.unused_data
                if not (rest and self._wbits == zlib.MAX_WBITS | 16):
                    break  # trailing bytes after a zlib/deflate stream are ignored
                self._zlib = zlib.decompressobj(self._wbits)  # next gzip member
                data = rest
        return b"".join(pieces)


def gunzip(data: bytes, *, max_bytes: int, url: str) -> bytes:
    """Decompress a gzip file body (a ``.xml.gz`` sitemap) under the same size cap."""
    decoder = BoundedDecoder("gzip", max_bytes)
    try:
        out = decoder.feed(data)
    except TooLarge:
        raise FetchError(f"{url}: gzip content is larger than {max_bytes} bytes", url=url) from None
    except zlib.error as exc:
        raise FetchError(f"{url}: corrupt gzip content ({exc})", url=url) from exc
    if not decoder.complete:
        raise FetchError(f"{url}: truncated gzip content", url=url)
    return out


def snippet(response: httpx.Response, limit: int = 200) -> str:
    """The start of a response's body on one line, for an error message."""
    try:
        text = response.text
    except Exception:  # an unreadable body must not hide the status
        return ""
    text = " ".join(text.split())
    return text[:limit] + ("…" if len(text) > limit else "")
