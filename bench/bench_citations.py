"""Do citations land on the live page? Sites built by real generators, checked citation by
citation, and the Python docs' reStructuredText sources against the HTML Sphinx built.

1. For each generator installed here, a real corpus is built by the generator itself
   (the Rust book with mdBook, and as MkDocs, Hugo, VitePress, Jekyll and Docusaurus
   sites; the Python docs tutorial with Sphinx html and dirhtml), its sources are
   ingested with the detected profile, and every chunk's ``url#anchor`` is looked up in
   the build output: the page must exist and the anchor must be an id on it.
2. The docs site (``docs-site prepare``): the same check for its ``_sources/*.rst.txt``
   against its HTML, the time to ingest all sources (lexical-only, embedded PostgreSQL,
   median of ``--repeat`` runs), and retrieval of the RST-built KB against a KB built
   from the same site's HTML pages, on the ranking dev set (bench/devset/python-docs.yaml;
   BM25 only, so the comparison is about the text and anchors each KB holds).

3. ``--project SOURCES BUILD BASE_URL`` (repeatable): any project you built yourself with
   its own generator, e.g. a docs folder checked out with its real config: its sources
   read as ``kbctl ingest files SOURCES --base-url BASE_URL`` reads them, every citation
   looked up in BUILD. Only these are measured when given; ``--lang all`` and
   ``--version all`` read every translation and version instead of one copy of each page.

    python bench/bench_citations.py [--repeat 3] [--skip-builds] [--skip-retrieval]
    python bench/bench_citations.py --project docs/ site/ https://docs.example.org/
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT))

from _common import KBCTL, RUST_BOOK, embedded_server, median, run_timed, temp_dir  # noqa: E402
from bench_ranking import DEVSET, load_devset  # noqa: E402

from kbctl.config import Settings  # noqa: E402
from kbctl.pipeline.query import query  # noqa: E402
from tests.sitebuild import (  # noqa: E402
    build_docusaurus,
    build_hugo,
    build_jekyll,
    build_mdbook,
    build_mkdocs,
    build_mystmd,
    build_quarto,
    build_sphinx,
    build_starlight,
    build_vitepress,
    check,
    check_mystmd,
    citations,
    tool,
    write_tree,
)

DOCS_SITE = Path.home() / ".cache" / "kbctl-docs-site" / "html"
BASE = "https://docs.example.com/"

def _row(name: str, corpus: str, result, seconds: float) -> None:
    print(f"{name:15} {corpus:28} {result.checked:7d} {result.page_share:7.1%} "
          f"{result.resolved_share:9.2%} {seconds:7.1f}s")
    for miss in (result.missing_pages + result.missing_anchors)[:3]:
        print(f"{'':15} missing: {miss}")


# Index entries in the Python 3.11 style ("object: method") stop today's Sphinx; they
# carry no text, so both the build and the ingest read the tutorial without them.
_INDEX_DIRECTIVE = re.compile(r"^([ \t]*)\.\. index::.*\n(?:\1[ \t]+\S.*\n)*", re.MULTILINE)
_FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([\w+#.-]*)")


def _portable(markdown: str) -> str:
    """The chapter in the markdown every generator reads the same way: the book's raw
    HTML blocks (to the next blank line) and comments dropped and fence info reduced to
    the language. (Python-Markdown, goldmark and Vue treat raw HTML blocks and
    ``rust,ignore`` fences differently from CommonMark; both the build and the ingest read
    this same text.)"""
    out, fence, comment, html = [], None, False, False
    for line in markdown.splitlines():
        m = _FENCE.match(line)
        if html:  # a raw HTML block runs to the next blank line
            html = bool(line.strip())
            continue
        if fence is None and not comment and m:
            fence = m.group(2)
            out.append(f"{m.group(1)}{fence}{m.group(3)}")
            continue
        if fence is not None:
            if line.strip().startswith(fence) and not line.strip().strip(fence[0]):
                fence = None
            out.append(line)
            continue
        if comment or line.lstrip().startswith("<!--"):
            comment = "-->" not in line
            continue
        if line.startswith("<"):
            html = True
            continue
        out.append(line)
    return "\n".join(out) + "\n"


def _rust_book_as(layout: str, root: Path) -> Path:
    """The Rust book's chapters laid out as an mdBook, MkDocs, Hugo, VitePress, Jekyll,
    Docusaurus, Starlight, Quarto or mystmd project."""
    if layout == "mdbook":
        shutil.copytree(RUST_BOOK, root / "src")
        write_tree(root, {"book.toml": "[book]\ntitle = 'Book'\nsrc = 'src'\n"})
        return root
    folder = root / {"mkdocs": "docs", "hugo": "content", "docusaurus": "docs",
                     "starlight": "src/content/docs"}.get(layout, "")
    front_matter = "---\n---\n" if layout == "jekyll" else ""  # Jekyll renders only these
    for chapter in sorted(RUST_BOOK.glob("*.md")):
        if chapter.name != "SUMMARY.md":
            text = _portable(chapter.read_text(encoding="utf-8"))
            if layout == "starlight":  # its schema requires a title
                title = next((line[2:] for line in text.splitlines() if line.startswith("# ")),
                             chapter.stem)
                front_matter = f"---\ntitle: {json.dumps(title)}\n---\n"
            name = chapter.with_suffix(".qmd").name if layout == "quarto" else chapter.name
            if layout == "mystmd" and name == "title-page.md":
                name = "index.md"  # the book's first page, the site's root
            write_tree(folder, {name: front_matter + text})
    if layout == "mkdocs":
        write_tree(root, {"mkdocs.yml": "site_name: Book\nmarkdown_extensions:\n"
                                        "  - toc:\n      permalink: true\n"})
    elif layout == "hugo":
        write_tree(root, {"hugo.toml": "baseURL = 'https://docs.example.com/'\n"
                                       "disableKinds = ['taxonomy', 'term', 'RSS', 'sitemap']\n"})
    elif layout == "jekyll":
        write_tree(root, {"_config.yml": "title: Book\n"})
    elif layout == "quarto":
        write_tree(root, {"_quarto.yml": "project:\n  type: website\n"})
    elif layout == "mystmd":
        write_tree(root, {"myst.yml": "version: 1\nproject:\n  title: Book\n"
                                     "site:\n  title: Book\n"})
    elif layout == "docusaurus":  # .md read as CommonMark, not MDX
        write_tree(root, {"docusaurus.config.js": (
            "module.exports = { title: 'Book', url: 'https://docs.example.com', baseUrl: '/', "
            "onBrokenLinks: 'ignore', onBrokenMarkdownLinks: 'ignore', markdown: { format: "
            "'detect' }, presets: [['classic', { blog: false, theme: {} }]] };\n")})
    elif layout == "starlight":
        write_tree(root, {"astro.config.mjs": (
            "import { defineConfig } from 'astro/config';\n"
            "import starlight from '@astrojs/starlight';\n"
            "export default defineConfig({ cacheDir: './.astro-cache', "
            "integrations: [starlight({ title: 'Book' })] });\n"),
            "src/content.config.ts": (
            "import { defineCollection } from 'astro:content';\n"
            "import { docsLoader } from '@astrojs/starlight/loaders';\n"
            "import { docsSchema } from '@astrojs/starlight/schema';\n"
            "export const collections = { docs: defineCollection("
            "{ loader: docsLoader(), schema: docsSchema() }) };\n")})
    else:
        # The book's inline HTML (``<code>Pin<&mut``) is no Vue template: read it as text.
        write_tree(root, {".vitepress/config.mts": "export default { cleanUrls: true, "
                                                   "ignoreDeadLinks: true, "
                                                   "markdown: { html: false } }\n"})
    return root


def generator_builds() -> None:
    print(f"{'generator':15} {'corpus':28} {'checked':>7} {'pages':>7} {'resolved':>9} "
          f"{'build':>8}")
    jobs = [("mdbook", "mdbook", build_mdbook, "src"),
            ("mkdocs", "mkdocs", build_mkdocs, "docs"),
            ("hugo", "hugo", build_hugo, "content"),
            ("vitepress", "vitepress", build_vitepress, ""),
            ("jekyll", "jekyll", build_jekyll, ""),
            ("docusaurus", "docusaurus", build_docusaurus, "docs"),
            ("starlight", "astro", build_starlight, ""),
            ("quarto", "quarto" if tool("quarto") else "pandoc", build_quarto, "")]
    for name, exe, build, content in jobs:
        if tool(exe) is None or not RUST_BOOK.is_dir():
            print(f"{name:15} skipped: {exe} or the Rust book is not available")
            continue
        with temp_dir() as tmp:
            project = _rust_book_as(name, tmp / "book")
            t0 = time.perf_counter()
            site = build(project)
            seconds = time.perf_counter() - t0
            pairs, detected, failed = citations(project / content, base_url=BASE)
            assert detected == name and not failed, (detected, failed[:3])
            corpus = "Rust book" if name == "mdbook" else "Rust book (portable md)"
            _row(name, corpus, check(site, pairs, BASE), seconds)
    if tool("myst") is None or not RUST_BOOK.is_dir():
        print("mystmd          skipped: myst (mystmd) or the Rust book is not available")
    else:
        with temp_dir() as tmp:
            project = _rust_book_as("mystmd", tmp / "book")
            t0 = time.perf_counter()
            built = build_mystmd(project)
            seconds = time.perf_counter() - t0
            pairs, detected, failed = citations(project, base_url=BASE)
            assert detected == "mystmd" and not failed, (detected, failed[:3])
            _row("mystmd", "Rust book (portable md)", check_mystmd(built, pairs, BASE), seconds)
    tutorial = DOCS_SITE / "_sources" / "tutorial"
    if tool("sphinx-build") is None or not tutorial.is_dir():
        print("sphinx          skipped: Sphinx or the docs site is not available")
        return
    for builder, profile in (("html", "sphinx"), ("dirhtml", "sphinx-dirhtml")):
        with temp_dir() as tmp:
            project = tmp / "docs"
            project.mkdir()
            for src in tutorial.glob("*.rst.txt"):
                text = _INDEX_DIRECTIVE.sub("", src.read_text(encoding="utf-8"))
                (project / src.name.removesuffix(".txt")).write_text(text, encoding="utf-8")
            write_tree(project, {"conf.py": "project = 'Tutorial'\nextensions = []\n"
                                            "root_doc = 'index'\n"})
            t0 = time.perf_counter()
            site = build_sphinx(project, builder)
            seconds = time.perf_counter() - t0
            pairs, detected, failed = citations(project, base_url=BASE,
                                                generator=None if builder == "html" else profile)
            assert detected == profile and not failed, (detected, failed[:3])
            _row(profile, "Python tutorial (RST)", check(site, pairs, BASE), seconds)


def docs_site(repeat: int, retrieval: bool) -> None:
    sources = DOCS_SITE / "_sources"
    if not sources.is_dir():
        print("docs site: skipped (run `../shared/scripts/docs-site prepare`)")
        return
    t0 = time.perf_counter()
    pairs, detected, failed = citations(sources, base_url=BASE, generator="sphinx")
    extract = time.perf_counter() - t0
    result = check(DOCS_SITE, pairs, BASE)
    files = sum(1 for _ in sources.rglob("*.rst.txt"))
    print(f"\ndocs site: {files} RST sources → {result.checked} citations; pages "
          f"{result.page_share:.1%}, resolved {result.resolved_share:.2%} "
          f"(read+parse+chunk {extract:.1f}s in one process); failed loads: {len(failed)}")
    for miss in (result.missing_pages + result.missing_anchors)[:5]:
        print(f"  missing: {miss}")
    with temp_dir() as tmp, embedded_server(tmp) as db:
        walls = []
        for i in range(repeat):
            wall, _, proc = run_timed([*KBCTL, "ingest", "files", str(sources), "--base-url",
                                       BASE, "--generator", "sphinx", "--db", db,
                                       "--namespace", f"rst{i}", "--embedder", "none",
                                       "--json"], cwd=tmp)
            assert proc.returncode == 0, proc.stderr[-2000:]
            report = json.loads(proc.stdout)
            walls.append(wall)
        print(f"ingest all RST sources (lexical-only, whole command): median {median(walls):.1f}s "
              f"of {repeat} (runs: {', '.join(f'{w:.1f}' for w in walls)}); "
              f"{report['added']} pages, {report['chunksWritten']} chunks")
        if not retrieval:
            return
        wall, _, proc = run_timed([*KBCTL, "ingest", "files", str(DOCS_SITE), "--base-url", BASE,
                                   "--generator", "sphinx", "--db", db, "--namespace", "html",
                                   "--embedder", "none", "--json",
                                   *[f"--exclude={p}" for p in (
                                       "_*", "genindex*", "search.html", "py-modindex.html",
                                       "*.txt", "*.js")]], cwd=tmp)
        assert proc.returncode == 0, proc.stderr[-2000:]
        print(f"HTML-built KB: {json.loads(proc.stdout)['chunksWritten']} chunks in {wall:.1f}s")
        cases = load_devset(DEVSET)
        for namespace in ("rst0", "html"):
            settings = Settings(db_url=db, namespace=namespace, embedder="none")
            hits = anchored = 0
            rr = 0.0
            for case in cases:
                top = query(settings, case.question, k=5).hits
                pages = [next((p for p in case.pages if h.url.endswith("/" + p)), None)
                         for h in top]
                rank = next((i for i, page in enumerate(pages, 1) if page), None)
                hits += rank is not None
                rr += 1 / rank if rank else 0.0
                anchored += any(page and h.anchor in case.anchors
                                for page, h in zip(pages, top, strict=True))
            n = len(cases)
            print(f"retrieval {namespace:5}: hit@5 {hits / n:.1%}, MRR@5 {rr / n:.3f}, "
                  f"anchor@5 {anchored / n:.1%} ({n} dev-set questions, BM25)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--skip-builds", action="store_true")
    parser.add_argument("--skip-retrieval", action="store_true")
    parser.add_argument("--project", nargs=3, action="append", default=[],
                        metavar=("SOURCES", "BUILD", "BASE_URL"),
                        help="check a project built by its own generator (repeatable)")
    parser.add_argument("--lang", help="with --project: the language(s) to read, as "
                        "`ingest files --lang` (all: every one)")
    parser.add_argument("--version", help="with --project: the version(s) to read")
    args = parser.parse_args()
    if args.project:
        print(f"{'generator':15} {'sources':28} {'checked':>7} {'pages':>7} {'resolved':>9}")
        for sources, build, base in args.project:
            pairs, detected, failed = citations(Path(sources), base_url=base, lang=args.lang,
                                                version=args.version)
            result = check(Path(build), pairs, base)
            print(f"{detected:15} {Path(sources).name[:28]:28} {result.checked:7d} "
                  f"{result.page_share:7.1%} {result.resolved_share:9.2%}"
                  + (f"  ({len(failed)} failed to load)" if failed else ""))
            for miss in (result.missing_pages + result.missing_anchors)[:5]:
                print(f"{'':15} missing: {miss}")
        return
    if not args.skip_builds:
        generator_builds()
    docs_site(args.repeat, not args.skip_retrieval)


if __name__ == "__main__":
    main()
