"""Versioned and translated docs: detection from URL paths, and keeping one copy."""

from __future__ import annotations

import pytest

from kbctl.errors import SourceError
from kbctl.sources.versions import Stay, describe, detect, preferred_version, select, signal_of

PAGES = ("", "install.html", "guide/config.html")


def site(*prefixes: str, pages: tuple[str, ...] = PAGES, extra: tuple[str, ...] = ()
         ) -> list[str]:
    return [f"https://d.test{p}/{page}" for p in prefixes for page in pages] + [
        f"https://d.test{e}" for e in extra]


def test_read_the_docs_layout_keeps_stable_english() -> None:
    urls = site("/en/stable", "/en/latest", "/fr/stable", "/fr/latest",
                extra=("/blog/post-1.html",))
    layout = detect(urls)
    assert set(layout.versions) == {"stable", "latest"}
    assert set(layout.languages) == {"en", "fr"}
    assert layout.pattern == "/{lang}/{version}/"
    chosen = select(urls, layout)
    assert chosen.kept == site("/en/stable", extra=("/blog/post-1.html",))
    assert (chosen.version, chosen.lang) == ("stable", "en")
    assert chosen.dropped == {"other versions": 3, "other languages": 6}
    text = describe(chosen)
    assert "kept version 'stable'" in text and "language 'en'" in text
    assert "3 pages of other versions" in text


def test_v_prefixes_prefer_the_highest_release_without_a_signal() -> None:
    urls = site("/v2", "/v3", "/v10")
    layout = detect(urls)
    assert layout.pattern == "/{version}/"
    assert select(urls, layout).kept == site("/v10")


def test_docs_version_segment_and_the_site_signal_wins() -> None:
    urls = site("/docs/3.1", "/docs/3.2")
    layout = detect(urls)
    assert layout.pattern == "/docs/{version}/"
    version, _ = signal_of("https://d.test/docs/3.1/")
    chosen = select(urls, layout, site_version=version,
                    site_reason="the site's root redirects there")
    assert chosen.kept == site("/docs/3.1")
    assert "root redirects" in describe(chosen)


def test_docusaurus_current_version_is_the_unprefixed_one() -> None:
    urls = (site("/docs", pages=("intro", "api")) + site("/docs/1.0", pages=("intro", "api"))
            + site("/docs/next", pages=("intro", "api", "new-only")) + ["https://d.test/blog/x"])
    layout = detect(urls)
    assert None in layout.versions
    chosen = select(urls, layout)
    assert chosen.version is None
    assert chosen.kept == ["https://d.test/docs/intro", "https://d.test/docs/api",
                           "https://d.test/blog/x"]
    assert chosen.dropped_versions == 5


def test_a_translated_current_version_beside_english_only_old_ones_is_a_version() -> None:
    """socket.io: v4 in five languages, v3 and v2 in English only. Counted over all its
    languages, a fifth of v4's pages were found under another version, and v4 was no
    version: the default kept v3 and dropped every v4 page."""
    pages = tuple(f"p{i}" for i in range(8))
    urls = (site("/docs/v4", "/fr/docs/v4", "/es/docs/v4", "/ja/docs/v4", "/zh/docs/v4",
                 pages=pages)
            + site("/docs/v3", "/docs/v2", pages=pages))
    layout = detect(urls)
    assert set(layout.versions) == {"v4", "v3", "v2"}
    chosen = select(urls, layout)
    assert chosen.version == "v4" and chosen.kept == site("/docs/v4", pages=pages)


def test_flag_chooses_a_named_version_case_insensitively_or_all() -> None:
    urls = site("/en/stable", "/en/latest")
    layout = detect(urls)
    assert select(urls, layout, version="LATEST").kept == site("/en/latest")
    assert select(urls, layout, version="all").kept == urls


def test_an_unknown_version_is_a_source_error_naming_the_choices() -> None:
    urls = site("/v1", "/v2")
    with pytest.raises(SourceError, match=r"'v9' is not among .*v1.*v2|v2.*v1"):
        select(urls, detect(urls), version="v9")


@pytest.mark.parametrize("urls", [
    # one version only: nothing to choose
    site("/en/stable"),
    # years in a blog are not versions; two-letter folders that never pair are not languages
    [f"https://d.test/blog/{y}/post.html" for y in ("2023", "2024")],
    ["https://d.test/ui/button.html", "https://d.test/db/tables.html"],
    # an API's /v1/ that exists once is not a versioned site
    ["https://d.test/api/v1/users.html", "https://d.test/api/v1/orders.html",
     "https://d.test/guide.html"],
    # files named after versions are pages, not version folders
    ["https://d.test/whatsnew/3.11.html", "https://d.test/whatsnew/3.10.html"],
    # ... and so are folders, with directory URLs: whatsnew/3.11/ holds no copies
    ["https://d.test/whatsnew/3.11/", "https://d.test/whatsnew/3.10/", "https://d.test/x/"],
    ["https://d.test/fr/", "https://d.test/de/", "https://d.test/guide/"],
    # a section named like a version, one of whose pages shares a path with the site's
    ["https://d.test/", "https://d.test/getting-started/", "https://d.test/cli/",
     "https://d.test/development/", "https://d.test/development/getting-started/",
     "https://d.test/development/ci/", "https://d.test/development/release-process/",
     "https://d.test/development/architecture/"],
])
def test_sites_without_versions_are_left_alone(urls: list[str]) -> None:
    layout = detect(urls)
    assert not layout.versioned and not layout.translated
    assert select(urls, layout).kept == urls
    assert describe(select(urls, layout)) == ""


def test_translation_without_versions() -> None:
    urls = site("/en", "/ja") + site("/zh-cn", pages=("install.html",))
    layout = detect(urls)
    assert set(layout.languages) == {"en", "ja", "zh-cn"}
    assert not layout.versioned
    assert select(urls, layout, lang="ja").kept == site("/ja")


def test_preferred_version_order() -> None:
    assert preferred_version(["latest", "stable", "3.1"]) == "stable"
    assert preferred_version(["latest", "2.x", "3.1", "3.10"]) == "3.10"
    assert preferred_version(["latest", "dev"]) == "latest"


def test_each_choice_keeps_its_own_reason() -> None:
    urls = site("/en/stable", "/en/latest", "/fr/stable", "/fr/latest")
    chosen = select(urls, detect(urls), lang="fr")
    assert (chosen.version, chosen.lang) == ("stable", "fr")
    assert "language: chosen with a flag" in chosen.reason
    assert "version: no signal from the site" in chosen.reason
    both = select(urls, detect(urls), lang="fr", version="latest")
    assert both.reason == "chosen with a flag"


def test_a_crawl_stays_in_its_start_urls_version_and_language() -> None:
    site = "https://d.example"
    known = [f"{site}/docs/intro", f"{site}/docs/guide/setup", f"{site}/fr/docs/intro"]
    links = [f"{site}/docs/2.x/intro", f"{site}/docs/2.x/guide/setup",  # the version menu
             f"{site}/docs/2.x/",  # a version's root names a page: pairs nothing
             f"{site}/docs/2.x/only-there", f"{site}/fr/docs/intro", f"{site}/blog/v2/"]
    stay = Stay.of(f"{site}/docs/intro")
    assert stay.others(links, known + links) == {
        f"{site}/docs/2.x/intro": "other versions",
        f"{site}/docs/2.x/guide/setup": "other versions",
        f"{site}/fr/docs/intro": "other languages"}
    # started in 2.x: the unversioned copies are the others
    older = Stay.of(f"{site}/docs/2.x/intro")
    assert set(older.others([f"{site}/docs/intro", f"{site}/docs/guide/setup"],
                            known + links)) == {f"{site}/docs/intro", f"{site}/docs/guide/setup"}
    assert Stay.of(f"{site}/docs/intro", version="all", lang="ALL").others(
        links, known + links) == {}


def test_the_shape_of_a_translated_site_is_its_prefixed_language() -> None:
    urls = site("", pages=("guide/a.html", "guide/b.html", "api/c.html", "api/d.html")) + (
        site("/zh", pages=("guide/a.html",)))
    layout = detect(urls)
    assert layout.translated and layout.pattern == "/{lang}/"
