"""``url`` sources: one web page (HTML, markdown or plain text)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from .base import Expansion, Leaf, SourceKind
from .fetchpage import WebHint
from .web import WebSource, nonzero, rule_notes
from .webopts import WebOptions


@dataclass(frozen=True)
class UrlOptions(WebOptions):
    kind: ClassVar[str] = "url"
    about: ClassVar[str] = """Ingest one web page (HTML, markdown or plain text).

    Example: `kbctl ingest url https://docs.example.com/guide/install`
    """
    target_help: ClassVar[str] = "The page's http(s) URL."


class UrlSource(WebSource[UrlOptions]):
    """The page itself, unless the URL rules leave it out."""

    def listing(self, url: str) -> Expansion:
        kept, dropped = self.options.rules.split([url])
        return Expansion(leaves=[Leaf(ref=u, url=u, hint=WebHint()) for u in kept],
                         notes=rule_notes(url, dropped), dropped=nonzero(dropped))


KIND = SourceKind(UrlOptions, UrlSource)
