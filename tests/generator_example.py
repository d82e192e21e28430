"""A tiny docs generator, as a new generator is written: one module with one class.

``Generator`` gives every default (no guess, titles as written, no expiry, markdown as
written, no landing text, HTML as written); a profile overrides what its generator does
differently. This one is found by ``example.toml``, publishes ``pages/x.md`` at ``x/``,
ids a heading by its words joined with ``_``, reads ``!!note`` lines as its pages show
them, and puts a landing page's ``tagline`` before its body. Registering it is one line in
``kbctl.generators.GENERATORS`` (the tests add it there with monkeypatch).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from kbctl.chunk.anchors import CountingIds
from kbctl.extract.dialects import PageFile
from kbctl.generators.base import Generator, Site


class Example(Generator):
    name = "example"
    markers = ("example.toml",)
    rank = 5

    def detect(self, folder: Path) -> Site | None:
        marker = folder / "example.toml"
        return Site(self.name, folder / "pages", marker) if marker.is_file() else None

    def page(self, site: Site, rel: PurePosixPath, front_matter: Mapping[str, Any]) -> str | None:
        if rel.suffix != ".md":
            return None
        return "" if rel.stem == "index" else rel.with_suffix("").as_posix() + "/"

    def heading_ids(self, site: Site) -> CountingIds:
        return CountingIds(lambda text: "_".join(text.lower().split()))

    def markdown(self, text: str, page: PageFile | None) -> str:
        return text.replace("!!note ", "> Note: ")

    def landing(self, front_matter: Mapping[str, Any]) -> str:
        tagline = front_matter.get("tagline")
        return f"{tagline}\n\n" if isinstance(tagline, str) else ""


GENERATOR = Example()
