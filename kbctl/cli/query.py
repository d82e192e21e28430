"""`kbctl query`."""

from __future__ import annotations

from typing import Annotated

import typer

from ..errors import InputError
from ..pipeline.query import query as run_query
from ..render import Output, check_format
from ..render.query import FORMATS
from .common import (
    ConfigOpt,
    DataDirOpt,
    DbOpt,
    EmbedderOpt,
    EmbedderUrlOpt,
    FusionOpt,
    JsonOpt,
    NamespaceOpt,
    PrivateOpt,
    RerankOpt,
    RerankTopOpt,
    RerankUrlOpt,
    VectorWeightOpt,
    guard,
    hybrid_only_note,
    settings_from,
)


def parse_filters(items: list[str] | None) -> dict[str, str]:
    """``key=value`` options to a dict; anything else is a usage error."""
    filters = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise InputError(f"--filter expects key=value, got '{item}'")
        if key in filters and filters[key] != value:  # all filters must hold: none could
            raise InputError(f"--filter {key} is given twice ({filters[key]!r} and "
                             f"{value!r}); a passage has one {key}")
        filters[key] = value
    return filters


@guard
def query(
    question: Annotated[str, typer.Argument(help="The question to retrieve passages for.")],
    k: Annotated[int, typer.Option("-k", "--top-k", help="Results to return (1..50).")] = 5,
    min_score: Annotated[float | None, typer.Option(
        "--min-score", help="Drop results scoring below this (0..1).",
        show_default=False)] = None,
    vector_weight: VectorWeightOpt = None,
    fusion: FusionOpt = None,
    filter_: Annotated[list[str] | None, typer.Option(
        "--filter", help="Metadata filter key=value (repeatable).", show_default=False)] = None,
    fmt: Annotated[str, typer.Option(
        "--format", help="table, json, context (for an LLM prompt) or sources.")] = "table",
    db: DbOpt = None, data_dir: DataDirOpt = None, namespace: NamespaceOpt = None,
    config: ConfigOpt = None, embedder: EmbedderOpt = None,
    embedder_base_url: EmbedderUrlOpt = None, rerank: RerankOpt = None,
    rerank_base_url: RerankUrlOpt = None, rerank_top: RerankTopOpt = None,
    allow_private_network: PrivateOpt = None, json_output: JsonOpt = False,
) -> None:
    """Retrieve the passages that best answer a question, with citations.

    Example: `kbctl query "how do I install" --json | jq '.results[0].citation'`
    """
    check_format(FORMATS, fmt)
    settings = settings_from(db_url=db, data_dir=data_dir, namespace=namespace, config=config,
                             embedder=embedder, embedder_base_url=embedder_base_url,
                             rerank=rerank, rerank_base_url=rerank_base_url,
                             rerank_top=rerank_top, vector_weight=vector_weight,
                             fusion=fusion, allow_private_network=allow_private_network)
    result = run_query(settings, question, k=k, min_score=min_score,
                       filters=parse_filters(filter_))
    out = Output(json_output)
    out.show(result, fmt)
    hybrid_only_note(out, result.mode == "lexical", vector_weight=vector_weight, fusion=fusion)
