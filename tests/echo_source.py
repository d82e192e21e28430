"""A tiny source kind, as a new kind is written: one module with its options and adapter.

``echo`` ingests its target's text, ``times`` times over. Registering it is one line in
``kbctl.sources.registry.KINDS`` (the tests add it there with monkeypatch); its command,
``kbctl ingest echo``, is then made from ``about``, ``target_help`` and each option's help.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import ClassVar

from kbctl.sources.base import (
    Document,
    Expansion,
    Leaf,
    Loaded,
    PreviousMeta,
    SourceKind,
    SourceSpec,
)
from kbctl.sources.options import SourceOptions, integer, option


@dataclass(frozen=True)
class EchoOptions(SourceOptions):
    kind: ClassVar[str] = "echo"
    about: ClassVar[str] = """Ingest a word, repeated.

    Example: `kbctl ingest echo hello --times 3`
    """
    target_help: ClassVar[str] = "The word."
    times: int = option(1, integer(1), help="How many times [default: {default}].")


class EchoSource:
    def __init__(self, spec: SourceSpec) -> None:
        self.options: EchoOptions = spec.options  # type: ignore[assignment]

    def expand(self, spec: SourceSpec) -> Expansion:
        ref = f"kb://echo/{spec.target}"
        return Expansion(leaves=[Leaf(ref=ref, url=ref, hint=spec.target)])

    def load(self, leaves: Sequence[Leaf], previous: PreviousMeta) -> Iterator[Loaded]:
        for leaf in leaves:
            body = " ".join([str(leaf.hint)] * self.options.times)
            yield Loaded(leaf=leaf, document=Document(
                ref=leaf.ref, url=leaf.url, kind="echo", title=str(leaf.hint), body=body,
                format="text"))


KIND = SourceKind(EchoOptions, lambda spec, **context: EchoSource(spec))


class FlakySource(EchoSource):
    """A kind with a bug: ``list`` fails while listing, ``read`` after its first page."""

    def expand(self, spec: SourceSpec) -> Expansion:
        if spec.target == "list":
            raise RuntimeError("listing bug")
        refs = [f"kb://flaky/{spec.target}/{i}" for i in range(3)]
        return Expansion(leaves=[Leaf(ref=ref, url=ref, hint=ref) for ref in refs])

    def load(self, leaves: Sequence[Leaf], previous: PreviousMeta) -> Iterator[Loaded]:
        for i, loaded in enumerate(super().load(leaves, previous)):
            if i == 1 and "/read/" in loaded.leaf.ref:
                raise RuntimeError("reading bug")
            yield loaded


@dataclass(frozen=True)
class FlakyOptions(EchoOptions):
    kind: ClassVar[str] = "flaky"


FLAKY = SourceKind(FlakyOptions, lambda spec, **context: FlakySource(spec))
