"""Texts longer than the embedding model reads are embedded whole, in windows: split, pooled,
cached window by window, and found by words a truncating model never saw."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import pytest

from kbctl.config import Settings, resolve_settings
from kbctl.embed.windows import CHARS_PER_TOKEN, MAX_WINDOWS, known_window, pool, split
from kbctl.errors import ConfigError
from kbctl.pipeline.cached_embedder import CachedEmbedder
from kbctl.pipeline.ingest import ingest
from kbctl.pipeline.reembed import reembed
from kbctl.sources.registry import source_spec
from kbctl.store.knowledge import KnowledgeStore
from kbctl.wiring import input_window

from .conftest import Cli
from .embedders import HashingEmbedder
from .test_hybrid import openai_server  # noqa: F401 (a fixture)

HEAD = "Files › Removing trees"
FILLER = " ".join(f"word{i}" for i in range(400))  # 3,089 characters, no paragraph break


class TruncatingEmbedder(HashingEmbedder):
    """Reads the first ``reads`` characters of a text and drops the rest, as small models
    drop what is past their window."""

    def __init__(self, reads: int) -> None:
        super().__init__(dimensions=256, model="truncating")
        self.reads = reads

    def embed(self, texts: Sequence[str],
              titles: Sequence[str | None] | None = None) -> list[list[float]]:
        self.calls.append(list(texts))
        return [self._vector(t[:self.reads]) for t in texts]


def test_a_text_that_fits_is_one_window_and_a_long_one_is_read_to_its_end() -> None:
    assert split("short text", 64) == ["short text"]
    text = f"{HEAD}\n\n{FILLER}"
    windows = split(text, 128)
    assert len(windows) > 1
    assert all(len(w) <= 128 * CHARS_PER_TOKEN for w in windows)
    assert all(w.startswith(HEAD + "\n\n") for w in windows)  # each knows where it stands
    seen = {word for w in windows for word in w.split()}
    assert seen >= set(FILLER.split())  # nothing past the first window is lost
    # windows overlap, and are cut between words
    assert windows[1].split()[4] in windows[0].split()
    assert all(w.split()[-1].startswith("word") and w.split()[-1][4:].isdigit()
               for w in windows)


def test_a_long_opening_paragraph_is_not_repeated_and_windows_are_bounded() -> None:
    text = f"{FILLER}\n\nmore"
    windows = split(text, 64)
    assert windows[0].startswith("word0 ") and not windows[1].startswith("word0 ")
    assert len(split(FILLER * 20, 32)) == MAX_WINDOWS


def test_pooled_windows_are_their_normalised_mean() -> None:
    assert pool([[0.6, 0.8]]) == [0.6, 0.8]
    v = pool([[1.0, 0.0], [0.0, 1.0]])
    assert v == pytest.approx([math.sqrt(0.5), math.sqrt(0.5)])


@pytest.mark.parametrize(("model", "window"), [
    ("all-minilm-l6-v2", 256), ("sentence-transformers/all-MiniLM-L12-v2", 256),
    ("all-minilm:l6", 256), ("BAAI/bge-small-en-v1.5", 512), ("mxbai-embed-large", 512),
    ("intfloat/multilingual-e5-base", 512), ("text-embedding-3-small", None),
    ("gemini-embedding-001", None), ("nomic-embed-text", None)])
def test_known_windows(model: str, window: int | None) -> None:
    assert known_window(model) == window


def test_the_window_setting_overrides_the_models_own() -> None:
    minilm = HashingEmbedder(model="all-minilm-l6-v2")
    assert input_window(Settings(), minilm) == 256
    assert input_window(Settings(embedder_window=0), minilm) is None
    assert input_window(Settings(embedder_window=128), HashingEmbedder()) == 128
    assert input_window(Settings(), HashingEmbedder()) is None
    assert input_window(Settings(embedder_window=128), None) is None


@pytest.mark.parametrize("value", ["-1", "8", "200000", "'256'", "true"])
def test_a_bad_window_setting_names_its_line(tmp_path: Path, value: str) -> None:
    (tmp_path / "kbctl.yaml").write_text(f"namespace: docs\nembedder_window: {value}\n")
    with pytest.raises(ConfigError, match=r"kbctl\.yaml:2.*'embedder_window'"):
        resolve_settings({}, env={}, cwd=tmp_path)


def test_the_window_setting_is_read_from_the_config(tmp_path: Path) -> None:
    (tmp_path / "kbctl.yaml").write_text("embedder_window: 0\n")
    assert resolve_settings({}, env={}, cwd=tmp_path).embedder_window == 0


def test_windows_are_cached_one_by_one_and_short_texts_as_before(
        store: KnowledgeStore) -> None:
    emb = HashingEmbedder()
    long_text = f"{HEAD}\n\n{FILLER}"
    cached = CachedEmbedder(emb, store, window=128)
    [short, long] = cached.embed(["short text", long_text])
    sent = emb.calls[-1]
    assert sent[0] == "short text" and len(sent) == 1 + len(split(long_text, 128))
    assert long == pytest.approx(pool(emb.embed(split(long_text, 128))))
    assert short == emb.embed(["short text"])[0]
    # the short text's vector is the one a cache without windows holds, and the windows
    # are cached too: nothing is sent again
    again = CachedEmbedder(emb, store)
    again.embed(["short text"])
    windowed = CachedEmbedder(emb, store, window=128)
    windowed.embed([long_text])
    assert (again.provider_texts, again.cache_hits) == (0, 1)
    assert windowed.provider_texts == 0


ANSWER = ("To delete a directory with everything inside it, call rmtree: it deletes "
          "the directory and everything inside it.")
QUESTION = "delete a directory with everything inside it"


def _ingest_trees(store: KnowledgeStore, emb: HashingEmbedder, namespace: str,
                  window: int | None) -> None:
    """A long section whose answer sits past the first 600 characters, and a short one
    sharing a few of the question's words."""
    body = f"# Removing trees\n\n{FILLER[:560]}\n\n{ANSWER}\n"
    other = "# Copying\n\nCopy a file with copyfile, keeping its permission bits.\n"
    ingest(store, [source_spec("text", "trees", {"body": body, "title": "Trees"}),
                   source_spec("text", "copy", {"body": other, "title": "Copy"})],
           namespace=namespace, embedder=CachedEmbedder(emb, store, window=window))


def _nearest(store: KnowledgeStore, emb: HashingEmbedder, namespace: str) -> str:
    hits = store.search.rank(namespace, "zzzz", k=2, vector_weight=1.0,
                             query_vector=emb.embed_query(QUESTION))
    return hits[0].source_ref


def test_a_section_is_found_by_words_past_what_the_model_reads(
        store: KnowledgeStore) -> None:
    """A model that reads 600 characters never sees the answer, unless the section is
    embedded in windows."""
    emb = TruncatingEmbedder(reads=600)
    store.embedder.bind(emb.identity)
    _ingest_trees(store, emb, "whole", window=None)
    _ingest_trees(store, emb, "windows", window=150)
    assert _nearest(store, emb, "whole") == "kb://text/copy"
    assert _nearest(store, emb, "windows") == "kb://text/trees"


def test_reembed_again_gives_a_kb_built_whole_its_windows(store: KnowledgeStore) -> None:
    emb = TruncatingEmbedder(reads=600)
    store.embedder.bind(emb.identity)
    _ingest_trees(store, emb, "ns", window=None)
    assert reembed(store, emb, window=150).changed is False  # same embedder: nothing done
    assert _nearest(store, emb, "ns") == "kb://text/copy"
    report = reembed(store, emb, window=150, again=True)
    assert report.changed and report.chunks == 2
    assert store.embedder.identity() == emb.identity
    assert _nearest(store, emb, "ns") == "kb://text/trees"


def test_the_cli_embeds_in_the_configured_window_and_reembeds_again(
        cli: Cli, workdir: Path, openai_server: tuple[str, list[dict]]) -> None:  # noqa: F811
    """End to end against a loopback OpenAI-compatible server: `embedder_window` in
    kbctl.yaml shapes what is sent, and `reembed --again` re-reads a KB after it changed."""
    base, seen = openai_server
    (workdir / "kbctl.yaml").write_text("embedder_window: 40\n")
    body = f"# Notes\n\n{FILLER[:600]}\n"
    report = cli.json("ingest", "text", body, "--ref", "notes", "--allow-private-network",
                      "--embedder", "openai:fake-model@24", "--embedder-base-url", base)
    sent = [text for request in seen for text in request["input"]]
    assert report["embedded"] == len(sent) > 1
    assert all(len(text) <= 40 * CHARS_PER_TOKEN for text in sent)
    requests = len(seen)
    unchanged = cli.json("reembed", "--embedder", "openai:fake-model@24",
                         "--embedder-base-url", base)
    assert unchanged["changed"] is False and len(seen) == requests
    (workdir / "kbctl.yaml").write_text("embedder_window: 0\n")  # now sent whole
    again = cli.json("reembed", "--embedder", "openai:fake-model@24", "--again",
                     "--embedder-base-url", base)
    assert again["changed"] is True and again["chunks"] == 1
    assert [len(t) > 40 * CHARS_PER_TOKEN for t in seen[-1]["input"]] == [True]
