"""Which memory backend a command or a tool session runs on: ``memory.backend`` is
``postgres`` (vectors and BM25 in the knowledge base's database), ``graph`` (a temporal
knowledge graph) or ``composite`` (both, merged).

The graph is imported only when it is chosen: its packages come with the ``kbctl[graph]``
extra, and without them choosing it is bad usage (exit 2) naming the extra.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from importlib import import_module
from typing import TYPE_CHECKING

from ..config import Settings
from ..embed.base import Embedder
from ..errors import EnvironmentFailure, InputError
from .backend import MemoryBackend
from .composite import CompositeMemoryBackend, Unavailable
from .postgres import PostgresMemoryBackend

if TYPE_CHECKING:
    from .graph import GraphMemoryBackend

EXTRA_HINT = "pip install 'kbctl[graph]'"
GRAPH_PACKAGES = ("graphiti_core", "kuzu")  # what the extra installs
GRAPH = "graph"
COMPOSITE = "composite"


def open_graph_backend(settings: Settings, embedder: Embedder | None, *,
                       writing: bool) -> GraphMemoryBackend:
    """The graph backend ``memory.graph`` describes: a server by URL, else the embedded
    engine's file (beside the embedded database unless ``memory.graph.path`` says)."""
    require_graph(settings)
    from .graph import default_path, open_graph
    from .llm import make_model

    g = settings.memory.graph
    location, url = (g.url, True) if g.url else (
        str(g.path or default_path(settings.data_dir)), False)
    model = make_model(g.model, g.model_base_url,
                       allow_private_network=settings.allow_private_network,
                       timeout_s=g.timeout_s)
    try:
        return open_graph(location, url=url, model=model, embedder=embedder,
                          timeout_s=g.timeout_s, writing=writing)
    except BaseException:
        model.close()
        raise


class MissingExtra(InputError):
    """The graph backend was chosen and its packages are not installed."""


def require_graph(settings: Settings) -> None:
    """Load the graph's packages when ``memory.backend`` needs them, before any work: a
    choice this install cannot serve is bad usage naming the extra."""
    if settings.memory.backend not in (GRAPH, COMPOSITE):
        return
    try:  # the extra's packages load here, and only here
        for package in GRAPH_PACKAGES:
            import_module(package)
    except ImportError as exc:
        raise MissingExtra(f"the graph memory backend needs the 'graph' extra ({exc.name} "
                           "is not installed)", hint=EXTRA_HINT) from None


def _no_graph() -> type[Exception]:
    from .graph import NoGraph
    return NoGraph


@contextmanager
def chosen_backend(settings: Settings, vectors: PostgresMemoryBackend,
                   embedder: Embedder | None, *, writing: bool) -> Iterator[MemoryBackend]:
    """The configured backend over ``vectors`` (the Postgres side), closed on exit.

    In a composite, a graph whose engine or model cannot be reached is a side left out
    (and said so in every answer), never the vectors' failure.
    """
    kind = settings.memory.backend
    if kind not in (GRAPH, COMPOSITE):
        yield vectors
        return
    if writing and embedder is not None:
        vectors.bind()  # the graph's vectors are the KB's embedder's, as the table's are
    graph: GraphMemoryBackend | None = None
    try:
        if kind == GRAPH:
            graph = open_graph_backend(settings, embedder, writing=writing)
            yield graph
            return
        side: MemoryBackend
        try:
            graph = open_graph_backend(settings, embedder, writing=writing)
            side = graph
        except (EnvironmentFailure, _no_graph()) as exc:
            side = Unavailable(GRAPH, exc)
        yield CompositeMemoryBackend([vectors, side], names=[vectors.kind, GRAPH],
                                     mirror_writes=True)
    finally:
        if graph is not None:
            graph.close()
