"""``text`` sources: one document given on the command line or stdin."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from ..errors import InputError
from .base import Document, Expansion, Leaf, Loaded, PreviousMeta, SourceSpec


def text_url(ref: str) -> str:
    """A ref that is already a URL cites to itself; anything else gets a ``kb://`` ref."""
    return ref if "://" in ref else f"kb://text/{ref.lstrip('/')}"


class TextSource:
    """The document's body travels in the spec's options (``body``)."""

    def expand(self, spec: SourceSpec) -> Expansion:
        if not spec.target.strip():
            raise InputError("text source: --ref must not be empty")
        url = text_url(spec.target)
        return Expansion(leaves=[Leaf(ref=url, url=url, hint=spec)])

    def load(self, leaves: Sequence[Leaf], previous: PreviousMeta) -> Iterator[Loaded]:
        for leaf in leaves:
            spec: SourceSpec = leaf.hint
            body = str(spec.options.get("body") or "")
            fmt = spec.options.get("format") or "markdown"
            title = str(spec.options.get("title") or spec.target)
            yield Loaded(leaf=leaf, document=Document(
                ref=leaf.ref, url=leaf.url, kind="text", title=title, body=body, format=fmt))
