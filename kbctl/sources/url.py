"""``url`` sources: one web page (HTML, markdown or plain text)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from .base import SourceKind
from .webopts import WebOptions, web_adapter


@dataclass(frozen=True)
class UrlOptions(WebOptions):
    kind: ClassVar[str] = "url"


KIND = SourceKind(UrlOptions, web_adapter)
