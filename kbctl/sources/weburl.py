"""URL normalisation for web sources: one spelling per page, so refs and crawl sets fold.

Two links to the same page (``HTTP://Docs.Example.com:80/a#x`` and
``http://docs.example.com/a``) must become one ref, or a site would be ingested twice and
citations would disagree. Only changes that cannot alter what a server returns are made:
case of scheme and host, default ports, the fragment, an empty path, percent-escapes of
unreserved characters. And one that changes nothing worth storing: the session ids and
tracking parameters sites add to their links (``;jsessionid=``, ``?sid=``, ``utm_*``),
new on every visit, so a crawl took each visit's links for new pages and a site's
knowledge base grew with every resync.
"""

from __future__ import annotations

import posixpath
import re
from urllib.parse import quote, urljoin, urlsplit, urlunsplit

_DEFAULT_PORTS = {"http": 80, "https": 443}
# Query parameters that name a visit, not a page (matched without case; utm_ as a prefix).
_VISIT_PARAMS = frozenset({"sid", "sessionid", "session_id", "phpsessid", "jsessionid",
                           "aspsessionid", "fbclid", "gclid", "msclkid"})
_PATH_SESSION = re.compile(r";jsessionid=[^/?#]*", re.IGNORECASE)
# Longer is no link a person or a sitemap writes (the protocol allows 2,048 characters):
# refused, rather than failing in the HTTP client with the whole URL in the message.
MAX_URL_CHARS = 8192
_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")
_UNRESERVED = frozenset(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")

# WHATWG URL's percent-encode sets for the parts kbctl writes into citations (controls and
# space besides, escaped everywhere); other characters, non-ASCII ones included, stay as
# written, readable. A path keeps '#' and '?': a generator's page route may hold them.
NOT_IN_PATH = frozenset('"<>`{}')
NOT_IN_FRAGMENT = frozenset('"<>`')
NOT_IN_QUERY = frozenset('"<>`#&\'')


def escaped(part: str, unsafe: frozenset[str]) -> str:
    """``part`` with the characters a URL cannot hold there percent-encoded: a file named
    ``Getting Started.md`` was cited with a raw space, which curl and browsers reject."""
    return "".join(quote(c, safe="") if c in unsafe or c <= " " or c == "\x7f" else c
                   for c in part)


#: Extensions a crawl never follows: assets, media, archives, documents that are not pages.
_SKIPPED = (
    ".png .jpg .jpeg .gif .webp .svg .ico .bmp .tif .tiff .avif "
    ".css .js .mjs .map .json .xml .rss .atom .wasm .woff .woff2 .ttf .otf .eot "
    ".pdf .ps .epub .mobi .doc .docx .xls .xlsx .ppt .pptx .odt .ods .odp "
    ".zip .gz .tgz .bz2 .xz .zst .tar .7z .rar .whl .egg .jar .deb .rpm .dmg .exe .msi .apk "
    ".mp3 .mp4 .m4a .m4v .ogg .oga .ogv .wav .webm .mov .avi .flac .mkv "
    ".bin .iso .img .dat .csv .tsv .py .c .h .sh .txt .rst"
)
SKIPPED_EXTENSIONS = frozenset(_SKIPPED.split(" "))

MARKDOWN_EXTENSIONS = frozenset({".md", ".mdx", ".markdown"})


def _unescape_unreserved(part: str) -> str:
    def fix(m: re.Match[str]) -> str:
        char = chr(int(m.group(1), 16))
        return char if char in _UNRESERVED else "%" + m.group(1).upper()

    return _ESCAPE.sub(fix, part)


def normalize_url(url: str, base: str | None = None) -> str | None:
    """The canonical spelling of an http(s) URL (relative to ``base``), or None if it is not
    an http(s) URL at all (``mailto:``, ``javascript:``, garbage)."""
    url = url.strip()
    if len(url) > MAX_URL_CHARS:
        return None
    if base is not None:
        try:
            url = urljoin(base, url)
        except ValueError:
            return None
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS or not parts.hostname:
        return None
    host = parts.hostname.lower()
    if ":" in host:
        host = f"[{host}]"
    userinfo = parts.netloc.rpartition("@")[0]
    netloc = f"{userinfo}@{host}" if userinfo else host
    if port is not None and port != _DEFAULT_PORTS[scheme]:
        netloc = f"{netloc}:{port}"
    path = _unescape_unreserved(parts.path) or "/"
    if "/./" in path or "/../" in path or path.endswith(("/.", "/..")):
        trailing = path.endswith(("/", "/.", "/.."))
        path = posixpath.normpath(path)
        path = "/" + path.lstrip("/")
        if trailing and not path.endswith("/"):
            path += "/"
    path = _PATH_SESSION.sub("", path)
    query = _without_visit_params(_unescape_unreserved(parts.query))
    normal = urlunsplit((scheme, netloc, path, query, ""))
    return normal if len(normal) <= MAX_URL_CHARS else None


def _without_visit_params(query: str) -> str:
    if not query:
        return query
    kept = []
    for pair in query.split("&"):
        key = pair.partition("=")[0].lower()
        if key not in _VISIT_PARAMS and not key.startswith("utm_"):
            kept.append(pair)
    return "&".join(kept)


def origin(url: str) -> str:
    """``scheme://host[:port]`` of a normalised URL."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}"


def site_key(url: str) -> tuple[str, int | None]:
    """Host and non-default port: http and https of one host are one site (a crawl that
    starts on http and is redirected to https stays on its site)."""
    parts = urlsplit(url)
    port = parts.port
    scheme = parts.scheme.lower()
    return (parts.hostname or "").lower(), (None if port in (None, _DEFAULT_PORTS.get(scheme))
                                            else port)


def host_allowed(url: str, domains: frozenset[str]) -> bool:
    """True when the URL's host is one of ``domains`` or a subdomain of one."""
    host = (urlsplit(url).hostname or "").lower()
    return any(host == d or host.endswith("." + d) for d in domains)


def extension(url: str) -> str:
    """The lower-case extension of the URL's last path segment (``""`` if none)."""
    last = urlsplit(url).path.rsplit("/", 1)[-1]
    if last.endswith(".gz") and last.count(".") >= 2:  # sitemap.xml.gz, docs.tar.gz
        return "." + ".".join(last.lower().rsplit(".", 2)[-2:])
    dot = last.rfind(".")
    return last[dot:].lower() if dot > 0 else ""


def is_page_link(url: str) -> bool:
    """False for links whose extension says they are not a page (images, archives, …),
    and for Sphinx's copies of page sources (``_sources/guide.md``, linked from a
    theme's "download source" button): the same text as the page, citing a raw file."""
    ext = extension(url)
    if "/_sources/" in urlsplit(url).path:
        return False
    return not ext or "." + ext.rsplit(".", 1)[-1] not in SKIPPED_EXTENSIONS


def is_markdown_url(url: str) -> bool:
    return extension(url) in MARKDOWN_EXTENSIONS


def html_twin(url: str) -> str | None:
    """The page a markdown copy was made from, by llms.txt's convention of serving a page's
    markdown at its URL with ``.md`` appended (``page.html.md`` → ``page.html``,
    ``guide/install.md`` → ``guide/install``, ``guide/index.md`` → ``guide/``); None for
    a URL that is no such copy."""
    parts = urlsplit(url)
    stem = parts.path[:-3]
    if not parts.path.lower().endswith(".md") or stem.endswith("/") or not stem:
        return None  # no copy, or a file named ".md"
    if stem.endswith("/index"):
        stem = stem[:-len("index")]
    return urlunsplit((parts.scheme, parts.netloc, stem, "", ""))


def is_origin_only(url: str) -> bool:
    """``https://docs.example.com`` or ``…/``: a site, not a document."""
    parts = urlsplit(url)
    return parts.path in ("", "/") and not parts.query
