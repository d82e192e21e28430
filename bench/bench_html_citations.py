"""Do citations of HTML pages land on the live page? Any folder of built HTML docs, every
chunk's ``url#anchor`` looked up in the page it cites.

Each page (Sphinx's ``_sources/`` copies are left out) is read as the ``files`` source
reads it (the same extraction a sitemap or crawl of the served site uses) and chunked as
the pipeline chunks it; a citation counts as resolved when its page exists and its anchor
(if any) is an id on it. Printed per folder: pages (redirect pages are skipped), pages
read by the generic fallback (no known content container), chunks, the share of chunks
citing a section (an anchor) and the share whose citation resolves. Default folder: the
docs site's HTML (``docs-site prepare``).

    python bench/bench_html_citations.py [DIR ...]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kbctl.errors import ExtractError  # noqa: E402
from kbctl.extract.html import extract_html  # noqa: E402
from kbctl.sources.directives import file_directives  # noqa: E402
from tests.sitebuild import check, citations  # noqa: E402

DOCS_SITE = Path.home() / ".cache" / "kbctl-docs-site" / "html"
BASE = "https://docs.example.com/"


def fallback_pages(site: Path) -> int:
    count = 0
    for path in site.rglob("*.html"):
        page = path.read_bytes()
        if "_static" in path.parts or file_directives(page).refresh is not None:
            continue  # redirect pages are not read
        try:
            count += extract_html(page, url=BASE).used_fallback
        except ExtractError:
            continue  # no text: the files source reports it as failed
    return count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dirs", nargs="*", type=Path, default=[DOCS_SITE])
    parser.add_argument("--lang", help="the language(s) to read, as `ingest files --lang` "
                        "(all: every one)")
    parser.add_argument("--ignore-noindex", action="store_true", help="read pages marked "
                        "noindex too (a site built for development marks every page)")
    args = parser.parse_args()
    print(f"{'folder':40} {'pages':>6} {'generic':>7} {'chunks':>7} {'anchored':>9} "
          f"{'resolved':>9} {'time':>7}")
    for site in args.dirs:
        if not site.is_dir():
            print(f"{str(site):40} skipped: not a folder")
            continue
        started = time.perf_counter()
        pairs, _generator, failed = citations(site, base_url=BASE, lang=args.lang,
                                              ignore_noindex=args.ignore_noindex)
        pairs = [(url, anchor) for url, anchor in pairs if "/_sources/" not in url]
        result = check(site, pairs, base_url=BASE)
        pages = len({url for url, _ in pairs})
        anchored = sum(anchor is not None for _, anchor in pairs) / max(1, len(pairs))
        seconds = time.perf_counter() - started
        print(f"{str(site)[-40:]:40} {pages:6d} {fallback_pages(site):7d} {len(pairs):7d} "
              f"{anchored:9.1%} {result.resolved_share:9.2%} {seconds:6.1f}s")
        for miss in (result.missing_pages + result.missing_anchors)[:3]:
            print(f"{'':40} missing: {miss}")
        for error in failed[:3]:
            print(f"{'':40} failed: {error}")


if __name__ == "__main__":
    main()
