"""Benchmark: the work hostile inputs cost, now that every input is bounded.

1. robots.txt matching: the linear matcher against the regex translation it replaced, on
   patterns of k stars against a 2,000-character path that does not match (the regex's
   worst case). The regex is run once per k, and no more once one run passes 0.1 s.
2. The YAML alias bomb (nine levels of nine aliases): time to refuse it.
3. The line-aware JSON loader against plain ``json.loads`` on a 2,000-case suite.
4. HTML pages shaped against the converter: lists and tables nested as deep as the parser
   allows with content at every level, a heading at the bottom (each level asks whether
   it holds a heading), many headings behind empty markers, and hundreds of tab lists
   naming no panel inside one huge element. Seconds per page and MB/s.
5. Markdown files shaped against the chunker, each near the 5 MB per-file cap: one table
   of a million cells, quotes nested 100,000 deep, 29,000 headings, unclosed emphasis and
   brackets, 1.2 million list items (past the line budget: read as plain text). Seconds
   per file and the peak of Python's allocations while chunking it (``tracemalloc``: the
   process's RSS adds the interpreter, and is larger again).
6. Typo tolerance against a vocabulary shaped against it: 500,000 distinct words on one
   first letter, written through the knowledge store, then questions of 12 unknown words of
   that letter (each word is compared with at most 20,000 candidates, at most 8 words a
   question), in the knowledge base and in an agent's memory of 400 such files. Needs the
   embedded PostgreSQL; milliseconds per question.
7. Lines shaped against the patterns that backtracked and the linear scans that replaced
   them: MDX code spans (unmatched backticks), llms.txt headings and Sphinx signatures (runs
   of spaces), at growing sizes. The old pattern runs once per size, and no more once one
   run passes 1 s.
8. Pages that name one 880 KB project file again and again for a line of it, in each
   dialect that takes files in (mdBook, MkDocs snippets and include-markdown, VitePress, MDX
   partials, Jekyll, Sphinx in reStructuredText and MyST; MDX and Jekyll take the whole
   file): seconds per page, and how many times the file is taken in before the page's budget
   (``MAX_INCLUDED_CHARS``) is spent. Before the budget counted each use, the file was
   split for every mdBook link: 4,000 links took 16 s, and the time grows with each link.
9. reStructuredText of 5 MiB behind a staircase of indentation (0 to 100 levels), each in a
   fresh process: read or refused, seconds and peak RSS. docutils copies the lines each
   level holds, so past ``MAX_MEAN_DEPTH`` a file is refused before it parses (100 levels
   took 0.9 GB before).
10. Quarto and mystmd pages of about 5 MB shaped against their readers: div fences with
    and without attributes, callouts awaiting a title, shortcodes left open, heading
    attribute lists that never close, code cells of option lines, ``(label)=`` targets
    before nothing, directive fences that never close. Seconds per page.

11. Front matter shaped against the YAML loader, in files under the 5 MB cap: a flow list of
    a million items, a 4 MB description. Refused by its size before YAML builds it
    (``MAX_FRONT_MATTER_CHARS``), against what building it costs (what every page paid
    before; the description was then copied into each of the page's chunks). Seconds, one
    run each, and the peak of Python's allocations for the refusal.

Medians of repeated runs in one process, so all sides see the same machine load.

    .venv/bin/python bench/bench_hostile_inputs.py
"""

from __future__ import annotations

import json
import re
import statistics
import time
from collections.abc import Callable

from kbctl.linefile import LoadError, load_json, load_yaml
from kbctl.sources.robots import pattern_matches

ALIAS_BOMB = "a: &a [" + ",".join(['"lol"'] * 9) + "]\n" + "".join(
    f"{b}: &{b} [" + ",".join([f"*{a}"] * 9) + "]\n"
    for a, b in zip("abcdefgh", "bcdefghi", strict=True))


def median_seconds(fn: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def regex_match(pattern: str, path: str) -> bool:
    body = pattern.rstrip("$")
    regex = ".*".join(re.escape(p) for p in body.split("*"))
    return re.match(regex, path) is not None


def robots() -> None:
    path = "/" + "a" * 2000
    print("robots.txt: pattern '/*a*a…*b' (k stars) against a 2,000-char path, no match")
    print(f"{'k':>6} {'linear (µs)':>12} {'regex (µs)':>12} {'regex/linear':>13}")
    regex_alive = True
    for k in (1, 2, 3, 4, 5, 10, 100, 1000):
        pattern = "/" + "*a" * (k - 1) + "*b"
        linear = median_seconds(lambda p=pattern: pattern_matches(p, path), 51)
        regex_cell, ratio_cell = "skipped", ""
        if regex_alive:
            regex = median_seconds(lambda p=pattern: regex_match(p, path), 1)
            regex_cell = f"{regex * 1e6:12.1f}"
            ratio_cell = f"{regex / linear:13.0f}"
            regex_alive = regex < 0.1
        print(f"{k:>6} {linear * 1e6:12.1f} {regex_cell:>12} {ratio_cell:>13}")


def yaml_bomb() -> None:
    def refuse() -> None:
        try:
            load_yaml(ALIAS_BOMB)
        except LoadError:
            return
        raise AssertionError("the bomb was not refused")

    seconds = median_seconds(refuse, 21)
    print(f"\nYAML alias bomb ({len(ALIAS_BOMB)} bytes, 9**9 leaves once expanded): "
          f"refused in {seconds * 1e3:.2f} ms (median of 21)")


def json_suite() -> None:
    cases = [{"id": f"case-{i}", "question": f"how do I configure widget {i}?",
              "expect": [{"url": f"https://docs.example.com/guide/{i}#setup"}],
              "topK": 5} for i in range(2000)]
    text = json.dumps({"version": 1, "cases": cases}, indent=2)
    plain = median_seconds(lambda: json.loads(text), 21)
    lined = median_seconds(lambda: load_json(text), 21)
    print(f"\nJSON suite of 2,000 cases ({len(text) / 1024:.0f} KiB): json.loads "
          f"{plain * 1e3:.1f} ms, load_json with lines and duplicates {lined * 1e3:.1f} ms "
          f"({lined / plain:.1f}x), medians of 21")


def html_pages() -> None:
    from kbctl.extract.html import extract_html

    depth, width = 250, 1000
    pages = {
        "lists nested 250 deep": "<main>" + "<ul><li>" + "<b>x</b>" * width
        + ("<ul><li>" + "<b>x</b>" * width) * (depth - 1) + "<h2>deep</h2>"
        + "</li></ul>" * depth + "</main>",
        "tables nested 250 deep": "<main>" + ("<table><tr><td>" + "<i>y</i>" * width
                                              + "<td>z") * depth + "<h2>deep</h2>"
        + "</td></tr></table>" * depth + "</main>",
        "20k headings behind markers": "<main>" + "".join(
            f"<span id='m{i}'></span><h2>h{i}</h2><p>p</p>" for i in range(20000)) + "</main>",
        # tab lists that name no panel, in one element of 600,000 more (each once walked it)
        "400 tab lists, 600k elements": "<main>" + (
            "<div><ul role='tablist'><li role='tab'>a</li><li role='tab'>b</li></ul></div>"
            + "<div role='tabpanel'><p>x</p></div>" * 3) * 400 + "<p>w</p>" * 600_000
        + "</main>",
    }
    print("\nHTML pages shaped against the converter (median of 3):")
    for name, html in pages.items():
        data = html.encode()
        seconds = median_seconds(lambda data=data: extract_html(data), 3)
        print(f"  {name:30} {len(data) / 1e6:4.1f} MB {seconds:6.2f} s "
              f"{len(data) / 1e6 / seconds:6.1f} MB/s")


def markdown_files() -> None:
    import tracemalloc

    from kbctl.chunk.markdown import chunk_markdown

    cols = 5000
    files = {
        "a table of 1M cells": "# T\n\n| " + " | ".join(f"c{i}" for i in range(cols))
        + " |\n|" + "---|" * cols + "\n" + ("| x " * cols + "|\n") * 200,
        "quotes nested 100k deep": "# Q\n\n" + ">" * 100000 + " deep\n",
        "29k headings, 58k lines": "".join(f"{'#' * (1 + i % 6)} H{i}\ntext {i}\n"
                                           for i in range(29000)),
        "unclosed emphasis": "# E\n\n" + "*a " * 1_500_000 + "\n",
        "unclosed brackets": "# K\n\n" + "[" * 2_000_000 + "x\n",
        "1.2M list items": "# L\n\n" + "- a\n" * 1_200_000,
    }
    print("\nmarkdown files shaped against the chunker (median of 3; peak of one run):")
    for name, text in files.items():
        seconds = median_seconds(lambda text=text: chunk_markdown(text), 3)
        tracemalloc.start()
        try:
            chunk_markdown(text)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        size = len(text.encode()) / 1e6
        print(f"  {name:30} {size:4.1f} MB {seconds:6.2f} s {peak / 1e6:7.1f} MB peak")


def typo_vocabulary() -> None:
    import random
    import string

    from _common import embedded_server, temp_dir

    from kbctl.memory.paths import MemoryScope
    from kbctl.memory.postgres import PostgresMemoryBackend
    from kbctl.store.db import connect
    from kbctl.store.knowledge import KnowledgeStore
    from kbctl.store.records import ChunkRecord, SourceRecord
    from kbctl.store.search import Query

    rng = random.Random(6)

    def word() -> str:
        return "a" + "".join(rng.choice(string.ascii_lowercase)
                             for _ in range(rng.randint(7, 9)))

    with temp_dir() as data, embedded_server(data) as url:
        store = KnowledgeStore(connect(url))
        pages = [(SourceRecord(namespace="v", ref=f"p{i}", kind="text", url=f"kb://p{i}",
                               title="", content_hash="h"),
                  [ChunkRecord(0, " ".join(word() for _ in range(1000)), {})])
                 for i in range(500)]
        for start in range(0, len(pages), 50):
            store.documents.replace_many("v", pages[start:start + 50])
        vocabulary = store.conn.execute(
            "SELECT count(*) FROM lexeme_stats WHERE namespace = 'v'").fetchone()[0]
        questions = [" ".join(word() for _ in range(12)) for _ in range(7)]
        times = []
        for q in questions:
            started = time.perf_counter()
            store.search(Query("v", q))  # its spelling, then its ranking
            times.append(time.perf_counter() - started)
        memory = PostgresMemoryBackend(store.conn, None)
        scope = MemoryScope("bot")
        for i, (_, chunks) in enumerate(pages[:400]):
            memory.put(scope, f"memory/agent/f{i}.md", chunks[0].text)
        recalls = []
        for q in questions:
            started = time.perf_counter()
            memory.search(scope, q)
            recalls.append(time.perf_counter() - started)
        store.conn.close()
    print(f"\ntypo tolerance, {vocabulary:,} words on one letter, questions of 12 unknown "
          f"words: median {statistics.median(times) * 1000:.0f} ms a search (of 7); "
          f"memory search over 400 files of them: {statistics.median(recalls) * 1000:.0f} ms")


# The patterns section 7 measures against, as they were before their linear replacements.
OLD_CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")
OLD_LLMS_HEADING = re.compile(r"^#\s+(.+?)\s*#*\s*$")
OLD_SIGNATURE = re.compile(
    r"^\s*([\w.]*\.)?(\w+)\s*(?:\[[^\]]*\])?\s*(?:\(.*\)(?:\s*->.*)?)?\s*$", re.DOTALL)


def replaced_patterns() -> None:
    from kbctl.extract.inline_html import code_spans
    from kbctl.extract.rst_sphinx import written_name
    from kbctl.sources.llms import parse_llms_txt

    shapes = [
        ("MDX code spans, n backticks then n letters", lambda n: "x " + "`" * n + "a" * n,
         lambda line: list(OLD_CODE_SPAN.finditer(line)), code_spans),
        ("llms.txt heading, '# a', n spaces, 'b'", lambda n: "# a" + " " * n + "b",
         OLD_LLMS_HEADING.match, lambda line: parse_llms_txt(line, "https://a.example/")),
        ("Sphinx signature, 'x', n spaces, '}'", lambda n: "x" + " " * n + "}",
         OLD_SIGNATURE.match, written_name),
    ]
    print("\nlines shaped against the patterns replaced by linear scans (seconds):")
    print(f"  {'shape':44} {'n':>6} {'linear':>9} {'old pattern':>12}")
    for name, make, old, new in shapes:
        old_alive = True
        for n in (250, 500, 1000, 2000, 4000, 100_000):
            line = make(n)
            linear = median_seconds(lambda line=line, new=new: new(line), 5)
            old_cell = "skipped"
            if old_alive:
                took = median_seconds(lambda line=line, old=old: old(line), 1)
                old_cell = f"{took:12.4f}"
                old_alive = took < 1
            print(f"  {name:44} {n:>6} {linear:9.5f} {old_cell:>12}")


def repeated_includes() -> None:
    import tempfile
    from pathlib import Path

    from kbctl.extract.jekyll_includes import liquid_with_includes
    from kbctl.extract.mdbook_links import expand_links
    from kbctl.extract.mdx_imports import expand_partials
    from kbctl.extract.mkdocs_includes import expand_include_markdown
    from kbctl.extract.myst import myst_to_markdown
    from kbctl.extract.quarto import quarto_to_markdown
    from kbctl.extract.rst import rst_to_markdown
    from kbctl.extract.snippets import expand_snippets
    from kbctl.extract.sphinx_includes import SphinxIncludes
    from kbctl.extract.vitepress_includes import expand_includes

    line = "let x = 1;"
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "big.rs").write_text((line + "\n") * 80_000)
        page = root / "page.md"

        def sphinx() -> SphinxIncludes:
            return SphinxIncludes(source_dir=root, project=root, reads=[])

        cases: list[tuple[str, int, Callable[[int], str]]] = [
            ("mdBook {{#include big.rs:1}}", 100_000, lambda n: expand_links(
                "{{#include big.rs:1}}\n" * n, page=page, project=root)),
            ('MkDocs --8<-- "big.rs:1:1"', 100_000, lambda n: expand_snippets(
                '--8<-- "big.rs:1:1"\n' * n, project=root)),
            ("MkDocs {% include-markdown 'big.md' end=… %}", 100_000,
             lambda n: expand_include_markdown(
                 "{% include-markdown 'big.md' end='\\n' %}\n" * n, page=page, project=root)),
            ("VitePress <!--@include: ./big.rs{1,1}-->", 100_000, lambda n: expand_includes(
                "<!--@include: ./big.rs{1,1}-->\n" * n, page=page, source_root=root,
                project=root)),
            ("MDX <Big /> of an imported big.md", 100_000, lambda n: expand_partials(
                "import Big from './big.md';\n" + "<Big />\n" * n, page=page, project=root)),
            ("Jekyll {% include_relative big.rs %}", 100_000, lambda n: liquid_with_includes(
                "{% include_relative big.rs %}\n" * n, page=page, includes_dir=root,
                project=root)),
            ("Sphinx .. literalinclude:: big.rs", 10_000, lambda n: rst_to_markdown(
                ".. literalinclude:: big.rs\n   :lines: 1\n\n" * n,
                source=str(root / "page.rst"), includes=sphinx()).markdown),
            ("MyST {literalinclude} big.rs", 10_000, lambda n: myst_to_markdown(
                "```{literalinclude} big.rs\n:lines: 1\n```\n" * n, path=page,
                includes=sphinx())),
            ("Quarto {{< include big.md >}}", 100_000, lambda n: quarto_to_markdown(
                "{{< include big.md >}}\n" * n, page=page, project=root)),
        ]
        (root / "big.md").write_text((line + "\n") * 80_000)
        print("\npages naming an 880 KB file again and again for one line of it:")
        print(f"  {'dialect':44} {'names':>8} {'seconds':>8} {'taken in':>9}")
        for name, names, run in cases:
            took = median_seconds(lambda run=run, names=names: run(names), 3)
            shown = run(names).count(line)
            whole = name.startswith(("MDX", "Jekyll", "Quarto"))
            times = shown // 80_000 if whole else shown
            print(f"  {name:44} {names:>8,} {took:8.2f} {times:>9}")


_NESTED_RST = """
import resource, sys, time
from kbctl.errors import ExtractError
from kbctl.extract.rst import rst_to_markdown
depth = int(sys.argv[1])
head = "Title\\n=====\\n\\n" + "".join(" " * i + "p\\n\\n" for i in range(depth))
line = " " * depth + "w w\\n"
text = head + line * ((5 * 1024 * 1024 - len(head)) // len(line))
start = time.perf_counter()
try:
    rst_to_markdown(text)
    outcome = "read"
except ExtractError:
    outcome = "refused"
seconds = time.perf_counter() - start
print(outcome, seconds, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def nested_rst() -> None:
    """5 MiB of reStructuredText behind a staircase of indentation, each in a fresh
    process, as docutils copies the lines each level holds."""
    import subprocess
    import sys

    from kbctl.extract.rst import MAX_MEAN_DEPTH

    print(f"\nreStructuredText of 5 MiB nested deep (refused past a mean depth of "
          f"{MAX_MEAN_DEPTH}; peak RSS of the process):")
    for depth in (0, 4, MAX_MEAN_DEPTH, 30, 100):
        out = subprocess.run([sys.executable, "-c", _NESTED_RST, str(depth)], check=True,
                             capture_output=True, text=True).stdout.split()
        print(f"  {depth:>4} levels  {out[0]:8} {float(out[1]):6.2f} s "
              f"{int(out[2]) / 1024:7.0f} MB")


def quarto_and_mystmd_pages() -> None:
    from kbctl.extract.mystmd import mystmd_headings
    from kbctl.extract.quarto import quarto_to_markdown

    size = 5 * 1024 * 1024

    def page(unit: str) -> str:
        return unit * (size // len(unit))

    cases: list[tuple[str, Callable[[str], str], str]] = [
        ("Quarto: ::: {.callout-note} lines", quarto_to_markdown, page("::: {.callout-note}\n")),
        ("Quarto: ::: and : runs on one line", quarto_to_markdown, ":::" + " :" * (size // 2)),
        ("Quarto: unclosed {{< on one line", quarto_to_markdown, "{{<" + " " * size),
        ("Quarto: # heading {#a #a … never closed", quarto_to_markdown,
         "# h {" + "#a " * (size // 3)),
        ("Quarto: a cell of #| lines", quarto_to_markdown,
         "```{python}\n" + page("#| echo: true\n")),
        ("Quarto: tabset headings", quarto_to_markdown,
         ":::: {.panel-tabset}\n" + page("## t\n")),
        ("mystmd: (label)= lines", mystmd_headings, page("(a)=\n")),
        ("mystmd: directive fences never closed", mystmd_headings, page("````{note}\n")),
        ("mystmd: headings with {#id}", mystmd_headings, page("## x {#y}\n")),
    ]
    print("\nQuarto and mystmd pages of about 5 MB:")
    print(f"  {'page':44} {'MB':>6} {'seconds':>8}")
    for name, read, text in cases:
        took = median_seconds(lambda read=read, text=text: read(text), 3)
        print(f"  {name:44} {len(text) / 1e6:6.1f} {took:8.2f}")


def front_matter() -> None:
    import tracemalloc

    from kbctl import frontmatter
    from kbctl.errors import ExtractError

    pages = {"a flow list of 1M items": "---\nl: [" + "1," * 1_000_000 + "1]\n---\n# P\n",
             "a 4 MB description": "---\ndescription: " + "word " * 800_000 + "\n---\n# P\n"}

    def measured(fn: Callable[[], object], *, traced: bool) -> tuple[float, float]:
        """Seconds and peak; the peak is traced only where tracing does not swamp the time
        (it slows YAML's building tenfold)."""
        if traced:
            tracemalloc.start()
        started = time.perf_counter()
        try:
            fn()
        except ExtractError:
            pass
        finally:
            seconds = time.perf_counter() - started
            peak = tracemalloc.get_traced_memory()[1] if traced else 0
            if traced:
                tracemalloc.stop()
        return seconds, peak

    print("\nfront matter shaped against the YAML loader (one run each):")
    for name, text in pages.items():
        block = text[4:text.index("\n---\n", 4) + 1]
        refused_s, refused_peak = measured(
            lambda text=text: frontmatter.split_front_matter(text), traced=True)
        built_s, _ = measured(lambda block=block: frontmatter._load_yaml(block), traced=False)
        print(f"  {name:26} {len(text.encode()) / 1e6:4.1f} MB  refused by size "
              f"{refused_s * 1e3:7.2f} ms ({refused_peak / 1e6:.1f} MB peak);  "
              f"built by YAML {built_s:6.2f} s")


if __name__ == "__main__":
    robots()
    yaml_bomb()
    json_suite()
    html_pages()
    markdown_files()
    typo_vocabulary()
    replaced_patterns()
    repeated_includes()
    nested_rst()
    quarto_and_mystmd_pages()
    front_matter()
