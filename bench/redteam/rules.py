"""Operator rules and selectors written to hang or crash a run: catastrophic and
oversized regular expressions, rule lists past the caps, CSS selectors deep enough to
blow the stack, and one that costs quadratic work on a large page."""

from __future__ import annotations

from pathlib import Path

from redteam._kit import kbctl, page, refused, serving

CLASS = "operator rules and selectors"
PRIVATE = "--allow-private-network"


def _flag(flag: str, value: str, needle: str, label: str) -> tuple[str, str, object]:
    def run(workdir: Path) -> tuple[bool, str]:
        ran = kbctl(workdir, "ingest", "crawl", "http://127.0.0.1:18319/", flag, value, PRIVATE)
        return refused(ran, needle)
    return CLASS, label, run


def catastrophic_regex(workdir: Path) -> tuple[bool, str]:
    """``^/(a+)+$`` against long paths: exponential on a backtracking engine."""
    paths = [f"/{'a' * 3000}{i}!" for i in range(200)]
    with serving(18310) as site:
        locs = "".join(f"<url><loc>{site.url(p)}</loc></url>" for p in paths)
        site.routes["/sitemap.xml"] = lambda _h: (200, {"Content-Type": "application/xml"}, (
            '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
            f"{locs}</urlset>").encode())
        ran = kbctl(workdir, "ingest", "sitemap", site.url("/sitemap.xml"), "--no-llms-txt",
                    "--include", "re:^/(a+)+$", PRIVATE, "--json")
    fetched = [h for h in site.hits if h.path.startswith("/aaa")]
    held = ran.code is not None and "Traceback" not in ran.output and not fetched
    return held, f"exit {ran.code}; pages fetched: {len(fetched)} (none match the rule)"


def yaml_rules(count: int, needle: str) -> object:
    def run(workdir: Path) -> tuple[bool, str]:
        globs = "".join(f"      - /section-{i}/*\n" for i in range(count))
        (workdir / "kbctl.yaml").write_text(
            "namespace: site\nsources:\n  - kind: sitemap\n"
            "    target: http://127.0.0.1:18319/sitemap.xml\n"
            f"    allow_private_network: true\n    include:\n{globs}")
        return refused(kbctl(workdir, "ingest"), needle)
    return run


def costly_selector(workdir: Path) -> tuple[bool, str]:
    """``* * *`` on a 3.7 MB page: the page fails naming the selector, the run ends."""
    body = ("<html><body><main><h1>Big</h1>" + "<div>" * 200 + "deep" + "</div>" * 200
            + "<p>lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod "
              "tempor incididunt ut labore et dolore.</p>" * 30_000 + "</main></body></html>")
    with serving(18311, {"/big.html": page(body)}) as site:
        ran = kbctl(workdir, "ingest", "url", site.url("/big.html"), "--exclude-selector",
                    "* * *", PRIVATE, "--json")
    held = ran.code == 1 and "element visits" in ran.output and "Traceback" not in ran.output
    return held, f"exit {ran.code}; page of {len(body) / 1e6:.1f} MB"


ATTACKS = [
    _flag("--include", "re:a{4294967296}", "repeats {4294967296} times",
          "--include re:a{4294967296}"),
    _flag("--exclude", "re:" + "(" * 498 + "a" + ")" * 498, "nests groups 498 deep",
          "--exclude 498 nested groups"),
    _flag("--include", "re:(a)\\1", "not a valid regular expression",
          "--include with a backreference"),
    _flag("--exclude", "re:(?=a)b", "not a valid regular expression",
          "--exclude with a lookahead"),
    _flag("--content-selector", "a " * 2000, "--content-selector",
          "--content-selector of 2,000 steps"),
    _flag("--content-selector", ":is(" * 1000 + "a" + ")" * 1000, "--content-selector",
          "--content-selector :is( x1000"),
    _flag("--exclude-selector", ":not(" * 40 + "a" + ")" * 40, "nests parentheses",
          "--exclude-selector :not( x40"),
    _flag("--exclude-selector", " > ".join(["div"] * 60), "has 60 steps",
          "--exclude-selector of 60 child steps"),
    (CLASS, "re:^/(a+)+$ against 200 URLs of 3,000 characters", catastrophic_regex),
    (CLASS, "150,000 include globs in kbctl.yaml", yaml_rules(150_000, "kbctl.yaml:")),
    (CLASS, "1,001 include globs in kbctl.yaml", yaml_rules(1_001, "kbctl.yaml:6")),
    (CLASS, "--exclude-selector '* * *' on a 3.7 MB page", costly_selector),
]
