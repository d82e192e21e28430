"""``text`` sources: one document given on the command line or stdin."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import ClassVar

from ..errors import InputError
from .base import Document, Expansion, Leaf, Loaded, PreviousMeta, SourceKind, SourceSpec
from .options import SourceOptions, choice, option, text


def text_url(ref: str) -> str:
    """A ref that is already a URL cites to itself; anything else gets a ``kb://`` ref."""
    return ref if "://" in ref else f"kb://text/{ref.lstrip('/')}"


@dataclass(frozen=True)
class TextOptions(SourceOptions):
    """The document itself travels in the options, so a resync can ingest it again."""

    kind: ClassVar[str] = "text"
    body: str = option("", text)
    title: str | None = option(None, text)
    format: str = option("markdown", choice("markdown", "text"))


class TextSource:
    """The document's body travels in the spec's options (``body``)."""

    def expand(self, spec: SourceSpec) -> Expansion:
        if not spec.target.strip():
            raise InputError("text source: --ref must not be empty")
        options: TextOptions = spec.options  # type: ignore[assignment]
        if not options.body.strip():
            raise InputError(f"text source {spec.target}: the text is empty",
                             hint="pass the text as an argument, or pipe it to "
                                  "`kbctl ingest text - --ref REF`")
        url = text_url(spec.target)
        return Expansion(leaves=[Leaf(ref=url, url=url, hint=spec)])

    def load(self, leaves: Sequence[Leaf], previous: PreviousMeta) -> Iterator[Loaded]:
        for leaf in leaves:
            spec: SourceSpec = leaf.hint
            options: TextOptions = spec.options  # type: ignore[assignment]
            yield Loaded(leaf=leaf, document=Document(
                ref=leaf.ref, url=leaf.url, kind="text", title=options.title or spec.target,
                body=options.body, format=options.format))


KIND = SourceKind(TextOptions, lambda spec, **context: TextSource())
