"""`kbctl reembed`."""

from __future__ import annotations

from typing import Annotated

import typer

from ..pipeline import api
from ..render import Output
from .common import (
    ConfigOpt,
    DataDirOpt,
    DbOpt,
    EmbedderUrlOpt,
    JsonOpt,
    PrivateOpt,
    guard,
    settings_from,
)


@guard
def reembed(
    embedder: Annotated[str, typer.Option(
        "--embedder", help="The new embedder spec (gemini, openai:MODEL, local:MODEL, none).")],
    db: DbOpt = None, data_dir: DataDirOpt = None, config: ConfigOpt = None,
    embedder_base_url: EmbedderUrlOpt = None, allow_private_network: PrivateOpt = None,
    json_output: JsonOpt = False,
    again: Annotated[bool, typer.Option(
        "--again", help="Re-embed even when SPEC is the KB's embedder already (after "
        "changing embedder_window, or to embed long chunks whole in a KB built before "
        "kbctl did).")] = False,
) -> None:
    """Re-embed the whole KB in place from stored chunk text, then switch to the new
    embedder. The old vectors keep serving until the final swap.

    Examples: `kbctl reembed --embedder openai:text-embedding-3-small`,
    `kbctl reembed --embedder openai:all-minilm --again`
    """
    settings = settings_from(db_url=db, data_dir=data_dir, config=config,
                             embedder_base_url=embedder_base_url,
                             allow_private_network=allow_private_network)
    out = Output(json_output)
    with out.progress("re-embed") as progress:
        report = api.reembed_kb(settings, embedder, again=again, progress=progress)
    out.show(report)
