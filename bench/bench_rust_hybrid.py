"""Every retrieval mode on the Rust book with a real small dense model: a second corpus
for the ranking choices tuned on the Python docs dev set (bench_ranking.py).

The book is ingested with ``kbctl ingest files`` and the OpenAI-compatible provider against
the shared all-MiniLM-L6-v2 server (``../shared/scripts/embed-server``, KBCTL_EMBEDDER_BASE_URL,
default http://127.0.0.1:8799/v1; ~950 chunks, about a minute), then the 60 hand-written
questions of bench/suites/rust-book.yaml run in-process per mode (lexical and hybrid also
without the built-in synonyms): hit@5 and MRR@5, where a
hit is a result whose source matches the case's ``sourceIncludes``. The last rows ask each
question with one typing error (bench_typos.py's, same seed), typo tolerance off and on.

    python bench/bench_rust_hybrid.py [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
from contextlib import ExitStack
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import KBCTL, ROOT, RUST_BOOK, require, temp_dir  # noqa: E402
from bench_typos import SEED, mistyped  # noqa: E402

SUITE = ROOT / "bench" / "suites" / "rust-book.yaml"
MODEL = "all-minilm-l6-v2"
MODES: list[tuple[str, dict[str, Any]]] = [
    ("lexical (no embedder)", {"lexical": True}),
    # without the built-in synonyms (kbctl.store.thesaurus), lexical and hybrid
    ("lexical, no synonyms", {"lexical": True, "thesaurus": "none"}),
    ("vector only (w=1.0)", {"vector_weight": 1.0}),
    ("hybrid (default w=0.7)", {}),
    ("hybrid, no synonyms", {"thesaurus": "none"}),
    ("hybrid w=0.5", {"vector_weight": 0.5}),
    ("hybrid rrf", {"fusion": "rrf"}),
    # The same questions with one typing error each (bench_typos.py's), typo tolerance
    # off and on.
    ("lexical, typo, off", {"lexical": True, "typo": True, "typo_tolerance": False}),
    ("lexical, typo, on", {"lexical": True, "typo": True}),
    ("hybrid, typo, off", {"typo": True, "typo_tolerance": False}),
    ("hybrid, typo, on", {"typo": True}),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", type=Path, help="build the KB here and keep it; a later "
                        "run with the same --keep only queries")
    parser.add_argument("--patient", action="store_true", help="build in-process with one "
                        "request in flight and a long timeout (a loaded machine's model server "
                        "outlasts the CLI's)")
    args = parser.parse_args()
    require(RUST_BOOK, "the Rust book corpus")
    base_url = os.environ.get("KBCTL_EMBEDDER_BASE_URL", "http://127.0.0.1:8799/v1")

    from kbctl.config import RetrievalSettings, Settings
    from kbctl.linefile import load_yaml
    from kbctl.pipeline.query import retrieve
    from kbctl.store.thesaurus import NONE as NO_SYNONYMS
    from kbctl.wiring import open_store, resolve_embedder

    cases = load_yaml(SUITE.read_text(encoding="utf-8"))["cases"]
    with ExitStack() as stack:
        data = args.keep or stack.enter_context(temp_dir())
        data.mkdir(parents=True, exist_ok=True)
        data.chmod(0o755)  # the embedded server runs as another user when we are root
        if not (data / "built").exists():
            if args.patient:
                build_patiently(data, base_url)
            else:
                proc = subprocess.run(
                    [*KBCTL, "ingest", "files", str(RUST_BOOK), "--data-dir", str(data),
                     "--embedder", f"openai:{MODEL}", "--embedder-base-url", base_url,
                     "--allow-private-network", "--json"],
                     capture_output=True, text=True, check=False)
                if proc.returncode != 0:
                    raise SystemExit(f"ingest failed ({proc.returncode}): {proc.stderr}")
                report = json.loads(proc.stdout)
                print(f"ingest: {report['added']} files, {report['chunksWritten']} chunks, "
                      f"{report['embedded']} embedded")
            (data / "built").write_text("ok\n")
        store = stack.enter_context(open_store(Settings(data_dir=data)))
        embedder = resolve_embedder(store, Settings(embedder_base_url=base_url,
                                                    allow_private_network=True), writing=False)
        assert embedder is not None, "the KB has no embedder"
        rng = random.Random(SEED)
        typed = {c["question"]: mistyped(c["question"], rng, every_word=False) for c in cases}
        asked = list(dict.fromkeys(q for c in cases for q in (c["question"],
                                                               typed[c["question"]])))
        if args.patient:  # the OpenAI-compatible provider embeds questions as documents
            from kbctl.embed.openai import OpenAIEmbedder

            patient = OpenAIEmbedder(MODEL, base_url=base_url, concurrency=1, timeout=900.0)
            vectors = dict(zip(asked, patient.embed(asked), strict=True))
        else:
            vectors = {q: embedder.embed_query(q) for q in asked}

        class Remembered:
            identity, dimensions = embedder.identity, embedder.dimensions

            def embed_query(self, text: str) -> list[float]:
                return vectors[text]

        print(f"{len(cases)} questions ({SUITE.relative_to(ROOT)}), top 5")
        print(f"{'mode':<24}{'hit@5':>8}{'MRR@5':>8}")
        for label, options in MODES:
            options = dict(options)
            lexical = options.pop("lexical", False)
            typo = options.pop("typo", False)
            if options.pop("thesaurus", None) == "none":
                options["thesaurus"] = NO_SYNONYMS
            hits, reciprocal = 0, 0.0
            for case in cases:
                want = case["expect"]["sourceIncludes"]
                want = [want] if isinstance(want, str) else want
                question = typed[case["question"]] if typo else case["question"]
                result = retrieve(store, question,
                                  RetrievalSettings(namespace="default", k=5, **options),
                                  embedder=None if lexical else Remembered())
                rank = next((h.rank for h in result.hits
                             if any(w in h.source_ref for w in want)), None)
                hits += rank is not None
                reciprocal += 1 / rank if rank else 0.0
            print(f"{label:<24}{hits / len(cases):>8.3f}{reciprocal / len(cases):>8.3f}")


def build_patiently(data: Path, base_url: str) -> None:
    """What ``kbctl ingest files`` runs, with bench_ranking.py's patient embedder."""
    from kbctl.config import Settings
    from kbctl.embed.openai import OpenAIEmbedder
    from kbctl.pipeline.cached_embedder import CachedEmbedder
    from kbctl.pipeline.ingest import ingest
    from kbctl.sources.registry import source_spec
    from kbctl.wiring import input_window, open_store

    settings = Settings(data_dir=data)
    with open_store(settings) as store:
        emb = OpenAIEmbedder(MODEL, base_url=base_url, concurrency=1, timeout=900.0)
        store.embedder.bind(emb.identity)
        cached = CachedEmbedder(emb, store, window=input_window(settings, emb))
        with store.locks.namespace("default"):
            report = ingest(store, [source_spec("files", str(RUST_BOOK), {})],
                            namespace="default", embedder=cached)
        store.embedder.ensure_vector_index()
    print(f"ingest: {report.added} files, {report.chunks_written} chunks, "
          f"{cached.provider_texts} embedded")


if __name__ == "__main__":
    main()
