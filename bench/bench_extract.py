"""Benchmark: kbctl's HTML → markdown against trafilatura's markdown on a real docs site.

Runs both extractors on every page of the Python 3.11 docs (530 Sphinx pages, prepared by
``docs-site prepare``) in one process, page by page, so both see the same machine load.
Prints timing (total, median, p95, max), the ratio of totals, and what survived:
code fences (against the page's ``pre`` elements), heading/API anchors (``{#id}`` that exist
in the page, against the page's heading and ``dt[id]`` targets), unbalanced fences.

    .venv/bin/python bench/bench_extract.py [HTML_DIR] [--limit N]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import time
from pathlib import Path

from lxml import etree

DEFAULT_DIR = Path.home() / ".cache" / "kbctl-docs-site" / "html"
ORIGIN = "http://127.0.0.1:8765/"
_ANCHOR = re.compile(r"^#{1,6} .*\{#([^\s{}]+)\}$", re.M)
_FENCE = re.compile(r"^(`{3,}|~{3,})(.*)$")
_MAIN = etree.XPath("//div[@role='main']")
_PRE = etree.XPath(".//pre[not(ancestor::*[contains(@class, 'lineno')])]")
# Anchor targets a reader can link to: headings with an id of their own or of their
# section (Sphinx), and API entries (dt with an id).
_TARGETS = etree.XPath(
    ".//*[self::h1 or self::h2 or self::h3 or self::h4 or self::h5 or self::h6]"
    "[@id or parent::section[@id]] | .//dt[@id]"
)


def pages(root: Path) -> list[Path]:
    found = []
    for base, _dirs, files in os.walk(root):
        for name in files:
            path = Path(base) / name
            rel = path.relative_to(root).as_posix()
            if name.endswith(".html") and not rel.startswith(("_static/", "_sources/")):
                found.append(path)
    return sorted(found)


def fences(markdown: str) -> tuple[int, bool]:
    """(fenced blocks opened, whether one is left open at the end)."""
    opened, open_char, open_len = 0, "", 0
    for raw in markdown.split("\n"):
        line = raw.lstrip(" >")
        match = _FENCE.match(line)
        if not match:
            continue
        run = match.group(1)
        if not open_char:
            opened += 1
            open_char, open_len = run[0], len(run)
        elif run[0] == open_char and len(run) >= open_len and not match.group(2).strip():
            open_char, open_len = "", 0
    return opened, bool(open_char)


def summary(name: str, times: list[float]) -> str:
    ordered = sorted(times)
    p95 = ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]
    return (
        f"{name:<12} total {sum(times):8.2f} s  median {statistics.median(times) * 1000:7.2f} ms"
        f"  p95 {p95 * 1000:7.2f} ms  max {ordered[-1] * 1000:8.2f} ms"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("html_dir", nargs="?", type=Path, default=DEFAULT_DIR)
    parser.add_argument("--limit", type=int, default=0, help="only the first N pages")
    args = parser.parse_args()
    if not args.html_dir.is_dir():
        print(
            f"skipped: {args.html_dir} is absent; run ../shared/scripts/docs-site prepare",
            file=sys.stderr,
        )
        return 0

    import trafilatura

    from kbctl.errors import ExtractError
    from kbctl.extract.html import extract_html

    files = pages(args.html_dir)
    if args.limit:
        files = files[: args.limit]
    # Warm both (imports, caches, trafilatura's lazy setup) outside the timed loop.
    warm = files[0].read_bytes()
    extract_html(warm)
    trafilatura.extract(warm, output_format="markdown")

    ours_t: list[float] = []
    traf_t: list[float] = []
    pre_total = ours_fences = traf_fences = 0
    targets_total = ours_anchors = ours_bad_anchors = traf_anchors = 0
    ours_unbalanced = traf_unbalanced = 0
    ours_errors: list[str] = []
    fallbacks = 0
    for path in files:
        rel = path.relative_to(args.html_dir).as_posix()
        url = ORIGIN + rel
        data = path.read_bytes()

        start = time.perf_counter()
        try:
            page = extract_html(data, url=url)
            ours = page.markdown
            fallbacks += page.used_fallback
        except ExtractError as exc:
            ours = ""
            ours_errors.append(f"{rel}: {exc}")
        ours_t.append(time.perf_counter() - start)

        start = time.perf_counter()
        theirs = trafilatura.extract(
            data,
            url=url,
            output_format="markdown",
            include_formatting=True,
            include_links=True,
            include_tables=True,
            include_comments=False,
        ) or ""
        traf_t.append(time.perf_counter() - start)

        tree = etree.fromstring(data, etree.HTMLParser(encoding="utf-8"))
        ids = set(tree.xpath("//@id"))
        main = _MAIN(tree)
        scope = main[0] if main else tree
        pre_total += len(_PRE(scope))
        targets_total += len(_TARGETS(scope))
        for markdown, is_ours in ((ours, True), (theirs, False)):
            opened, unbalanced = fences(markdown)
            anchors = _ANCHOR.findall(markdown)
            good = sum(1 for a in anchors if a in ids)
            if is_ours:
                ours_fences += opened
                ours_unbalanced += unbalanced
                ours_anchors += good
                ours_bad_anchors += len(anchors) - good
            else:
                traf_fences += opened
                traf_unbalanced += unbalanced
                traf_anchors += good

    print(f"pages: {len(files)} from {args.html_dir}")
    print(summary("kbctl", ours_t))
    print(summary("trafilatura", traf_t))
    print(f"ratio of totals (trafilatura / kbctl): {sum(traf_t) / sum(ours_t):.1f}x")
    print(
        f"code fences kept:  kbctl {ours_fences}/{pre_total}   "
        f"trafilatura {traf_fences}/{pre_total}"
    )
    print(
        f"anchors kept:      kbctl {ours_anchors}/{targets_total} (not in page: "
        f"{ours_bad_anchors})   trafilatura {traf_anchors}/{targets_total}"
    )
    print(f"unbalanced fences: kbctl {ours_unbalanced} pages   trafilatura {traf_unbalanced} pages")
    print(f"kbctl fallbacks to trafilatura: {fallbacks}   errors: {len(ours_errors)}")
    for line in ours_errors[:10]:
        print(f"  error {line}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
