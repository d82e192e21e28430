"""Versioned and translated docs: one copy of each page, in one version and one language.

Docs sites publish every page once per version and language: Read the Docs
(``/en/stable/…``, ``/fr/latest/…``), ``/v2/…`` prefixes, ``/docs/3.1/…``, Docusaurus
(``/docs/intro`` is the current version, ``/docs/1.0/intro`` an older one, ``/docs/next/``
the unreleased one). A KB that takes them all fills its top results with near-duplicates.

Detection looks at the URL paths alone: a *version segment* (``latest``, ``stable``,
``next``, ``v3``, ``3.11``, ``2.x``…) among the first few path segments, a *language
segment* (a known language code) among the first two. A dimension counts only when some
page appears under two of its values (the same path with just that segment changed), so a
blog's ``/2024/`` or an ``/api/v1/`` that exists once never triggers it. Selection keeps,
for each page, the copy in the chosen version (and language) and drops the others; pages
that are not versioned at all are kept.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

from ..errors import SourceError

#: ``--version all`` keeps every version (and ``--lang all`` every language).
ALL = "all"
_NAMED_VERSIONS = frozenset({"latest", "stable", "dev", "devel", "development", "main",
                             "master", "next", "current", "nightly", "unstable", "trunk"})
_NUMBERED = re.compile(r"^v?\d+(?:\.(?:\d+|x))+$|^v\d+$", re.IGNORECASE)
_LANGUAGES = frozenset({
    "en", "fr", "de", "es", "it", "pt", "ja", "ko", "zh", "ru", "pl", "nl", "tr", "uk", "id",
    "vi", "ar", "he", "fa", "hi", "cs", "sv", "da", "fi", "nb", "no", "el", "hu", "ro", "th",
    "bn", "ca", "sk", "sl", "bg", "hr", "sr", "lt", "lv", "et", "ms", "ta", "te", "ur",
})
_LANG = re.compile(r"^([a-z]{2})(?:[-_]([a-z]{2}|hans|hant))?$", re.IGNORECASE)
VERSION_DEPTH = 4  # a version segment is one of the first four path segments
LANG_DEPTH = 2
MIN_COPIES_SHARE = 0.25  # of a version's (or language's) pages also found under another


def version_of(segment: str) -> bool:
    return segment.lower() in _NAMED_VERSIONS or _NUMBERED.match(segment) is not None


def lang_of(segment: str) -> bool:
    m = _LANG.match(segment)
    return m is not None and m.group(1).lower() in _LANGUAGES


@dataclass(frozen=True)
class _Parsed:
    url: str
    segments: tuple[str, ...]
    version_at: int | None
    lang_at: int | None

    @property
    def version(self) -> str | None:
        return None if self.version_at is None else self.segments[self.version_at]

    @property
    def lang(self) -> str | None:
        return None if self.lang_at is None else self.segments[self.lang_at].lower()

    def key(self, *, drop: int | None) -> tuple[str, ...]:
        """The page's identity with one segment (a version or a language) taken out."""
        host = urlsplit(self.url)
        rest = tuple(s for i, s in enumerate(self.segments) if i != drop)
        return (host.scheme, host.netloc, host.query, *rest)


def _parse(url: str) -> _Parsed:
    path = urlsplit(url).path
    trailing = path.endswith("/")
    segments = tuple(s for s in path.split("/") if s) + (("",) if trailing else ())
    version_at = next((i for i, s in enumerate(segments[:VERSION_DEPTH]) if version_of(s)),
                      None)
    lang_at = next((i for i, s in enumerate(segments[:LANG_DEPTH])
                    if i != version_at and lang_of(s)), None)
    if lang_at is not None and version_at is not None and lang_at > version_at + 1:
        lang_at = None  # a language is before its version (/en/3.1/), never deep after it
    return _Parsed(url, segments, version_at, lang_at)


@dataclass(frozen=True)
class Layout:
    """What a listing of URLs shows: which versions and languages pages come in."""

    versions: tuple[str | None, ...] = ()  # None: pages with no version segment
    languages: tuple[str | None, ...] = ()
    pattern: str = ""  # for the report: "/{lang}/{version}/", "/{version}/", …

    @property
    def versioned(self) -> bool:
        return len(self.versions) > 1

    @property
    def translated(self) -> bool:
        return len(self.languages) > 1


def _paired(parsed: Sequence[_Parsed], attr: str, at: str) -> list[str | None]:
    """The values of one dimension, when some page appears under two of them. A value that
    ends its URL names that page (``whatsnew/3.10/`` beside ``whatsnew/3.11/``), not a
    folder of copies: it pairs nothing. A folder named like a version holds copies only
    when at least ``MIN_COPIES_SHARE`` of its pages are found under another value too:
    pip's ``development/`` section (15 pages, one sharing a path with the site's own
    ``getting-started/``) is a part of the site, not its development version."""
    groups: dict[tuple[str, ...], set[str | None]] = defaultdict(set)
    for p in parsed:
        if _pairs(p, at):
            groups[p.key(drop=getattr(p, at))].add(getattr(p, attr))
    # the share is counted within each value of the other dimension: the current version
    # translated into five languages, its older ones in English only, pairs only its
    # English pages, a fifth of all its pages but nearly all of its English ones
    other = "lang" if attr == "version" else "version"
    pages = Counter((getattr(p, attr), getattr(p, other)) for p in parsed)
    copies = Counter((getattr(p, attr), getattr(p, other)) for p in parsed
                     if _pairs(p, at) and len(groups[p.key(drop=getattr(p, at))]) > 1)
    folders = {v for v, o in copies
               if v is None or copies[v, o] >= MIN_COPIES_SHARE * pages[v, o]}
    paired = set().union(*(values & folders for values in groups.values()
                           if len(values & folders) > 1))
    counts = Counter(getattr(p, attr) for p in parsed if getattr(p, attr) in paired)
    return sorted(counts, key=lambda v: (-counts[v], v or ""))


def detect(urls: Sequence[str]) -> Layout:
    """The versions and languages the URLs come in (empty when the site has one)."""
    parsed = [_parse(u) for u in urls]
    versions = _paired(parsed, "version", "version_at")
    languages = _paired(parsed, "lang", "lang_at")
    if len(versions) < 2 and len(languages) < 2:
        return Layout()
    return Layout(tuple(versions) if len(versions) > 1 else (),
                  tuple(languages) if len(languages) > 1 else (),
                  _pattern(parsed, bool(versions), bool(languages)))


def _pattern(parsed: Sequence[_Parsed], versioned: bool, translated: bool) -> str:
    shapes: Counter[str] = Counter()
    for p in parsed:
        marked = [i for i in (p.version_at if versioned else None,
                              p.lang_at if translated else None) if i is not None]
        if not marked:  # an unprefixed page (the default language) shows no shape
            continue
        named = [("{lang}" if translated and i == p.lang_at else
                  "{version}" if versioned and i == p.version_at else s)
                 for i, s in enumerate(p.segments[:max(marked) + 1])]
        shapes["/" + "/".join(named) + "/"] += 1
    return shapes.most_common(1)[0][0] if shapes else ""


def preferred_version(versions: Sequence[str | None]) -> str | None:
    """Without a signal from the site: ``stable``, else the unprefixed current version
    (Docusaurus), else the highest release number, else ``latest``, else the commonest."""
    present = list(versions)
    lowered = {v.lower(): v for v in present if v}
    if "stable" in lowered:
        return lowered["stable"]
    if None in present:
        return None
    numbered = [v for v in present if v and _NUMBERED.match(v)]
    if numbered:
        return max(numbered, key=_release_key)
    for name in ("latest", "current", "main", "master"):
        if name in lowered:
            return lowered[name]
    return present[0]


def preferred_language(languages: Sequence[str | None]) -> str | None:
    lowered = [v for v in languages if v]
    if "en" in lowered:
        return "en"
    en = [v for v in lowered if v.startswith("en")]
    if en:
        return en[0]
    return None if None in languages else languages[0]


def _release_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) if p.isdigit() else 10**6 for p in version.lower().lstrip("v").split("."))


def signal_of(url: str) -> tuple[str | None, str | None]:
    """The (version, language) a URL is in: where the site's root redirects, or what it
    marks canonical, names the default."""
    p = _parse(url)
    return p.version, p.lang


@dataclass
class Selection:
    """The outcome of choosing one version and one language."""

    kept: list[str]
    layout: Layout
    version: str | None = None
    lang: str | None = None
    dropped_versions: int = 0
    dropped_languages: int = 0
    reason: str = ""

    @property
    def dropped(self) -> dict[str, int]:
        out = {}
        if self.layout.versioned:
            out["other versions"] = self.dropped_versions
        if self.layout.translated:
            out["other languages"] = self.dropped_languages
        return out


def _pick(parsed: list[_Parsed], attr: str, at: str, chosen: str | None
          ) -> tuple[list[_Parsed], int]:
    groups: dict[tuple[str, ...], list[_Parsed]] = defaultdict(list)
    for p in parsed:
        groups[p.key(drop=getattr(p, at))].append(p)
    keep_ids: set[int] = set()
    for members in groups.values():
        match = [m for m in members if _fold(getattr(m, attr)) == _fold(chosen)]
        if match:
            keep_ids.add(id(match[0]))
        elif all(getattr(m, attr) is None for m in members):
            keep_ids.update(id(m) for m in members)
    kept = [p for p in parsed if id(p) in keep_ids]
    return kept, len(parsed) - len(kept)


def _fold(value: str | None) -> str | None:
    return value.lower() if value else value


def select(urls: Sequence[str], layout: Layout, *, version: str | None = None,
           lang: str | None = None, site_version: str | None = None,
           site_lang: str | None = None, site_reason: str = "") -> Selection:
    """Keep one version and one language of each page.

    ``version``/``lang`` are the operator's choice (``stable``, ``latest``, a name,
    ``all``); without one, ``site_version``/``site_lang`` (what the site's root points to)
    win, then ``preferred_version``/``preferred_language``.
    """
    selection = Selection(kept=list(urls), layout=layout)
    parsed = [_parse(u) for u in urls]
    if layout.translated and (lang or "").lower() != ALL:
        chosen_lang, why = _choose(lang, site_lang, layout.languages, preferred_language,
                                   site_reason)
        parsed, selection.dropped_languages = _pick(parsed, "lang", "lang_at", chosen_lang)
        selection.lang = chosen_lang
        selection.reason = why
    if layout.versioned and (version or "").lower() != ALL:
        chosen, why = _choose(version, site_version, layout.versions, preferred_version,
                              site_reason)
        parsed, selection.dropped_versions = _pick(parsed, "version", "version_at", chosen)
        selection.version = chosen
        # both chosen for different reasons: say each (the language's is not overwritten)
        if selection.reason and why != selection.reason:
            selection.reason = f"version: {why}; language: {selection.reason}"
        else:
            selection.reason = why
    selection.kept = [p.url for p in parsed]
    return selection


def _choose(given: str | None, from_site: str | None, values: Sequence[str | None],
            fallback: object, site_reason: str) -> tuple[str | None, str]:
    folded = {(v or "").lower(): v for v in values}
    if given:
        if given.lower() not in folded:
            shown = ", ".join(v or "(unprefixed)" for v in values)
            raise SourceError(f"'{given}' is not among the site's versions or languages "
                              f"({shown})", hint="pass one of those, or 'all' to keep every one")
        return folded[given.lower()], "chosen with a flag"
    if from_site is not None and from_site.lower() in folded:
        return folded[from_site.lower()], site_reason or "the site points there"
    return fallback(values), "no signal from the site: preferred by name"  # type: ignore[operator]


def describe(selection: Selection) -> str:
    """One report line: the layout, what was kept, why, and what was dropped."""
    layout = selection.layout
    parts = []
    if layout.versioned:
        parts.append(f"version {_shown(selection.version, layout.versions)}")
    if layout.translated:
        parts.append(f"language {_shown(selection.lang, layout.languages)}")
    if not parts:
        return ""
    dropped = ", ".join(f"{n} pages of {what}" for what, n in selection.dropped.items())
    kind = " and ".join(k for k, on in (("versioned", layout.versioned),
                                        ("translated", layout.translated)) if on)
    return (f"{kind} docs ({layout.pattern or 'by path'}): kept {' and '.join(parts)} "
            f"({selection.reason}); dropped {dropped}")


def _shown(chosen: str | None, values: Sequence[str | None]) -> str:
    name = "'(unprefixed)'" if chosen is None else f"'{chosen}'"
    others = [v or "(unprefixed)" for v in values
              if (v or "").lower() != (chosen or "").lower()]
    return f"{name} of {len(values)} (others: {', '.join(others)})" if others else name


@dataclass(frozen=True)
class Stay:
    """The one version and language a crawl keeps to: its start URL's (None: the start's
    path has no such segment), one named, or every one (``all``). A crawl meets versions
    and languages through links (a version menu, a language switcher), one layer at a
    time, so it cannot choose from a whole listing as ``select`` does."""

    version: str | None
    lang: str | None

    @classmethod
    def of(cls, start: str, *, version: str | None = None, lang: str | None = None
           ) -> Stay:
        start_version, start_lang = signal_of(start)
        return cls(version or start_version, lang or start_lang)

    def others(self, candidates: Sequence[str], known: Sequence[str]) -> dict[str, str]:
        """{candidate: "other versions" or "other languages"} for each candidate that is
        a copy, in another version or language, of a page ``known`` holds in this one (as
        ``detect`` pairs them: a value that ends its URL pairs nothing)."""
        parsed = [_parse(u) for u in known]
        out: dict[str, str] = {}
        for attr, at, chosen, reason in (("version", "version_at", self.version,
                                          "other versions"),
                                         ("lang", "lang_at", self.lang, "other languages")):
            if _fold(chosen) == ALL:
                continue
            groups: dict[tuple[str, ...], set[str | None]] = defaultdict(set)
            for p in parsed:
                if _pairs(p, at):
                    groups[p.key(drop=getattr(p, at))].add(_fold(getattr(p, attr)))
            for url in candidates:
                c = _parse(url)
                value = _fold(getattr(c, attr))
                if (url not in out and _pairs(c, at) and value != _fold(chosen)
                        and _fold(chosen) in groups.get(c.key(drop=getattr(c, at)), ())):
                    out[url] = reason
        return out


def _pairs(p: _Parsed, at: str) -> bool:
    """Whether ``p`` can pair with a copy along one dimension: not when its segment of
    that dimension ends the URL (``whatsnew/3.10/`` names a page)."""
    index = getattr(p, at)
    return index is None or any(p.segments[index + 1:])


def nothing_to_choose(where: str) -> str:
    """The note for a ``--version`` or ``--lang`` given where pages come in one copy."""
    return (f"{where}: no versions or translations of the same pages found in the listing; "
            f"--version and --lang changed nothing")


def root_url(url: str) -> str:
    """The site's root, whose redirect or canonical link names the default version."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "/", "", ""))
