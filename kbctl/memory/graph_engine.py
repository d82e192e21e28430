"""The graph engine under graph memory: Graphiti over embedded Kùzu (or a Neo4j server by
URL), with kbctl's language model and embedder plugged into Graphiti's seams.

Imported only when the graph backend is chosen: ``graphiti-core`` and ``kuzu`` come with
the ``kbctl[graph]`` extra. One engine per database per process, shared by every backend
object over it (an embedded Kùzu database may be opened once per process), with its own
event loop on a thread: Graphiti is async, kbctl's callers are not.
"""

from __future__ import annotations

import asyncio
import os
import threading
import warnings
from collections.abc import Coroutine
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ..embed.base import Embedder
from ..errors import DatabaseError, EnvironmentFailure
from .llm import ChatModel

os.environ.setdefault("GRAPHITI_TELEMETRY_ENABLED", "false")  # no event leaves the machine

with warnings.catch_warnings():  # Graphiti warns that Kùzu is no longer developed
    warnings.simplefilter("ignore", DeprecationWarning)
    import kuzu  # noqa: F401 - the embedded engine must load, not just graphiti
    from graphiti_core import Graphiti
    from graphiti_core.cross_encoder.client import CrossEncoderClient
    from graphiti_core.driver.driver import GraphDriver, GraphProvider
    from graphiti_core.driver.kuzu_driver import KuzuDriver
    from graphiti_core.embedder.client import EmbedderClient
    from graphiti_core.graph_queries import get_fulltext_indices
    from graphiti_core.llm_client.client import LLMClient
    from graphiti_core.llm_client.config import LLMConfig

T = TypeVar("T")
MAX_ANSWER_TOKENS = 8192
FILES_SCHEMA = """CREATE NODE TABLE IF NOT EXISTS KbctlMemoryFile (
    key STRING PRIMARY KEY, group_id STRING, path STRING, content STRING,
    content_hash STRING, created_at TIMESTAMP, updated_at TIMESTAMP)"""


class ModelSeam(LLMClient):
    """Graphiti's language-model seam answered by kbctl's ``ChatModel``: the schema of the
    answer Graphiti wants goes out as structured output, its JSON comes back."""

    def __init__(self, model: ChatModel) -> None:
        super().__init__(LLMConfig(model=model.identity), cache=False)
        self.chat = model

    async def _generate_response(self, messages: list[Any], response_model: Any = None,
                                 max_tokens: int = MAX_ANSWER_TOKENS, model_size: Any = None,
                                 **_: Any) -> dict[str, Any]:
        system = "\n\n".join(m.content for m in messages if m.role == "system")
        user = "\n\n".join(m.content for m in messages if m.role != "system")
        if response_model is not None:
            name, schema = response_model.__name__, response_model.model_json_schema()
        else:
            name, schema = "Answer", {"type": "object"}
        return await asyncio.to_thread(self.chat.complete_json, system, user, name=name,
                                       schema=schema,
                                       max_tokens=min(max_tokens or MAX_ANSWER_TOKENS,
                                                      MAX_ANSWER_TOKENS))


class EmbedderSeam(EmbedderClient):
    """Graphiti's embedder seam answered by the knowledge base's own embedder."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder

    async def create(self, input_data: Any) -> list[float]:
        text = input_data if isinstance(input_data, str) else " ".join(map(str, input_data))
        return (await asyncio.to_thread(self.embedder.embed, [text]))[0]

    async def create_batch(self, input_data_list: list[str]) -> list[list[float]]:
        return await asyncio.to_thread(self.embedder.embed, list(input_data_list))


class NoCrossEncoder(CrossEncoderClient):
    """kbctl's graph search fuses BM25 and cosine ranks (RRF) and never asks a
    cross-encoder; Graphiti still wants one to exist."""

    async def rank(self, query: str, passages: list[str]) -> list[tuple[str, float]]:
        raise EnvironmentFailure("graph memory search uses no cross-encoder")


@dataclass
class Engine:
    """One graph database open in this process, and who holds it."""

    location: str
    kind: str
    driver: GraphDriver
    users: int = 0
    write_lock: threading.Lock = field(default_factory=threading.Lock)

    def run(self, coro: Coroutine[Any, Any, T], timeout_s: float, what: str) -> T:
        return run(coro, timeout_s, what)

    def graphiti(self, model: ChatModel, embedder: Embedder) -> Graphiti:
        return Graphiti(graph_driver=self.driver, llm_client=ModelSeam(model),
                        embedder=EmbedderSeam(embedder), cross_encoder=NoCrossEncoder(),
                        store_raw_episode_content=True)

    async def rows(self, query: str, **params: Any) -> list[dict[str, Any]]:
        """A Cypher query's rows as dicts, whichever driver answers it."""
        records, _, _ = await self.driver.execute_query(query, **params)
        return [dict(r) for r in records or []]


_ENGINES: dict[str, Engine] = {}
_LOCK = threading.Lock()
_LOOP: asyncio.AbstractEventLoop | None = None


def _loop() -> asyncio.AbstractEventLoop:
    """The one event loop every graph call of this process runs on, on a thread of its
    own (Graphiti is async; kbctl's callers, the MCP server's worker threads included,
    are not)."""
    global _LOOP
    with _LOCK:
        if _LOOP is None:
            _LOOP = asyncio.new_event_loop()
            threading.Thread(target=_LOOP.run_forever, name="kbctl-graph", daemon=True).start()
        return _LOOP


def run(coro: Coroutine[Any, Any, T], timeout_s: float, what: str) -> T:
    """Run ``coro`` on the graph loop and wait at most ``timeout_s`` for it."""
    future = asyncio.run_coroutine_threadsafe(coro, _loop())
    try:
        return future.result(timeout_s)
    except FutureTimeout:
        future.cancel()
        raise EnvironmentFailure(f"{what} took longer than {timeout_s:g} s",
                                 hint="raise memory.graph.timeout_s, or check the "
                                 "language model") from None


def acquire(location: str, *, url: bool) -> Engine:
    """The engine for ``location`` (a Kùzu file, or a server URL), opened on first use."""
    with _LOCK:
        engine = _ENGINES.get(location)
        if engine is not None:
            engine.users += 1
            return engine
    opened = _open(location, url=url)
    with _LOCK:
        engine = _ENGINES.setdefault(location, opened)
        engine.users += 1
    if engine is not opened:  # another thread opened it meanwhile
        _close(opened)
    return engine


def release(engine: Engine) -> None:
    """Drop one user; the last closes the database, so its file lock is let go."""
    with _LOCK:
        engine.users -= 1
        if engine.users > 0:
            return
        _ENGINES.pop(engine.location, None)
    _close(engine)


def _close(engine: Engine) -> None:
    try:
        run(engine.driver.close(), 30, "closing the graph")
    finally:
        if engine.kind == "kuzu":
            engine.driver.client.close()  # type: ignore[attr-defined]
            engine.driver.db.close()  # type: ignore[attr-defined]


def _open(location: str, *, url: bool) -> Engine:
    if url:  # the Neo4j driver starts a task: it is made on the graph loop
        engine = Engine(location, "neo4j", run(_server(location), 60, "connecting the graph"))
    else:
        engine = Engine(location, "kuzu", _kuzu(location))
    try:
        run(_prepare(engine), 120, "preparing the graph")
    except BaseException:
        _close(engine)
        raise
    return engine


def _kuzu(path: str) -> GraphDriver:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            driver = KuzuDriver(db=path)
    except RuntimeError as exc:
        text = str(exc)
        if "lock" in text.lower():
            raise DatabaseError(f"the graph at {path} is open in another process",
                                hint="an embedded graph has one user process at a time "
                                "(stop the MCP server, or use memory.graph.url)") from None
        raise DatabaseError(f"cannot open the graph at {path}: {text}") from None
    driver._database = ""  # graphiti reads it to route a group to a database
    return driver


async def _server(url: str) -> GraphDriver:
    from urllib.parse import urlsplit, urlunsplit

    from graphiti_core.driver.neo4j_driver import Neo4jDriver
    parts = urlsplit(url)
    bare = urlunsplit((parts.scheme, f"{parts.hostname}:{parts.port or 7687}", "", "", ""))
    return Neo4jDriver(bare, parts.username or "neo4j", parts.password or "")


async def _prepare(engine: Engine) -> None:
    """Full-text indexes (Graphiti's Kùzu driver makes the tables, not these) and the
    table of memory files."""
    if engine.kind != "kuzu":
        await engine.driver.build_indices_and_constraints()
        return
    have = {r["index_name"] for r in await engine.rows("CALL SHOW_INDEXES() RETURN *")}
    for query in get_fulltext_indices(GraphProvider.KUZU):
        name = query.split("'")[3]
        if name not in have:
            await engine.driver.execute_query(query)
    await engine.driver.execute_query(FILES_SCHEMA)
