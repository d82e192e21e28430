"""`kbctl ingest url|sitemap|crawl|llms`: web sources (registered on the `ingest` app in
``kbctl.cli``)."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from ..sources.base import SourceSpec
from ..sources.crawl import CrawlOptions
from ..sources.llms import LlmsOptions
from ..sources.registry import flag_spec
from ..sources.sitemap import SitemapOptions
from .common import (
    ConfigOpt,
    DataDirOpt,
    DbOpt,
    EmbedderOpt,
    EmbedderUrlOpt,
    IgnoreNoindexOpt,
    IgnoreRobotsOpt,
    JsonOpt,
    LangOpt,
    NamespaceOpt,
    PrivateOpt,
    VersionOpt,
    guard,
)
from .ingest import merged_settings, run_ingest

DocsModeOpt = Annotated[bool, typer.Option(
    "--docs-mode/--no-docs-mode",
    help="Convert HTML to markdown that keeps headings, anchors and code blocks; "
    "--no-docs-mode extracts plain text.")]
LlmsOpt = Annotated[bool, typer.Option(
    "--llms-txt/--no-llms-txt",
    help="Ingest the pages the site's /llms.txt lists instead, when it lists any.")]
TimeoutOpt = Annotated[float | None, typer.Option(
    "--timeout", help="Seconds one request may take, end to end [default: 120].",
    show_default=False)]
MaxBytesOpt = Annotated[int | None, typer.Option(
    "--max-page-bytes", help="Largest page body accepted, after decompression "
    "[default: 10 MiB].", show_default=False)]
IncludeOpt = Annotated[list[str] | None, typer.Option(
    "--include", help="Only URLs whose path matches this glob ('/docs/*'), or regular "
    "expression after 're:' (repeatable).", show_default=False)]
ExcludeOpt = Annotated[list[str] | None, typer.Option(
    "--exclude", help="Leave out URLs whose path matches this glob ('/blog/*') or 're:' "
    "expression (repeatable).", show_default=False)]
ContentSelectorOpt = Annotated[str | None, typer.Option(
    "--content-selector", help="CSS selector of the element holding each page's content; "
    "wins over the detected container.", show_default=False)]
ExcludeSelectorOpt = Annotated[list[str] | None, typer.Option(
    "--exclude-selector", help="CSS selector of parts of the content to leave out "
    "(repeatable), e.g. '.feedback'.", show_default=False)]


def _run(ctx: typer.Context, spec: SourceSpec, json_output: bool, **flags: Any) -> None:
    run_ingest(merged_settings(ctx, **flags), [spec], json_output, ctx)


@guard
def ingest_url(
    ctx: typer.Context,
    url: Annotated[str, typer.Argument(help="The page's http(s) URL.")],
    docs_mode: DocsModeOpt = True, timeout: TimeoutOpt = None,
    max_page_bytes: MaxBytesOpt = None,
    include: IncludeOpt = None, exclude: ExcludeOpt = None,
    ignore_noindex: IgnoreNoindexOpt = False, content_selector: ContentSelectorOpt = None,
    exclude_selector: ExcludeSelectorOpt = None,
    db: DbOpt = None, data_dir: DataDirOpt = None, namespace: NamespaceOpt = None,
    config: ConfigOpt = None, embedder: EmbedderOpt = None,
    embedder_base_url: EmbedderUrlOpt = None, allow_private_network: PrivateOpt = None,
    json_output: JsonOpt = False,
) -> None:
    """Ingest one web page (HTML, markdown or plain text).

    Example: `kbctl ingest url https://docs.example.com/guide/install`
    """
    shaping = dict(include=include, exclude=exclude, ignore_noindex=ignore_noindex,
                   content_selector=content_selector, exclude_selectors=exclude_selector)
    spec = flag_spec("url", url, docs_mode=docs_mode, timeout=timeout,
                     max_page_bytes=max_page_bytes, **shaping)
    _run(ctx, spec, json_output, db_url=db, data_dir=data_dir, namespace=namespace,
         config=config, embedder=embedder, embedder_base_url=embedder_base_url,
         allow_private_network=allow_private_network)


@guard
def ingest_sitemap(
    ctx: typer.Context,
    url: Annotated[str, typer.Argument(
        help="A sitemap (.xml, .xml.gz, or an index), or a site's origin to find its "
        "sitemaps from robots.txt or /sitemap.xml.")],
    llms_txt: LlmsOpt = True,
    max_urls: Annotated[int | None, typer.Option(
        "--max-urls", help="Most pages taken from the sitemaps "
        f"[default: {SitemapOptions.default('max_urls')}].", show_default=False)] = None,
    ignore_robots: IgnoreRobotsOpt = False,
    version: VersionOpt = None, lang: LangOpt = None,
    docs_mode: DocsModeOpt = True, timeout: TimeoutOpt = None,
    max_page_bytes: MaxBytesOpt = None,
    include: IncludeOpt = None, exclude: ExcludeOpt = None,
    ignore_noindex: IgnoreNoindexOpt = False, content_selector: ContentSelectorOpt = None,
    exclude_selector: ExcludeSelectorOpt = None,
    db: DbOpt = None, data_dir: DataDirOpt = None, namespace: NamespaceOpt = None,
    config: ConfigOpt = None, embedder: EmbedderOpt = None,
    embedder_base_url: EmbedderUrlOpt = None, allow_private_network: PrivateOpt = None,
    json_output: JsonOpt = False,
) -> None:
    """Ingest every page a sitemap lists; later runs skip pages that did not change.

    Example: `kbctl ingest sitemap https://docs.example.com/sitemap.xml --exclude '/blog/*'`
    """
    shaping = dict(include=include, exclude=exclude, ignore_noindex=ignore_noindex,
                   content_selector=content_selector, exclude_selectors=exclude_selector)
    spec = flag_spec("sitemap", url, docs_mode=docs_mode, timeout=timeout,
                     max_page_bytes=max_page_bytes, llms_txt=llms_txt, max_urls=max_urls,
                     ignore_robots=ignore_robots, version=version, lang=lang, **shaping)
    _run(ctx, spec, json_output, db_url=db, data_dir=data_dir, namespace=namespace,
         config=config, embedder=embedder, embedder_base_url=embedder_base_url,
         allow_private_network=allow_private_network)


@guard
def ingest_crawl(
    ctx: typer.Context,
    url: Annotated[str, typer.Argument(help="The page the crawl starts from.")],
    max_depth: Annotated[int | None, typer.Option(
        "--max-depth", help="Links followed from the start page, at most "
        f"[default: {CrawlOptions.default('max_depth')}].", show_default=False)] = None,
    max_pages: Annotated[int | None, typer.Option(
        "--max-pages", help="Pages fetched, at most "
        f"[default: {CrawlOptions.default('max_pages')}].", show_default=False)] = None,
    allow_domain: Annotated[list[str] | None, typer.Option(
        "--allow-domain", help="Also follow links to this host and its subdomains "
        "(repeatable).", show_default=False)] = None,
    ignore_robots: IgnoreRobotsOpt = False,
    version: Annotated[str | None, typer.Option(
        "--version", help="Versioned docs: follow no link to another version of a page "
        "known in this one (a name, or all) [default: the start URL's].",
        show_default=False)] = None,
    lang: Annotated[str | None, typer.Option(
        "--lang", help="Translated docs: the same for languages (en, fr, …, or all) "
        "[default: the start URL's].", show_default=False)] = None,
    llms_txt: LlmsOpt = True,
    docs_mode: DocsModeOpt = True, timeout: TimeoutOpt = None,
    max_page_bytes: MaxBytesOpt = None,
    include: IncludeOpt = None, exclude: ExcludeOpt = None,
    ignore_noindex: IgnoreNoindexOpt = False, content_selector: ContentSelectorOpt = None,
    exclude_selector: ExcludeSelectorOpt = None,
    db: DbOpt = None, data_dir: DataDirOpt = None, namespace: NamespaceOpt = None,
    config: ConfigOpt = None, embedder: EmbedderOpt = None,
    embedder_base_url: EmbedderUrlOpt = None, allow_private_network: PrivateOpt = None,
    json_output: JsonOpt = False,
) -> None:
    """Crawl a site breadth first from a URL, staying on its site.

    Example: `kbctl ingest crawl https://docs.example.com/ --max-depth 2`
    """
    shaping = dict(include=include, exclude=exclude, ignore_noindex=ignore_noindex,
                   content_selector=content_selector, exclude_selectors=exclude_selector)
    spec = flag_spec("crawl", url, docs_mode=docs_mode, timeout=timeout,
                     max_page_bytes=max_page_bytes, llms_txt=llms_txt, max_depth=max_depth,
                     max_pages=max_pages, allow_domains=allow_domain,
                     ignore_robots=ignore_robots, version=version, lang=lang, **shaping)
    _run(ctx, spec, json_output, db_url=db, data_dir=data_dir, namespace=namespace,
         config=config, embedder=embedder, embedder_base_url=embedder_base_url,
         allow_private_network=allow_private_network)


@guard
def ingest_llms(
    ctx: typer.Context,
    url: Annotated[str, typer.Argument(help="An llms.txt URL, or a site's origin.")],
    skip_optional: Annotated[bool, typer.Option(
        "--skip-optional", help="Leave out the pages of the 'Optional' section.")] = False,
    max_urls: Annotated[int | None, typer.Option(
        "--max-urls", help="Most pages taken from the llms.txt "
        f"[default: {LlmsOptions.default('max_urls')}].", show_default=False)] = None,
    version: VersionOpt = None, lang: LangOpt = None,
    docs_mode: DocsModeOpt = True, timeout: TimeoutOpt = None,
    max_page_bytes: MaxBytesOpt = None,
    include: IncludeOpt = None, exclude: ExcludeOpt = None,
    ignore_noindex: IgnoreNoindexOpt = False, content_selector: ContentSelectorOpt = None,
    exclude_selector: ExcludeSelectorOpt = None,
    db: DbOpt = None, data_dir: DataDirOpt = None, namespace: NamespaceOpt = None,
    config: ConfigOpt = None, embedder: EmbedderOpt = None,
    embedder_base_url: EmbedderUrlOpt = None, allow_private_network: PrivateOpt = None,
    json_output: JsonOpt = False,
) -> None:
    """Ingest the pages a site's llms.txt lists.

    Example: `kbctl ingest llms https://docs.example.com/llms.txt --skip-optional`
    """
    shaping = dict(include=include, exclude=exclude, ignore_noindex=ignore_noindex,
                   content_selector=content_selector, exclude_selectors=exclude_selector)
    spec = flag_spec("llms", url, docs_mode=docs_mode, timeout=timeout,
                     max_page_bytes=max_page_bytes, skip_optional=skip_optional,
                     max_urls=max_urls, version=version, lang=lang, **shaping)
    _run(ctx, spec, json_output, db_url=db, data_dir=data_dir, namespace=namespace,
         config=config, embedder=embedder, embedder_base_url=embedder_base_url,
         allow_private_network=allow_private_network)
