"""Typo tolerance on the Python docs dev set: the same questions as typed in a hurry.

Every question of bench/devset/python-docs.yaml is asked as written, then with typing
errors (seeded, so every run asks the same): in ``one typo`` one word per question, in
``every word`` each word of five letters or more. An error is what fingers do on a QWERTY
keyboard: a letter dropped, doubled, swapped with its neighbour, or replaced or joined by
a key next to it, anywhere in the word, the first letter included.

Each set runs with typo tolerance on and off (``retrieve(..., typo_tolerance=False)``), in
lexical mode and, with ``--dense``, in hybrid mode, against the KBs bench_ranking.py built
(run it first). Printed: hit@1, hit@5, MRR@10, anchor@5 and nDCG@10 per row, and how many
words were corrected and how many of those back to the word that was meant.

    python bench/bench_typos.py --lexical bench/out/kb-lexical
    python bench/bench_typos.py --lexical bench/out/kb-lexical --dense bench/out/kb-dense
"""

from __future__ import annotations

import argparse
import os
import random
import re
import sys
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_ranking import (  # noqa: E402
    DEFAULT_EMBED_URL,
    DEVSET,
    OUT,
    Case,
    MemoEmbedder,
    Runner,
    load_devset,
    measure,
    summarise,
    table,
)

SEED = 20261201
_ROWS = ("qwertyuiop", "asdfghjkl", "zxcvbnm")
_NEIGHBOURS = {
    key: "".join(_ROWS[r2][c2] for r2 in (r - 1, r, r + 1) for c2 in (c - 1, c, c + 1)
                 if 0 <= r2 < 3 and 0 <= c2 < len(_ROWS[r2]) and (r2, c2) != (r, c))
    for r, row in enumerate(_ROWS) for c, key in enumerate(row)}
_WORD = re.compile(r"\b[a-z]{5,}\b")


def mistype(word: str, rng: random.Random) -> str:
    """One typing error in ``word``: a different word of letters, never the same one."""
    while True:
        i = rng.randrange(len(word))
        kind = rng.choice(("drop", "double", "swap", "near", "extra"))
        near = _NEIGHBOURS.get(word[i], word[i])
        if kind == "drop":
            typed = word[:i] + word[i + 1:]
        elif kind == "double":
            typed = word[:i] + word[i] + word[i:]
        elif kind == "swap" and i + 1 < len(word):
            typed = word[:i] + word[i + 1] + word[i] + word[i + 2:]
        elif kind == "near":
            typed = word[:i] + rng.choice(near) + word[i + 1:]
        else:
            typed = word[:i] + rng.choice(near) + word[i:]
        if typed != word:
            return typed


def mistyped(question: str, rng: random.Random, *, every_word: bool) -> str:
    """``question`` with one of its words of five letters or more mistyped, or each."""
    words = list(_WORD.finditer(question))
    if not words:
        return question
    for m in reversed(words if every_word else [rng.choice(words)]):
        question = question[:m.start()] + mistype(m.group(0), rng) + question[m.end():]
    return question


def with_typos(cases: Sequence[Case], *, every_word: bool, seed: int = SEED) -> list[Case]:
    """The cases with their questions mistyped (see the module docstring)."""
    rng = random.Random(seed)
    return [Case(c.id, c.kind, mistyped(c.question, rng, every_word=every_word), c.pages,
                 c.anchors) for c in cases]


def corrections(cases: Sequence[Case], originals: Sequence[Case], store, ns: str
                ) -> tuple[int, int]:
    """How many words were corrected, and how many of them to the stem of the word that
    was meant (the original question's word at the same place)."""
    from kbctl.store import lexical
    from kbctl.store.search import Query

    total = right = 0
    for case, original in zip(cases, originals, strict=True):
        fixed = store.search(Query(ns, case.question)).spelling.corrected
        total += len(fixed)
        if fixed:
            meant = set(store.conn.execute(
                "SELECT lexeme FROM unnest(to_tsvector(%s::regconfig, %s))",
                (lexical.TEXT_CONFIG, lexical.analyse(original.question).text)
            ).fetchall())
            right += sum(1 for stem in fixed.values() if (stem,) in meant)
    return total, right


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lexical", type=Path, default=OUT / "kb-lexical")
    parser.add_argument("--dense", type=Path, help="also measure hybrid mode on this KB")
    parser.add_argument("--namespace", default="default")
    parser.add_argument("--devset", type=Path, default=DEVSET)
    args = parser.parse_args()

    from kbctl.config import Settings
    from kbctl.pipeline.query import retrieve
    from kbctl.wiring import open_store, resolve_embedder

    clean = load_devset(args.devset)
    sets = [("as written", clean), ("one typo", with_typos(clean, every_word=False)),
            ("every word", with_typos(clean, every_word=True))]
    ns = args.namespace
    print(f"dev set: {len(clean)} questions ({args.devset.name}), seed {SEED}")
    for label, cases in sets[1:]:
        print(f"  {label}, e.g. {cases[0].question!r}")
    with ExitStack() as stack:
        stores = [("lexical", stack.enter_context(open_store(
            Settings(data_dir=args.lexical, namespace=ns))), None)]
        if args.dense:
            dense = stack.enter_context(open_store(Settings(data_dir=args.dense, namespace=ns)))
            url = os.environ.get("KBCTL_EMBEDDER_BASE_URL", DEFAULT_EMBED_URL)
            inner = resolve_embedder(dense, Settings(embedder_base_url=url,
                                                     allow_private_network=True), writing=False)
            assert inner is not None, "the dense KB has no embedder"
            emb = MemoEmbedder(inner)
            for _, cases in sets:  # embedded before timing: every row asks them again
                for case in cases:
                    emb.embed_query(case.question)
            stores.append(("hybrid", dense, emb))
        rows = []
        for mode, store, emb in stores:
            for label, cases in sets:
                for tolerant in (False, True):
                    run: Runner = _runner(retrieve, store, ns, emb, tolerant)
                    judged, ms = measure(cases, run)
                    rows.append((f"{mode}, {label}, tolerance {'on' if tolerant else 'off'}",
                                 summarise(judged), ms))
        table(rows)
        print()
        lexical_store = stores[0][1]
        for label, cases in sets:
            total, right = corrections(cases, clean, lexical_store, ns)
            print(f"{label}: {total} words corrected, {right} of them to the word meant")


def _runner(retrieve: Callable, store, ns: str, emb, tolerant: bool) -> Runner:
    from kbctl.config import RetrievalSettings

    settings = RetrievalSettings(namespace=ns, k=10, typo_tolerance=tolerant)
    return lambda q: retrieve(store, q, settings, embedder=emb)


if __name__ == "__main__":
    main()
