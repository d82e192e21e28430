"""The portable embedding cache: its file format (bounded, checked whole, replaced whole)
and `kbctl ingest --embedding-cache FILE` against a loopback OpenAI-compatible server,
from one database to a fresh one."""

from __future__ import annotations

import hashlib
import json
import math
import struct
from pathlib import Path

import pytest

from kbctl.embed import cache_file
from kbctl.embed.cache_file import MAGIC, CacheFileError

from .conftest import Cli
from .test_hybrid import openai_server  # noqa: F401 (a fixture)


def _key(n: int) -> bytes:
    return hashlib.sha256(str(n).encode()).digest()


def test_a_cache_file_round_trips_its_vectors(tmp_path: Path) -> None:
    path = tmp_path / "cache.kbvec"
    vectors = {_key(n): [n / 10, -0.5, 0.25] for n in range(5)}
    size = cache_file.write(path, "openai/m@3", 3, vectors)
    assert size == path.stat().st_size
    back = cache_file.read(path)
    assert (back.embedder, back.dimensions) == ("openai/m@3", 3)
    assert back.vectors.keys() == vectors.keys()
    for key, vector in vectors.items():  # float32, as pgvector keeps them
        assert back.vectors[key] == pytest.approx(vector, abs=1e-7)
    # the same vectors make the same file, whatever order they came in
    other = tmp_path / "other.kbvec"
    cache_file.write(other, "openai/m@3", 3, dict(reversed(list(vectors.items()))))
    assert other.read_bytes() == path.read_bytes()


def test_a_large_file_is_read_a_batch_at_a_time(tmp_path: Path) -> None:
    """A file near the size cap held every vector in memory at once as Python floats
    (about six times the file); it is now read, and checked, in bounded batches."""
    path = tmp_path / "cache.kbvec"
    cache_file.write(path, "openai/m@2", 2, {_key(n): [0.6, 0.8] for n in range(2500)})
    header = cache_file.read_header(path)
    assert header.count == 2500
    assert [len(b) for b in cache_file.batches(path, header, 1000)] == [1000, 1000, 500]
    with path.open("r+b") as handle:  # a NaN in the last batch is found by reading it
        handle.seek(-4, 2)
        handle.write(b"\x00\x00\xc0\x7f")
    with pytest.raises(CacheFileError, match="not finite"):
        list(cache_file.batches(path, header, 1000))


def _header(**fields: object) -> bytes:
    head = {"embedder": "openai/m@2", "dimensions": 2, "count": 1} | fields
    return MAGIC + json.dumps(head).encode() + b"\n"


RECORD = _key(1) + struct.pack("<2f", 0.6, 0.8)


@pytest.mark.parametrize(("data", "why"), [
    (b"", "no header"),
    (b"PK\x03\x04 a zip file", "no header"),
    (MAGIC + b"{not json\n" + RECORD, "not JSON"),
    (MAGIC + b"[1]\n" + RECORD, "not a JSON object"),
    (MAGIC + b"x" * 5000, "cut short or too long"),
    (_header(embedder="") + RECORD, "names no embedder"),
    (_header(dimensions=0) + RECORD, "dimensions"),
    (_header(dimensions=True) + RECORD, "dimensions"),
    (_header(count=-1) + RECORD, "count"),
    (_header() + RECORD[:-3], "truncated or damaged"),
    (_header(count=2) + RECORD, "truncated or damaged"),
    (_header() + RECORD + b"\0", "truncated or damaged"),
    (_header() + _key(1) + struct.pack("<2f", math.nan, 1.0), "not finite"),
])
def test_a_damaged_or_foreign_file_is_refused_with_its_reason(
        tmp_path: Path, data: bytes, why: str) -> None:
    path = tmp_path / "cache.kbvec"
    path.write_bytes(data)
    with pytest.raises(CacheFileError, match=why):
        cache_file.read(path)
    path.write_bytes(_header() + RECORD)  # the same file, well formed, is read
    assert cache_file.read(path).vectors == {_key(1): pytest.approx([0.6, 0.8])}


def test_a_file_over_the_bound_is_not_read(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "cache.kbvec"
    path.write_bytes(_header() + RECORD)
    monkeypatch.setattr(cache_file, "MAX_BYTES", path.stat().st_size - 1)
    with pytest.raises(CacheFileError, match="over the"):
        cache_file.read(path)
    with pytest.raises(CacheFileError, match="not a regular file"):
        cache_file.read(tmp_path)


def test_a_failed_write_leaves_the_previous_file(tmp_path: Path) -> None:
    path = tmp_path / "cache.kbvec"
    cache_file.write(path, "openai/m@2", 2, {_key(1): [0.6, 0.8]})
    before = path.read_bytes()
    with pytest.raises(ValueError):
        cache_file.write(path, "openai/m@2", 2, {_key(1): [0.6, 0.8], _key(2): [1.0]})
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["cache.kbvec"]


# --- through the CLI ----------------------------------------------------------------------

EMBEDDER = "openai:fake-model@24"
PAGES = {
    "install.md": "# Install\n\n## Requirements\n\nPython 3.11 and a C compiler.\n\n"
                  "## Steps\n\nRun the installer, then open a new shell.\n",
    "usage.md": "# Usage\n\n## Query\n\nAsk a question with the query command.\n\n"
                "## Output\n\nResults cite the page and its section.\n",
    "faq.md": "# FAQ\n\n## Why is it slow?\n\nThe first run downloads the model.\n",
}


def _docs(workdir: Path) -> Path:
    docs = workdir / "docs"
    docs.mkdir(exist_ok=True)
    for name, text in PAGES.items():
        (docs / name).write_text(text, encoding="utf-8")
    return docs


def _fresh_database(cli: Cli, workdir: Path, name: str) -> list[str]:
    """An embedded database in its own folder: what a new CI runner starts from."""
    data = workdir / name
    data.mkdir()
    data.chmod(0o755)
    return ["--data-dir", str(data)]


def _ingest(cli: Cli, docs: Path, cache: Path, where: list[str], base: str,
            embedder: str = EMBEDDER) -> dict:
    result = cli("ingest", "--embedding-cache", str(cache), "files", str(docs), *where,
                 "--embedder", embedder, "--embedder-base-url", base,
                 "--allow-private-network", "--json", db=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_a_fresh_database_with_the_file_embeds_only_changed_text(
        cli: Cli, workdir: Path, openai_server: tuple[str, list[dict]]) -> None:  # noqa: F811
    base, seen = openai_server
    docs, cache = _docs(workdir), workdir / "ci-cache" / "embeddings.kbvec"
    first = _ingest(cli, docs, cache, _fresh_database(cli, workdir, "run1"), base)
    sent_first = [t for body in seen for t in body["input"]]
    assert first["embedded"] == len(sent_first) > 0
    carried = cache_file.read(cache)
    assert carried.embedder == "openai/fake-model@24" and len(carried.vectors) == len(sent_first)

    (docs / "faq.md").write_text(PAGES["faq.md"] + "\n## Offline?\n\nYes, once cached.\n",
                                 encoding="utf-8")
    mark = len(seen)
    second = _ingest(cli, docs, cache, _fresh_database(cli, workdir, "run2"), base)
    sent = [t for body in seen[mark:] for t in body["input"]]
    assert second["added"] == len(PAGES) and second["embedded"] == len(sent) == 1
    assert "Offline?" in sent[0] and sent[0] not in sent_first
    assert second["embeddingCacheHits"] == len(sent_first)  # every old section's text
    # the file now holds exactly the sections the knowledge base is made of: the faq's new
    # one joined them
    assert len(cache_file.read(cache).vectors) == len(sent_first) + 1


def test_a_file_from_another_model_or_damaged_is_a_note_and_replaced(
        cli: Cli, workdir: Path, openai_server: tuple[str, list[dict]]) -> None:  # noqa: F811
    base, seen = openai_server
    docs, cache = _docs(workdir), workdir / "embeddings.kbvec"
    _ingest(cli, docs, cache, _fresh_database(cli, workdir, "a"), base,
            embedder="openai:other-model@24")
    mark = len(seen)
    report = _ingest(cli, docs, cache, _fresh_database(cli, workdir, "b"), base)
    assert report["embedded"] == len([t for b in seen[mark:] for t in b["input"]]) > 0
    assert any("come from openai/other-model@24" in n for n in report["notes"])
    assert cache_file.read(cache).embedder == "openai/fake-model@24"

    cache.write_bytes(cache.read_bytes()[:-7])  # a cut-short upload
    report = _ingest(cli, docs, cache, _fresh_database(cli, workdir, "c"), base)
    assert any("truncated or damaged" in n for n in report["notes"])
    assert report["embedded"] > 0 and cache_file.read(cache).vectors


def test_a_folder_is_no_cache_file(cli: Cli, workdir: Path) -> None:
    result = cli("ingest", "--embedding-cache", str(workdir), "text", "hello", "--ref", "x")
    assert result.exit_code == 2
    assert "--embedding-cache" in result.output and "is a folder" in result.output


def test_sections_read_in_windows_travel_window_by_window(
        cli: Cli, workdir: Path, openai_server: tuple[str, list[dict]]) -> None:  # noqa: F811
    """A model that reads 40 tokens gets each long section in windows: the file carries every
    window, and a fresh database sends nothing again."""
    base, seen = openai_server
    (workdir / "kbctl.yaml").write_text("embedder_window: 40\n")
    docs, cache = _docs(workdir), workdir / "embeddings.kbvec"
    (docs / "long.md").write_text("# Long\n\n" + " ".join(f"word{i}" for i in range(150)),
                                  encoding="utf-8")
    first = _ingest(cli, docs, cache, _fresh_database(cli, workdir, "a"), base)
    windows = sum(len(body["input"]) for body in seen)
    assert first["embedded"] == windows == len(cache_file.read(cache).vectors)
    assert windows > len(PAGES) + 1  # a long section went in several windows
    second = _ingest(cli, docs, cache, _fresh_database(cli, workdir, "b"), base)
    assert second["embedded"] == 0 and sum(len(b["input"]) for b in seen) == windows
