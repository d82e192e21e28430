"""How much of a generator's own syntax is left in the text a knowledge base holds.

Each ``--project SOURCES BASE_URL`` (repeatable: a docs project checked out with its real
config, e.g. a Hugo, Jekyll, MkDocs, VitePress, Docusaurus, mdBook or Sphinx/MyST site) is
read as ``kbctl ingest files SOURCES --base-url BASE_URL`` reads it, twice, into an embedded
PostgreSQL: with each generator's dialect read as its pages show it (``Generator.markdown``),
and without (the page's markdown as written; ``.mdx`` still read as MDX). For each, the
script prints the chunks and their characters, and how many chunks hold syntax a reader of
the built page never sees, outside code blocks and code spans:

- shortcodes ``{{< >}}``/``{{% %}}``, Liquid and Jinja ``{% %}``/``{{ }}``, mdBook
  ``{{#…}}``, MkDocs snippets ``--8<--``;
- MkDocs blocks (a line opening with ``!!!``, ``???``, ``=== "`` or pymdownx.blocks'
  ``///``), ``:::`` containers,
  MyST directive fences (```` ```{name} ````) and roles (``{name}`x```);
- raw HTML: comments and tags.

With no ``--project``, the Rust book's markdown (``../shared/corpora/rust-book``) is the
one project. Without the shared corpora and projects, the script says so and stops.

    python bench/bench_dialects.py --project ~/src/hugoDocs https://gohugo.io/ \\
        --project ~/src/httpx https://www.python-httpx.org/
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import RUST_BOOK, embedded_server, temp_dir  # noqa: E402

from kbctl.extract.inline_html import code_lines, code_spans  # noqa: E402
from kbctl.extract.mdx import mdx_to_markdown  # noqa: E402
from kbctl.pipeline.ingest import ingest  # noqa: E402
from kbctl.sources.registry import source_spec  # noqa: E402
from kbctl.store.db import connect  # noqa: E402
from kbctl.store.knowledge import KnowledgeStore  # noqa: E402

RESIDUE = {
    "template tags": re.compile(r"\{\{[<%#]|\{%|\{\{ |-8<-"),
    "block markers": re.compile(r"(?m)^\s*(?:!!!|\?\?\?|=== \"|:::|```\{|///)"),
    "MyST roles": re.compile(r"\{[\w:.+-]+\}`"),
    "raw HTML": re.compile(r"<!--|</?[A-Za-z][\w-]*(?:\s[^<>]*)?/?>"),
}


def prose(text: str) -> str:
    """``text`` without its code blocks and code spans (what may show syntax as written)."""
    code = code_lines(text)
    lines = []
    for n, line in enumerate(text.split("\n")):
        if n in code:
            continue
        last, parts = 0, []
        for start, end in code_spans(line):
            parts.append(line[last:start])
            last = end
        lines.append(" ".join([*parts, line[last:]]))
    return "\n".join(lines)


@contextmanager
def dialects(on: bool) -> Iterator[None]:
    """The files source as it reads pages, with or without the generator dialects."""
    if on:
        yield
        return
    def as_written(site: object, body: str, *, fmt: str, page: object) -> str:
        return mdx_to_markdown(body) if fmt == "mdx" else body
    with mock.patch("kbctl.sources.files.page_markdown", as_written):
        yield


def measure(store: KnowledgeStore, folder: Path, base_url: str, namespace: str,
            on: bool) -> dict[str, float]:
    started = time.perf_counter()
    with dialects(on):
        report = ingest(store, [source_spec("files", str(folder), {"base_url": base_url})],
                        namespace=namespace)
    seconds = time.perf_counter() - started
    texts = [row[0] for row in store.conn.execute(
        "SELECT text FROM chunks WHERE namespace = %s", (namespace,)).fetchall()]
    row: dict[str, float] = {"pages": report.added, "chunks": len(texts),
                             "chars": sum(map(len, texts)), "seconds": seconds}
    shown = [prose(t) for t in texts]
    for name, pattern in RESIDUE.items():
        row[name] = sum(1 for s in shown if pattern.search(s))
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--project", nargs=2, action="append", metavar=("SOURCES", "BASE_URL"),
                        help="a docs project's folder and the URL it is published at")
    args = parser.parse_args()
    projects = [(Path(p).expanduser(), url) for p, url in args.project or []]
    if not projects:
        if not RUST_BOOK.exists():
            print(f"skipped: no --project, and the Rust book is not at {RUST_BOOK}")
            return
        projects = [(RUST_BOOK, "https://doc.rust-lang.org/book/")]
    columns = ["pages", "chunks", "chars", *RESIDUE, "seconds"]
    print(f"{'project':<22}{'dialects':>9}" + "".join(f"{c:>15}" for c in columns))
    with temp_dir() as tmp, embedded_server(tmp) as url:
        conn = connect(url)
        store = KnowledgeStore(conn)
        for index, (folder, base_url) in enumerate(projects):
            for on in (False, True):
                row = measure(store, folder, base_url, f"p{index}-{'on' if on else 'off'}", on)
                label = (f"{folder.parent.name}/{folder.name}" if folder.name in ("docs", "src")
                         else folder.name)
                print(f"{label[:21]:<22}{'on' if on else 'off':>9}" + "".join(
                    f"{row[c]:>15.2f}" if c == "seconds" else f"{int(row[c]):>15,}"
                    for c in columns), flush=True)
        conn.close()


if __name__ == "__main__":
    main()
