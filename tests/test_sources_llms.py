"""llms.txt parsing and the probe that sitemap and crawl sources make."""

from __future__ import annotations

import asyncio

from kbctl.net.client import GuardedClient
from kbctl.net.policy import NetPolicy
from kbctl.sources.llms import Probe, parse_llms_txt, probe_llms
from tests.http_server import LocalServer, html, ok

LLMS = """\
# Widget

> Widget is a library for widgets.
> It is small.

Some free text with a [link](https://elsewhere.test/not-a-page) in prose.

## Docs

- [Install](https://docs.widget.test/install.md): how to install
- [API](/api.md)
* [Config](config.md "title"): options

## Optional

- [Changelog](https://docs.widget.test/changelog.md)
- [Install again](https://docs.widget.test/install.md#top)
"""


def test_parse_title_summary_sections_and_links() -> None:
    llms = parse_llms_txt(LLMS, "https://docs.widget.test/llms.txt")
    assert llms.title == "Widget"
    assert llms.summary == "Widget is a library for widgets. It is small."
    assert [s.name for s in llms.sections] == ["Docs", "Optional"]
    docs = llms.sections[0].links
    assert [(link.name, link.url, link.notes) for link in docs] == [
        ("Install", "https://docs.widget.test/install.md", "how to install"),
        ("API", "https://docs.widget.test/api.md", ""),
        ("Config", "https://docs.widget.test/config.md", "options"),
    ]
    assert llms.sections[1].optional


def test_links_dedupe_and_optional_section_can_be_skipped() -> None:
    llms = parse_llms_txt(LLMS, "https://docs.widget.test/llms.txt")
    everything = [link.url for link in llms.links()]
    assert everything == ["https://docs.widget.test/install.md",
                          "https://docs.widget.test/api.md",
                          "https://docs.widget.test/config.md",
                          "https://docs.widget.test/changelog.md"]
    assert "https://docs.widget.test/changelog.md" not in [
        link.url for link in llms.links(skip_optional=True)]


def test_a_list_that_links_to_itself_does_not_list_itself() -> None:
    text = "# T\n\n## Docs\n\n- [Index](/llms.txt)\n- [A](/a.md)\n"
    assert [link.url for link in parse_llms_txt(text, "https://x.test/llms.txt").links()] == [
        "https://x.test/a.md"]


def test_links_inside_code_fences_are_not_pages() -> None:
    text = "# T\n\n## Docs\n\n```\n- [x](https://x.test/a)\n```\n- [y](https://x.test/b)\n"
    assert [link.url for link in parse_llms_txt(text, "https://x.test/").links()] == [
        "https://x.test/b"]


def _probe(server: LocalServer) -> object:
    async def run() -> object:
        async with GuardedClient(NetPolicy(allow_private_network=True)) as client:
            return await probe_llms(client, server.url("/").rstrip("/"))

    return asyncio.run(run())


def test_probe_finds_a_list_and_falls_through_otherwise() -> None:
    with LocalServer({"/llms.txt": ok("# S\n\n## Docs\n\n- [A](/a.md)\n")}) as server:
        found = _probe(server).found  # type: ignore[attr-defined]
        assert found is not None
        where, llms = found
        assert where == server.url("/llms.txt")
        assert [link.url for link in llms.links()] == [server.url("/a.md")]
    silent = Probe()
    with LocalServer({}) as server:  # 404: there is none
        assert _probe(server) == silent
    with LocalServer({"/llms.txt": html("<h1>Not found</h1>")}) as server:  # soft 404
        assert _probe(server) == silent
    with LocalServer({"/llms.txt": ok("# S\n\nNo links at all.\n")}) as server:
        assert _probe(server) == silent
    # a server error costs the run its retries: said, so a slow resync has its reason
    with LocalServer({"/llms.txt": html("down", status=500)}) as server:
        trouble = _probe(server).trouble  # type: ignore[attr-defined]
        assert trouble is not None and "500" in trouble


def test_headings_keep_a_trailing_hash_and_hostile_spaces_cost_linear_time() -> None:
    parsed = parse_llms_txt("# C#\n\n## Setup ##\n\n- [A](https://a.example/p): notes\n",
                            "https://a.example/")
    assert parsed.title == "C#" and [s.name for s in parsed.sections] == ["Setup"]
    spaces = " " * 200_000  # the old pattern backtracked in cubic time over such a run
    hostile = parse_llms_txt(f"# a{spaces}b\n## x{spaces}y\n- [a](u{spaces}x\n",
                             "https://a.example/")
    assert hostile.title == f"a{spaces}b" and hostile.sections[0].name == f"x{spaces}y"
