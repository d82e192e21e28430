"""A portable embedding cache: vectors keyed by what was embedded, in one file.

The knowledge base's own cache (the ``embedding_cache`` table) lives in its database, and a
CI runner starts from a fresh one on every run. This file carries the vectors from one run
(one machine, one database) to the next: ``kbctl ingest --embedding-cache FILE`` loads it
before embedding and writes it back afterwards, so only text that changed is sent to the
provider.

Layout (little-endian)::

    KBCTL-EMBEDDINGS 1\\n
    {"embedder": "openai/text-embedding-3-small@1536", "dimensions": 1536, "count": N}\\n
    N records: 32-byte key (sha256 of the input, ``input_key``) + dimensions float32

The header names the embedder the vectors came from (provider, model, dimensions and its
document task); a file made by another is not used. pgvector keeps float32, so nothing is
lost. A file is read only within ``MAX_BYTES``, checked whole (its size must be exactly what
its header says, every number finite) before any vector is used, and written by replacing
it (``kbctl.atomic``): a crash mid-write leaves the previous file.
"""

from __future__ import annotations

import json
import math
import struct
import sys
from array import array
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..atomic import write_replacing

MAGIC = b"KBCTL-EMBEDDINGS 1\n"
KEY_BYTES = 32
# A file is refused past this size: 2 GiB holds ~1.3 million 384-dimension vectors, far
# more than any documentation site needs.
MAX_BYTES = 2 << 30
MAX_HEADER = 4096
MAX_DIMENSIONS = 16384


class CacheFileError(ValueError):
    """A file that is not a usable embedding cache; the message says why."""


@dataclass(frozen=True)
class CacheFile:
    embedder: str
    dimensions: int
    vectors: dict[bytes, list[float]]


@dataclass(frozen=True)
class Header:
    """What a cache file says of itself, its size checked against it."""

    embedder: str
    dimensions: int
    count: int
    offset: int  # where the records start

    @property
    def record(self) -> int:
        return KEY_BYTES + 4 * self.dimensions


def read(path: Path) -> CacheFile:
    """The cache in ``path``, checked whole; ``CacheFileError`` when it is not one. Holds
    every vector in memory: for small files (tests); ``read_header`` and ``batches`` read a
    large one in bounded memory."""
    header = read_header(path)
    vectors: dict[bytes, list[float]] = {}
    for batch in batches(path, header):
        vectors.update(batch)
    return CacheFile(header.embedder, header.dimensions, vectors)


def read_header(path: Path) -> Header:
    """The file's header, its size checked against it (a truncated or padded file is
    refused here, before any record is read)."""
    try:
        size = path.stat().st_size
        if not path.is_file():
            raise CacheFileError("it is not a regular file")
        if size > MAX_BYTES:
            raise CacheFileError(f"it holds {size:,} bytes, over the {MAX_BYTES:,} a cache "
                                 "may")
        with path.open("rb") as handle:
            head = handle.read(len(MAGIC) + MAX_HEADER + 1)
    except OSError as exc:
        raise CacheFileError(f"cannot read it ({exc.strerror or exc})") from exc
    if not head.startswith(MAGIC):
        raise CacheFileError("it is not a kbctl embedding cache (no header)")
    end = head.find(b"\n", len(MAGIC), len(MAGIC) + MAX_HEADER)
    if end < 0:
        raise CacheFileError("its header is cut short or too long")
    embedder, dimensions, count = _header(head[len(MAGIC):end])
    header = Header(embedder, dimensions, count, end + 1)
    body = size - header.offset
    if body != count * header.record:
        raise CacheFileError(f"its header says {count:,} vectors, but it holds "
                             f"{body:,} bytes of them, not {count * header.record:,} "
                             "(a truncated or damaged file)")
    return header


def batches(path: Path, header: Header, size: int = 1000
            ) -> Iterator[dict[bytes, list[float]]]:
    """The file's vectors, ``size`` at a time: memory stays bounded whatever the file
    holds. A vector that is not finite numbers is a ``CacheFileError``."""
    try:
        with path.open("rb") as handle:
            handle.seek(header.offset)
            while chunk := handle.read(header.record * size):
                if len(chunk) % header.record:
                    raise CacheFileError("it changed while it was read")
                yield _records(memoryview(chunk), header.record)
    except OSError as exc:
        raise CacheFileError(f"cannot read it ({exc.strerror or exc})") from exc


def _records(body: memoryview, record: int) -> dict[bytes, list[float]]:
    vectors: dict[bytes, list[float]] = {}
    for at in range(0, len(body), record):
        values = array("f")
        values.frombytes(body[at + KEY_BYTES:at + record])
        if sys.byteorder != "little":  # pragma: no cover - kbctl's CI is little-endian
            values.byteswap()
        # one sum tells: an infinity or a NaN makes it one, and float32 values summed in
        # double precision never overflow
        if not math.isfinite(sum(values)):
            raise CacheFileError("it holds a vector that is not finite numbers")
        vectors[bytes(body[at:at + KEY_BYTES])] = values.tolist()
    return vectors


def _header(raw: bytes) -> tuple[str, int, int]:
    try:
        header = json.loads(raw)
    except ValueError as exc:
        raise CacheFileError("its header is not JSON") from exc
    if not isinstance(header, dict):
        raise CacheFileError("its header is not a JSON object")
    embedder, dimensions, count = (header.get(k) for k in ("embedder", "dimensions", "count"))
    if not isinstance(embedder, str) or not embedder:
        raise CacheFileError("its header names no embedder")
    if (not isinstance(dimensions, int) or isinstance(dimensions, bool)
            or not 0 < dimensions <= MAX_DIMENSIONS):
        raise CacheFileError(f"its header's dimensions are not 1..{MAX_DIMENSIONS}")
    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
        raise CacheFileError("its header's count is not a whole number")
    return embedder, dimensions, count


def write(path: Path, embedder: str, dimensions: int,
          vectors: Mapping[bytes, Sequence[float]]) -> int:
    """Replace ``path`` with these vectors (in key order, so the same vectors make the
    same file); how many bytes it holds."""
    if not 0 < dimensions <= MAX_DIMENSIONS:
        raise ValueError(f"dimensions {dimensions} out of range")
    header = json.dumps({"embedder": embedder, "dimensions": dimensions,
                         "count": len(vectors)}, separators=(",", ":")).encode()
    parts = [MAGIC, header, b"\n"]
    pack = struct.Struct(f"<{dimensions}f").pack
    for key in sorted(vectors):
        vector = vectors[key]
        if len(key) != KEY_BYTES or len(vector) != dimensions:
            raise ValueError(f"a {len(vector)}-dimension vector or a {len(key)}-byte key "
                             f"in a {dimensions}-dimension cache")
        parts += [key, pack(*vector)]
    data = b"".join(parts)
    write_replacing(path, data)
    return len(data)
