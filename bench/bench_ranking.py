"""Ranking quality on the Python docs site: the dev set, every retrieval mode, one KB.

The 530-page Python 3.11 docs site is served on 127.0.0.1 and ingested through the real
pipeline (`kbctl ingest sitemap`) twice, once per data directory under bench/out/ (git
ignored) and kept between runs:

- ``kb-dense``: embedded with the OpenAI-compatible provider against the shared
  all-MiniLM-L6-v2 server (KBCTL_EMBEDDER_BASE_URL, default http://127.0.0.1:8799/v1);
  ~20k chunks take ~15 minutes on two cores the first time. Re-ingests (``--rebuild``,
  into a fresh namespace) reuse the KB's embedding cache, so they cost no embedding.
- ``kb-lexical``: no embedder (the no-key default), for the lexical figures.

Then every question of bench/devset/python-docs.yaml runs in-process through
``kbctl.pipeline.query.retrieve`` in each mode, and the script prints hit@1, hit@5,
MRR@10, anchor@5 and nDCG@10 per mode (lexical and hybrid also without the built-in
synonyms), a vector-weight sweep, per-kind hit@5, the
median query time, and what the top score says (answered questions against the dev set's
off-topic ones) (``--lexical-only``: the lexical row, and hit@k down to k=50).
Definitions (a hit is a result whose page is one of the case's pages):

- hit@k: a right page among the first k results; MRR@10: 1/rank of the first right page.
- anchor@5: a result among the first 5 cites one of the case's answering sections exactly.
- nDCG@10 (graded): the first result of each right page gains 1, or 2 when it cites an
  answering section; a later result of that page citing one adds the missing 1. The ideal
  list puts every right page first, at an answering section.

    python bench/bench_ranking.py                      # build once, then measure
    python bench/bench_ranking.py --rerank tei:MODEL --rerank-base-url URL
"""

from __future__ import annotations

import argparse
import math
import os
import re
import statistics
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, replace
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import ROOT, require  # noqa: E402

SITE = Path.home() / ".cache" / "kbctl-docs-site" / "html"
DEVSET = ROOT / "bench" / "devset" / "python-docs.yaml"
OUT = ROOT / "bench" / "out"
EMBEDDER_MODEL = "all-minilm-l6-v2"
DEFAULT_EMBED_URL = "http://127.0.0.1:8799/v1"
K = 10
WEIGHTS = (0.0, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)


@dataclass(frozen=True)
class Case:
    id: str
    kind: str
    question: str
    pages: tuple[str, ...]
    anchors: frozenset[str]


def load_devset(path: Path = DEVSET) -> list[Case]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    return [Case(c["id"], c["kind"], c["question"], tuple(c["pages"]), frozenset(c["anchors"]))
            for c in data["cases"]]


def load_off_topic(path: Path = DEVSET) -> list[str]:
    """Questions the docs do not answer (the dev set's ``offTopic``)."""
    return list(yaml.safe_load(path.read_text(encoding="utf-8")).get("offTopic", []))


def calibration(label: str, cases: Sequence[Case], off_topic: Sequence[str],
                run: Runner) -> None:
    """What the top score says: answered questions against off-topic ones. A minScore
    between the answered p10 and the off-topic median keeps most answers, drops most
    non-answers."""
    def top(question: str) -> float:
        hits = run(question).hits
        return hits[0].score if hits else 0.0

    answered = sorted(top(c.question) for c in cases)
    off = sorted(top(q) for q in off_topic)
    if not answered or not off:
        return
    print(f"{label:<24} answered p10 {answered[len(answered) // 10]:.2f} median "
          f"{statistics.median(answered):.2f}   off-topic median {statistics.median(off):.2f} "
          f"max {off[-1]:.2f}")


# --- metrics ---------------------------------------------------------------------------------


def page_of(url: str) -> str:
    """The site-relative path of a result's URL (origin and fragment dropped)."""
    return urlsplit(url).path.lstrip("/")


@dataclass(frozen=True)
class Judged:
    """One case's results reduced to what the metrics need: (page, anchor) per rank."""

    case: Case
    results: tuple[tuple[str, str | None], ...]

    def first_right_rank(self) -> int | None:
        for i, (page, _a) in enumerate(self.results[:K], start=1):
            if page in self.case.pages:
                return i
        return None

    def anchor_within(self, k: int) -> bool:
        return any(p in self.case.pages and a in self.case.anchors
                   for p, a in self.results[:k])

    def ndcg(self, k: int = K) -> float:
        gains: list[float] = []
        credited: dict[str, int] = {}  # page -> gain credited so far (1 or 2)
        for page, anchor in self.results[:k]:
            right_anchor = anchor in self.case.anchors
            if page not in self.case.pages:
                gains.append(0.0)
            elif page not in credited:
                credited[page] = 2 if right_anchor else 1
                gains.append(float(credited[page]))
            elif right_anchor and credited[page] == 1:
                credited[page] = 2
                gains.append(1.0)
            else:
                gains.append(0.0)
        dcg = sum(g / math.log2(i + 2) for i, g in enumerate(gains))
        ideal = sum(2.0 / math.log2(i + 2) for i in range(min(k, len(self.case.pages))))
        return dcg / ideal


def summarise(judged: Sequence[Judged]) -> dict[str, float]:
    n = len(judged)
    ranks = [j.first_right_rank() for j in judged]
    return {
        "hit@1": sum(1 for r in ranks if r == 1) / n,
        "hit@5": sum(1 for r in ranks if r is not None and r <= 5) / n,
        "MRR@10": sum(1 / r for r in ranks if r is not None) / n,
        "anchor@5": sum(1 for j in judged if j.anchor_within(5)) / n,
        "nDCG@10": sum(j.ndcg() for j in judged) / n,
    }


METRICS = ("hit@1", "hit@5", "MRR@10", "anchor@5", "nDCG@10")


# --- building the KBs ------------------------------------------------------------------------


class _SiteHandler(SimpleHTTPRequestHandler):
    sitemap = b""

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass

    def do_GET(self) -> None:
        if self.path == "/sitemap.xml":
            self.send_response(200)
            self.send_header("Content-Type", "application/xml")
            self.send_header("Content-Length", str(len(self.sitemap)))
            self.end_headers()
            self.wfile.write(self.sitemap)
            return
        super().do_GET()


@contextmanager
def serve_site(port: int, pages: Sequence[str] | None = None) -> Iterator[str]:
    """The docs site on 127.0.0.1:port with a sitemap for that origin, written in memory
    (the shared site directory is left alone: others may serve it on other ports).
    ``pages`` limits the sitemap to those site paths, in that order."""
    origin = f"http://127.0.0.1:{port}"
    lines = (SITE / "sitemap.template").read_text(encoding="utf-8").splitlines()
    if pages is not None:
        entries = {m.group(1): line for line in lines
                   if (m := re.search(r"<loc>BASE/([^<]+)</loc>", line))}
        urls = [entries[p] for p in pages if p in entries]
        lines = [*lines[:2], *urls, lines[-1]]
    sitemap = "\n".join(lines).replace("BASE/", origin + "/").encode()
    handler = type("Handler", (_SiteHandler,), {"sitemap": sitemap})
    server = ThreadingHTTPServer(("127.0.0.1", port), partial(handler, directory=str(SITE)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"{origin}/sitemap.xml"
    finally:
        server.shutdown()
        server.server_close()


def subset_pages(cases: Sequence[Case], distractors: Sequence[str]) -> list[str]:
    """The dev set's answer pages first, then every page under the distractor prefixes."""
    wanted = list(dict.fromkeys(p for c in cases for p in c.pages))
    every = sorted(p.relative_to(SITE).as_posix() for p in SITE.rglob("*.html"))
    extra = [p for p in every if p.startswith(tuple(distractors)) and p not in wanted]
    return wanted + extra


def built(data: Path, namespace: str) -> bool:
    return (data / f"built-{namespace}").exists()


class RoundRobinEmbedder:
    """One model behind several servers (``--embed-urls``): a call's texts are cut into
    batches sent to all servers at once. Every server must run the same model: the vectors
    are the same whichever answers."""

    BATCH = 64

    def __init__(self, members: Sequence[Any]) -> None:
        self.members = list(members)
        self._pool = ThreadPoolExecutor(max_workers=len(self.members))

    @property
    def identity(self) -> Any:
        return self.members[0].identity

    @property
    def dimensions(self) -> int:
        return int(self.members[0].dimensions)

    def embed(self, texts: Sequence[str], titles: Sequence[str | None] | None = None
              ) -> list[list[float]]:
        batches = [list(texts[i:i + self.BATCH]) for i in range(0, len(texts), self.BATCH)]
        jobs = [self._pool.submit(self.members[i % len(self.members)].embed, batch)
                for i, batch in enumerate(batches)]
        return [vector for job in jobs for vector in job.result()]

    def embed_query(self, text: str) -> list[float]:
        return self.members[0].embed_query(text)


def build(data: Path, namespace: str, embed_urls: Sequence[str], sitemap: str) -> None:
    """Ingest the site through the real pipeline (what ``kbctl ingest sitemap`` runs).

    The embedder is the one ``--embedder openai:all-minilm-l6-v2`` creates, but with one
    request in flight per writer and a long timeout: the shared model server encodes one
    request at a time, and on a loaded machine four queued 64-text batches outlast the
    default timeout (the abandoned requests are still encoded, so retries only pile up).
    """
    from kbctl.config import Settings
    from kbctl.embed.openai import OpenAIEmbedder
    from kbctl.pipeline.cached_embedder import CachedEmbedder
    from kbctl.pipeline.ingest import ingest
    from kbctl.sources.registry import source_spec
    from kbctl.wiring import input_window, open_store, open_writers

    data.mkdir(parents=True, exist_ok=True)
    data.chmod(0o755)  # the embedded server runs as another user when we are root
    settings = Settings(data_dir=data, namespace=namespace, allow_private_network=True)
    spec = source_spec("sitemap", sitemap, {"llms_txt": False})
    label = f"{data.name} ({'openai:' + EMBEDDER_MODEL if embed_urls else 'no embedder'})"
    print(f"building {label}, namespace {namespace}, from {sitemap}", flush=True)
    t0 = time.perf_counter()
    with open_store(settings) as store:
        cached = None
        if embed_urls:
            emb = RoundRobinEmbedder([OpenAIEmbedder(EMBEDDER_MODEL, base_url=url,
                                                     concurrency=1, timeout=900.0,
                                                     allow_private_network=True)
                                      for url in embed_urls])
            store.embedder.bind(emb.identity)
            # long chunks in windows MiniLM reads whole, as `kbctl ingest` embeds them
            cached = CachedEmbedder(emb, store, window=input_window(settings, emb))
        with store.locks.namespace(namespace), open_writers(settings) as writers:
            report = ingest(store, [spec], namespace=namespace, embedder=cached,
                            writer_stores=writers,
                            adapter_context={"allow_private_network": True})
        if cached is not None:
            store.embedder.ensure_vector_index()
    if report.failed:
        sys.exit(f"ingest failed for {report.failed} pages: {report.errors[:3]}")
    (data / f"built-{namespace}").write_text(
        f"{report.added} pages, {report.chunks_written} chunks, "
        f"{cached.provider_texts if cached else 0} embedded\n")
    print(f"  {report.added + report.updated} pages, {report.chunks_written} chunks in "
          f"{time.perf_counter() - t0:.0f}s", flush=True)


# --- measuring -------------------------------------------------------------------------------


class MemoEmbedder:
    """The KB's embedder with query vectors remembered: every mode asks the same questions."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.identity = inner.identity
        self.dimensions = inner.dimensions
        self._memo: dict[str, list[float]] = {}

    def embed(self, texts: Sequence[str], titles: Sequence[str | None] | None = None
              ) -> list[list[float]]:
        return self.inner.embed(texts, titles)

    def embed_query(self, text: str) -> list[float]:
        if text not in self._memo:
            self._memo[text] = self.inner.embed_query(text)
        return self._memo[text]


Runner = Callable[[str], Any]


def measure(cases: Sequence[Case], run: Runner) -> tuple[list[Judged], float]:
    judged, times = [], []
    for case in cases:
        t0 = time.perf_counter()
        result = run(case.question)
        times.append((time.perf_counter() - t0) * 1000)
        judged.append(Judged(case, tuple((page_of(h.url), h.anchor) for h in result.hits)))
    return judged, statistics.median(times)


def table(rows: list[tuple[str, dict[str, float], float]]) -> None:
    width = max(len(r[0]) for r in rows) + 2
    print(f"{'mode':<{width}}" + "".join(f"{m:>10}" for m in METRICS) + f"{'p50 ms':>10}")
    for label, s, ms in rows:
        print(f"{label:<{width}}" + "".join(f"{s[m]:>10.3f}" for m in METRICS) + f"{ms:>10.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=18700, help="where to serve the site "
                        "while building")
    parser.add_argument("--dense", type=Path, default=OUT / "kb-dense")
    parser.add_argument("--lexical", type=Path, default=OUT / "kb-lexical")
    parser.add_argument("--namespace", default="default", help="a new name re-ingests "
                        "(the embedding cache makes that free of embedding)")
    parser.add_argument("--devset", type=Path, default=DEVSET)
    parser.add_argument("--embed-urls", help="comma-separated base URLs of servers running "
                        "the same model, shared round-robin while building (default: "
                        "KBCTL_EMBEDDER_BASE_URL)")
    parser.add_argument("--subset", metavar="PREFIXES", help="build and measure on a part "
                        "of the site only: the dev set's answer pages plus every page under "
                        "these comma-separated path prefixes (e.g. c-api/), in namespace "
                        "'subset' unless --namespace names another (for machines too busy "
                        "to embed all ~20k chunks)")
    parser.add_argument("--rerank", help="also measure hybrid + this reranker (SPEC)")
    parser.add_argument("--rerank-base-url")
    parser.add_argument("--only", help="comma-separated case kinds to keep")
    parser.add_argument("--lexical-only", action="store_true", help="measure (and build) "
                        "only the lexical KB")
    args = parser.parse_args()
    require(SITE / "sitemap.template", "the docs site (shared/scripts/docs-site prepare)")

    from kbctl.config import RetrievalSettings, Settings
    from kbctl.pipeline.query import retrieve
    from kbctl.store.thesaurus import NONE as NO_SYNONYMS
    from kbctl.wiring import open_store, resolve_embedder

    embed_url = os.environ.get("KBCTL_EMBEDDER_BASE_URL", DEFAULT_EMBED_URL)
    embed_urls = args.embed_urls.split(",") if args.embed_urls else [embed_url]
    kbs = [(args.lexical, [])] + ([] if args.lexical_only else [(args.dense, embed_urls)])
    cases = load_devset(args.devset)
    pages = None
    if args.subset is not None:
        args.namespace = "subset" if args.namespace == "default" else args.namespace
        pages = subset_pages(cases, [p for p in args.subset.split(",") if p])
        print(f"subset: {len(pages)} pages (the dev set's answer pages, then pages under "
              f"{args.subset})")
    todo = [(d, e) for d, e in kbs if not built(d, args.namespace)]
    if todo:
        with serve_site(args.port, pages) as sitemap:
            for data, urls in todo:
                build(data, args.namespace, urls, sitemap)

    if args.only:
        kinds = set(args.only.split(","))
        cases = [c for c in cases if c.kind in kinds]
    print(f"dev set: {len(cases)} questions ({args.devset.resolve().relative_to(ROOT)}), "
          f"k={K}")

    with ExitStack() as stack:
        ns = args.namespace
        lexical = stack.enter_context(open_store(Settings(data_dir=args.lexical,
                                                          namespace=ns)))
        at_k = RetrievalSettings(namespace=ns, k=K)
        lexical_mode: tuple[str, Runner] = (
            "lexical (no embedder)", lambda q: retrieve(lexical, q, at_k))
        # what the built-in synonyms (kbctl.store.thesaurus) add to lexical ranking
        no_synonyms = replace(at_k, thesaurus=NO_SYNONYMS)
        plain_mode: tuple[str, Runner] = (
            "lexical, no synonyms", lambda q: retrieve(lexical, q, no_synonyms))
        off_topic = load_off_topic(args.devset)
        if args.lexical_only:
            judged, ms = measure(cases, lexical_mode[1])
            plain, plain_ms = measure(cases, plain_mode[1])
            table([(lexical_mode[0], summarise(judged), ms),
                   (plain_mode[0], summarise(plain), plain_ms)])
            by_kind({lexical_mode[0]: judged, plain_mode[0]: plain})
            deepest = replace(at_k, k=DEPTHS[-1])
            depth(cases, lambda q: retrieve(lexical, q, deepest))
            if off_topic:  # a held-out set asks none
                print(f"\ntop score, answered vs {len(off_topic)} off-topic questions:")
                calibration(lexical_mode[0], cases, off_topic, lexical_mode[1])
            return
        dense = stack.enter_context(open_store(Settings(data_dir=args.dense, namespace=ns)))
        inner = resolve_embedder(dense, Settings(embedder_base_url=embed_url,
                                                 allow_private_network=True), writing=False)
        assert inner is not None, "the dense KB has no embedder"
        emb = MemoEmbedder(inner)
        for case in cases:  # one embedding request per question, shared by every mode
            emb.embed_query(case.question)
        modes: list[tuple[str, Runner]] = [
            lexical_mode,
            plain_mode,
            ("vector only (w=1.0)", lambda q: retrieve(
                dense, q, replace(at_k, vector_weight=1.0), embedder=emb)),
            ("hybrid (default w=0.7)", lambda q: retrieve(dense, q, at_k, embedder=emb)),
            ("hybrid, no synonyms", lambda q: retrieve(dense, q, no_synonyms, embedder=emb)),
            ("hybrid rrf", lambda q: retrieve(
                dense, q, replace(at_k, fusion="rrf"), embedder=emb)),
        ]
        rows = []
        results: dict[str, list[Judged]] = {}
        for label, run in modes:
            judged, ms = measure(cases, run)
            results[label] = judged
            rows.append((label, summarise(judged), ms))
        table(rows)

        print("\nvector-weight sweep (weighted fusion, same KB):")
        sweep = []
        for w in WEIGHTS:
            judged, ms = measure(cases, lambda q, w=w: retrieve(
                dense, q, replace(at_k, vector_weight=w), embedder=emb))
            sweep.append((f"w={w:.1f}", summarise(judged), ms))
        table(sweep)
        by_kind(results)
        if off_topic:
            print(f"\ntop score, answered vs {len(off_topic)} off-topic questions:")
            for label, run in modes:
                calibration(label, cases, off_topic, run)


DEPTHS = (5, 10, 20, 50)


def depth(cases: Sequence[Case], run: Runner) -> None:
    """How deep a mode's right pages lie: hit@k for k past 5. What lies within k can be
    lifted into the top 5 by a better ranking of the same candidates (a reranker); what
    lies deeper cannot."""
    ranks = []
    for case in cases:
        pages = [page_of(h.url) for h in run(case.question).hits]
        ranks.append(next((i for i, p in enumerate(pages, 1) if p in case.pages), None))
    cells = "  ".join(f"hit@{k} {sum(1 for r in ranks if r and r <= k) / len(cases):.3f}"
                      for k in DEPTHS)
    print(f"\nlexical, how deep the right page lies: {cells}")


def by_kind(results: dict[str, list[Judged]]) -> None:
    print("\nhit@5 by kind:")
    kinds = sorted({j.case.kind for judged in results.values() for j in judged})
    print(f"{'mode':<24}" + "".join(f"{k:>12}" for k in kinds))
    for label, judged in results.items():
        cells = []
        for kind in kinds:
            sub = [j for j in judged if j.case.kind == kind]
            cells.append(f"{summarise(sub)['hit@5']:>7.2f} n={len(sub):<3}")
        print(f"{label:<24}" + "".join(cells))


if __name__ == "__main__":
    main()
