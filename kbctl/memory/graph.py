"""The graph memory backend: a temporal knowledge graph (Graphiti) behind ``MemoryBackend``.

An append is an episode: the language model reads it into entities and facts (edges with
``valid_at``/``invalid_at``); a later episode that contradicts a fact ends its interval,
and the fact stays as history. Each scope is one graph partition (a Graphiti
``group_id``): the agent tier one per agent, the user tier one per agent and user; a
search asks the graph for the caller's partitions only, so no other user's fact is ever
read. Every fact cites the lines of the memory file its episode appended
(``memory/user/notes.md#L3-L4``); the files themselves are kept in the graph too, per
partition, so ``get`` shows the source.

Embedded, each partition is a Kùzu database of its own (``<graph dir>/<partition>.kuzu``):
Kùzu's full-text index answers its top entries before any ``WHERE`` applies, so in one
shared database another user's facts would crowd a caller's out of a search (and time
it). On a server (Neo4j), the partition is in every query and index lookup.
"""

from __future__ import annotations

import hashlib
import re
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..embed.base import Embedder
from ..errors import DatabaseError, InputError, KbctlError
from . import graph_engine as ge
from .chunking import normalise_newlines, split_lines
from .llm import ChatModel
from .model import (
    DeleteResult,
    Health,
    ListPage,
    MemoryFile,
    MemoryHit,
    MemoryListing,
    MemorySearchResult,
    MemoryStats,
    MemoryText,
    SearchOptions,
    TierCount,
    WriteResult,
    check_file_size,
    check_query,
    check_tier,
    check_window,
    citation,
    content_sha256,
    missing_file,
    text_window,
)
from .paths import AGENT_TIER, TIERS, USER_TIER, MemoryScope, parse_path

KIND = "graph"
# rank fusion of two lists (BM25 and cosine) gives at most 1 + 1: the scale of a score
RRF_BEST = 2.0
# a fact a later note ended ranks after every current one, and weighs at most this much
HISTORY_WEIGHT = 0.5
# A partition holds one scope's facts: a handful to a few thousand short sentences, where
# BM25's document frequencies say little (a word in half of three facts weighs nothing),
# so the vector side must not drop a fact below Graphiti's default cosine floor of 0.6.
MIN_SIMILARITY = 0.3
CANDIDATES_FACTOR = 3
MIN_CANDIDATES = 10
_CITED = re.compile(r"^(memory/.+)#L(\d+)-L(\d+)$")
# Kùzu's full-text search answers nothing for a query holding some punctuation ("locker
# code?" finds no fact "locker code" finds): the question is asked in words only
_PUNCTUATION = re.compile(r"[^\w\s]+")


def group_of(scope: MemoryScope, tier: str) -> str:
    """The partition a tier of ``scope`` lives in: derived from the caller's ids only."""
    if tier == AGENT_TIER:
        return f"kbctl-agent-{_digest(scope.agent_id)}"
    if scope.user_id is None:
        raise InputError("the user tier needs a user", hint="pass --user ID")
    return f"kbctl-user-{_digest(scope.agent_id, scope.user_id)}"


def visible_groups(scope: MemoryScope) -> dict[str, str]:
    """``{partition: tier}`` a caller reads: the agent's, and their own when they have one."""
    out = {group_of(scope, AGENT_TIER): AGENT_TIER}
    if scope.user_id is not None:
        out[group_of(scope, USER_TIER)] = USER_TIER
    return out


def _digest(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()[:32]


class Partitions:
    """The engines of the partitions one backend has touched, opened on first use."""

    def __init__(self, location: str, *, url: bool, model: ChatModel,
                 embedder: Embedder) -> None:
        self.location = location
        self.url = url
        self.model = model
        self.embedder = embedder
        self._open: dict[str, tuple[ge.Engine, Any]] = {}

    def where(self, group: str) -> str:
        return self.location if self.url else str(Path(self.location) / f"{group}.kuzu")

    def get(self, group: str, *, create: bool) -> tuple[ge.Engine, Any] | None:
        """The engine and Graphiti over ``group``; None for an embedded partition that no
        write has made (a read makes nothing)."""
        key = self.where(group)
        if key not in self._open:
            if not self.url and not create and not Path(key).exists():
                return None
            engine = ge.acquire(key, url=self.url)
            self._open[key] = (engine, engine.graphiti(self.model, self.embedder))
        return self._open[key]

    def made(self) -> list[str]:
        """Every partition there is: the embedded ones' files; a server is one."""
        if self.url:
            return [self.location]
        return sorted(str(p) for p in Path(self.location).glob("*.kuzu"))

    def close(self) -> None:
        opened, self._open = self._open, {}
        for engine, _ in opened.values():
            ge.release(engine)


class GraphMemoryBackend:
    """Memory as a temporal knowledge graph (Kùzu embedded, or a server)."""

    def __init__(self, location: str, *, url: bool, model: ChatModel, embedder: Embedder,
                 timeout_s: float = 120.0, name: str | None = None) -> None:
        self.model = model
        self.embedder = embedder
        self.timeout_s = timeout_s
        self.name = name or KIND
        self.parts = Partitions(location, url=url, model=model, embedder=embedder)

    @property
    def kind(self) -> str:
        return KIND

    def close(self) -> None:
        self.parts.close()
        self.model.close()

    # --- reads ------------------------------------------------------------------------

    def search(self, scope: MemoryScope, query: str,
               options: SearchOptions | None = None) -> MemorySearchResult:
        """Facts of the caller's partitions: current ones first, each with its interval."""
        opts = options or SearchOptions()
        check_query(query)
        started = time.perf_counter()
        groups = visible_groups(scope)
        limit = max(opts.max_results * CANDIDATES_FACTOR, MIN_CANDIDATES)
        edges: list[Any] = []
        scores: list[float] = []
        episodes: dict[str, Any] = {}
        for group in groups:  # each partition asked on its own: the fence is the database
            part = self.parts.get(group, create=False)
            if part is None:
                continue
            found = self._run(self._search(part, group, query, limit), "a graph search")
            edges += found[0]
            scores += found[1]
            episodes.update(found[2])
        now = datetime.now(timezone.utc)
        current, history = [], []
        for edge, raw in zip(edges, scores, strict=True):
            hit = self._hit(edge, min(raw / RRF_BEST, 1.0), episodes, groups)
            if hit is None:
                continue
            # ended by a later note (expired), or by a date its own text gave
            ended = edge.invalid_at is not None and (edge.expired_at is not None
                                                     or _utc(edge.invalid_at) <= now)
            (history if ended else current).append(hit)
        current.sort(key=lambda h: -h.score)
        floor = min((h.score for h in current), default=1.0)
        history = [_weighed(h, min(h.score * HISTORY_WEIGHT, floor)) for h in history]
        history.sort(key=lambda h: -h.score)
        hits = current + history
        if opts.min_score is not None:
            hits = [h for h in hits if h.score >= opts.min_score]
        return MemorySearchResult(
            query=query, scope=scope, hits=hits[:opts.max_results], mode="graph",
            embedder=str(self.embedder.identity), backend=self.name,
            elapsed_ms=round((time.perf_counter() - started) * 1000, 2),
            notes=[] if opts.track is False else ["recall tracking is not kept by the "
                                                   "graph backend"])

    async def _search(self, part: tuple[ge.Engine, Any], group: str, query: str,
                      limit: int) -> tuple[list[Any], list[float], dict[str, Any]]:
        from graphiti_core.nodes import EpisodicNode
        from graphiti_core.search.search_config_recipes import EDGE_HYBRID_SEARCH_RRF
        engine, graph = part
        config = EDGE_HYBRID_SEARCH_RRF.model_copy(deep=True)
        config.limit = limit
        assert config.edge_config is not None
        config.edge_config.sim_min_score = MIN_SIMILARITY
        words = " ".join(_PUNCTUATION.sub(" ", query).split()) or query
        found = await graph.search_(words, config=config, group_ids=[group])
        wanted = sorted({e.episodes[0] for e in found.edges if e.episodes})
        episodes = await EpisodicNode.get_by_uuids(engine.driver, wanted) if wanted else []
        return found.edges, found.edge_reranker_scores, {e.uuid: e for e in episodes}

    def _hit(self, edge: Any, score: float, episodes: dict[str, Any],
             groups: dict[str, str]) -> MemoryHit | None:
        """A fact as a memory entry citing the lines its first episode appended."""
        if edge.group_id not in groups:  # the partition fence held in the query itself
            raise DatabaseError(f"the graph answered a fact of partition {edge.group_id} "
                                "to a search of others")
        episode = episodes.get(edge.episodes[0]) if edge.episodes else None
        cited = _CITED.match(episode.name) if episode is not None else None
        if cited is None:  # a fact whose episode kbctl did not write (another tool's)
            return None
        return MemoryHit(
            id=edge.uuid, path=cited[1], tier=groups[edge.group_id], score=round(score, 6),
            start_line=int(cited[2]), end_line=int(cited[3]), content=edge.fact,
            created_at=_utc(edge.created_at), backend=self.name, valid_at=_utc(edge.valid_at),
            invalid_at=_utc(edge.invalid_at))

    def get(self, scope: MemoryScope, path: str, *, from_line: int | None = None,
            lines: int | None = None) -> MemoryText:
        mp = parse_path(path)
        group = group_of(scope, mp.tier)
        check_window(from_line, lines)
        row = self._file(group, mp.path)
        if row is None:
            raise missing_file(mp.path)
        return text_window(mp, row["content"], from_line, lines, self.name)

    def list_files(self, scope: MemoryScope, tier: str | None = None,
                   page: ListPage | None = None) -> MemoryListing:
        check_tier(scope, tier)
        page = page or ListPage()
        groups = {g: t for g, t in visible_groups(scope).items() if tier in (None, t)}
        rows: list[dict[str, Any]] = []
        episodes: dict[tuple[str, str], int] = {}
        for group in groups:
            part = self.parts.get(group, create=False)
            if part is not None:
                rows += self._run(self._files(part[0], group), "listing the graph's files")
                episodes.update(self._run(self._episode_names(part[0], group),
                                          "listing the graph's episodes"))
        prefix = page.prefix or ""
        rows_all = rows
        rows = sorted((r for r in rows if r["path"].startswith(prefix)
                       and (page.after is None or r["path"] > page.after)),
                      key=lambda r: r["path"])
        shown = rows[:page.limit]
        files = [MemoryFile(path=r["path"], tier=groups[r["group_id"]],
                            lines=len(split_lines(r["content"])),
                            chunks=episodes.get((r["group_id"], r["path"]), 0),
                            chars=len(r["content"]), content_hash=r["content_hash"],
                            created_at=_utc(r["created_at"]),
                            updated_at=_utc(r["updated_at"]))
                 for r in shown]
        total = sum(1 for r in rows_all if r["path"].startswith(prefix))
        return MemoryListing(scope=scope, tier=tier, files=files, total=total,
                             next_after=shown[-1]["path"] if len(rows) > page.limit else None)

    def stats(self, scope: MemoryScope, *, top: int = 10) -> MemoryStats:
        """Files and episodes per tier; the graph keeps no recall records."""
        listing = self.list_files(scope, page=ListPage(limit=100_000))
        tiers = [TierCount(t, sum(1 for f in listing.files if f.tier == t),
                           sum(f.chunks for f in listing.files if f.tier == t))
                 for t in TIERS if t == AGENT_TIER or scope.user_id is not None]
        return MemoryStats(scope=scope, backend=self.name, mode="graph",
                           embedder=str(self.embedder.identity), tiers=tiers,
                           searches_tracked=0, top=[])

    def health(self) -> Health:
        """The engine answers (with its counts), and the model answers a structured call."""
        details: dict[str, Any] = {"engine": self._engine_name(), "model": self.model.identity,
                                   "embedder": str(self.embedder.identity)}
        try:
            details.update(self._counts())
        except KbctlError as exc:
            return Health(kind=KIND, ok=False, details=details,
                          error=f"the graph engine does not answer: {exc.message}")
        except Exception as exc:  # noqa: BLE001 - an engine's own error, named
            return Health(kind=KIND, ok=False, details=details,
                          error=f"the graph engine does not answer: {exc}")
        try:
            self.model.complete_json(
                "Answer with the JSON object asked for.", "Is this service up? ok: true",
                name="HealthCheck", schema={"type": "object",
                                            "properties": {"ok": {"type": "boolean"}},
                                            "required": ["ok"]}, max_tokens=16)
        except KbctlError as exc:
            return Health(kind=KIND, ok=False, details=details,
                          error=f"the language model does not answer: {exc.message}")
        return Health(kind=KIND, ok=True, details=details)

    def _engine_name(self) -> str:
        if not self.parts.url:
            import kuzu
            return f"kuzu {kuzu.__version__} (embedded) at {self.parts.location}"
        from ..net.endpoint import public_endpoint
        return f"neo4j at {public_endpoint(self.parts.location)}"

    def _counts(self) -> dict[str, int]:
        """Files, episodes, entities and facts over every partition there is."""
        if not self.parts.url and Path(self.parts.location).exists() \
                and not Path(self.parts.location).is_dir():
            raise DatabaseError(f"{self.parts.location} is not a directory of graphs")
        facts = ("MATCH (r:RelatesToNode_) " if not self.parts.url
                 else "MATCH ()-[r:RELATES_TO]->() ")
        queries = {
            "files": "MATCH (f:KbctlMemoryFile) RETURN count(f) AS n",
            "episodes": "MATCH (e:Episodic) RETURN count(e) AS n",
            "entities": "MATCH (n:Entity) RETURN count(n) AS n",
            "facts": facts + "RETURN count(r) AS n",
            "currentFacts": facts + "WHERE r.invalid_at IS NULL RETURN count(r) AS n",
        }
        out = dict.fromkeys(queries, 0)
        made = self.parts.made()
        for where in made:
            engine = ge.acquire(where, url=self.parts.url)
            try:
                for key, query in queries.items():
                    rows = self._run(engine.rows(query), "counting the graph")
                    out[key] += int(rows[0]["n"]) if rows else 0
            finally:
                ge.release(engine)
        return {"partitions": len(made), **out}

    # --- writes -----------------------------------------------------------------------

    def append(self, scope: MemoryScope, path: str, text: str) -> WriteResult:
        """Append ``text`` to the file as one episode citing the lines it adds."""
        mp = parse_path(path)
        mp.owner(scope)
        text = normalise_newlines(text)
        if not text.strip():
            raise InputError("nothing to append: the text is empty")
        group = group_of(scope, mp.tier)
        part = self._part(group)
        with part[0].write_lock:
            row = self._file(group, mp.path)
            old = row["content"] if row else ""
            sep = "" if not old or old.endswith("\n") else "\n"
            content = old + sep + text + ("" if text.endswith("\n") else "\n")
            check_file_size(mp, content, appending=bool(row))
            first, last = len(split_lines(old)) + 1, len(split_lines(content))
            made = self._episode(part, group, citation(mp.path, first, last), text,
                                 mp.path, content, row)
        return WriteResult(path=mp.path, tier=mp.tier,
                           status="appended" if row else "created", lines=last,
                           chunks=made[0], reindexed=1, embedded=made[1],
                           content_hash=content_sha256(content))

    def put(self, scope: MemoryScope, path: str, text: str) -> WriteResult:
        """Set the file's whole text: its episodes are replaced by one of the new text."""
        mp = parse_path(path)
        mp.owner(scope)
        content = normalise_newlines(text)
        check_file_size(mp, content, appending=False)
        group = group_of(scope, mp.tier)
        lines = len(split_lines(content))
        part = self._part(group)
        with part[0].write_lock:
            row = self._file(group, mp.path)
            if row and row["content_hash"] == content_sha256(content):
                return WriteResult(path=mp.path, tier=mp.tier, status="unchanged",
                                   lines=lines, chunks=0, reindexed=0, embedded=0,
                                   content_hash=row["content_hash"])
            if row:
                self._run(self._forget(part, group, mp.path), f"replacing {mp.path}")
            made = (0, 0) if not content.strip() else self._episode(
                part, group, citation(mp.path, 1, lines), content, mp.path, content, None)
            if not content.strip():
                self._run(self._save(part[0], group, mp.path, content, None),
                          f"writing {mp.path}")
        return WriteResult(path=mp.path, tier=mp.tier, status="updated" if row else "created",
                           lines=lines, chunks=made[0], reindexed=made[0], embedded=made[1],
                           content_hash=content_sha256(content))

    def delete(self, scope: MemoryScope, path: str) -> DeleteResult:
        """Delete a file with its episodes, and the facts and entities only they held."""
        mp = parse_path(path)
        mp.owner(scope)
        group = group_of(scope, mp.tier)
        part = self.parts.get(group, create=False)
        if part is None or self._file(group, mp.path) is None:
            raise missing_file(mp.path)
        with part[0].write_lock:
            gone = self._run(self._forget(part, group, mp.path), f"deleting {mp.path}")
        return DeleteResult(path=mp.path, tier=mp.tier, chunks=gone)

    def _episode(self, part: tuple[ge.Engine, Any], group: str, cite: str, body: str,
                 path: str, content: str, row: dict[str, Any] | None) -> tuple[int, int]:
        """Add one episode and the file's new text, or neither: an episode whose write
        failed part-way is removed again, so no fact cites lines the file lacks."""
        try:
            return self._run(self._add(part, group, cite, body, path, content, row),
                             f"reading {cite} into the graph")
        except BaseException as exc:
            try:
                self._run(self._undo(part, group, cite), f"undoing {cite}")
            except Exception as undo:  # noqa: BLE001 - the first failure is the one to see
                raise DatabaseError(f"{exc}; removing the half-read episode failed too: "
                                    f"{undo}") from exc
            raise

    async def _add(self, part: tuple[ge.Engine, Any], group: str, cite: str, body: str,
                   path: str, content: str, row: dict[str, Any] | None) -> tuple[int, int]:
        from graphiti_core.nodes import EpisodeType
        engine, graph = part
        added = await graph.add_episode(
            name=cite, episode_body=body, source_description=f"kbctl memory {path}",
            reference_time=datetime.now(timezone.utc), source=EpisodeType.text,
            group_id=group)
        await self._save(engine, group, path, content, row)
        names = await self._episode_names(engine, group)
        return names.get((group, path), 0), len(added.nodes) + len(added.edges)

    async def _undo(self, part: tuple[ge.Engine, Any], group: str, cite: str) -> None:
        engine, graph = part
        rows = await engine.rows(
            "MATCH (e:Episodic) WHERE e.group_id = $gid AND e.name = $name "
            "RETURN e.uuid AS uuid", gid=group, name=cite)
        for r in rows:
            await graph.remove_episode(r["uuid"])

    async def _forget(self, part: tuple[ge.Engine, Any], group: str, path: str) -> int:
        engine, graph = part
        rows = await engine.rows(
            "MATCH (e:Episodic) WHERE e.group_id = $gid AND e.name STARTS WITH $prefix "
            "RETURN e.uuid AS uuid", gid=group, prefix=f"{path}#")
        for r in rows:
            await graph.remove_episode(r["uuid"])
        await engine.rows("MATCH (f:KbctlMemoryFile) WHERE f.key = $key DELETE f",
                          key=_file_key(group, path))
        return len(rows)

    async def _save(self, engine: ge.Engine, group: str, path: str, content: str,
                    row: dict[str, Any] | None) -> None:
        now = datetime.now(timezone.utc)
        await engine.rows(
            "MERGE (f:KbctlMemoryFile {key: $key}) "
            "SET f.group_id = $gid, f.path = $path, f.content = $content, "
            "f.content_hash = $hash, f.created_at = $created, f.updated_at = $now",
            key=_file_key(group, path), gid=group, path=path, content=content,
            hash=content_sha256(content), created=row["created_at"] if row else now, now=now)

    # --- helpers ----------------------------------------------------------------------

    def _part(self, group: str) -> tuple[ge.Engine, Any]:
        part = self.parts.get(group, create=True)
        assert part is not None
        return part

    def _file(self, group: str, path: str) -> dict[str, Any] | None:
        part = self.parts.get(group, create=False)
        if part is None:
            return None
        rows = self._run(part[0].rows(
            "MATCH (f:KbctlMemoryFile) WHERE f.key = $key RETURN f.content AS content, "
            "f.content_hash AS content_hash, f.created_at AS created_at",
            key=_file_key(group, path)), f"reading {path}")
        return rows[0] if rows else None

    async def _files(self, engine: ge.Engine, group: str) -> list[dict[str, Any]]:
        return await engine.rows(
            "MATCH (f:KbctlMemoryFile) WHERE f.group_id = $gid RETURN f.group_id AS "
            "group_id, f.path AS path, f.content AS content, f.content_hash AS "
            "content_hash, f.created_at AS created_at, f.updated_at AS updated_at",
            gid=group)

    async def _episode_names(self, engine: ge.Engine, group: str
                             ) -> dict[tuple[str, str], int]:
        rows = await engine.rows(
            "MATCH (e:Episodic) WHERE e.group_id = $gid RETURN e.name AS name", gid=group)
        out: dict[tuple[str, str], int] = {}
        for r in rows:
            cited = _CITED.match(r["name"] or "")
            if cited:
                key = (group, cited[1])
                out[key] = out.get(key, 0) + 1
        return out

    def _run(self, coro: Any, what: str) -> Any:
        try:
            return ge.run(coro, self.timeout_s, what)
        except KbctlError:
            raise
        except RuntimeError as exc:  # the engine's own failures
            raise DatabaseError(f"{what} failed: {exc}") from exc


class NoGraph(InputError):
    """A read of an embedded graph no write has made yet."""


def _weighed(hit: MemoryHit, score: float) -> MemoryHit:
    from dataclasses import replace
    return replace(hit, score=round(score, 6))


def _utc(when: datetime | None) -> datetime | None:
    """The engine's timestamps are UTC; Kùzu hands them back without a zone."""
    if when is None or when.tzinfo is not None:
        return when
    return when.replace(tzinfo=timezone.utc)


def _file_key(group: str, path: str) -> str:
    return f"{group}\x1f{path}"


def default_path(data_dir: Path) -> Path:
    """Where the embedded graphs live unless configured: beside the embedded database."""
    return Path(data_dir) / "graph"


def open_graph(location: str, *, url: bool, model: ChatModel, embedder: Embedder | None,
               timeout_s: float, writing: bool) -> GraphMemoryBackend:
    """The graph backend on ``location`` (a directory of partitions, or a server URL);
    only a write may make the embedded graph's directory."""
    if embedder is None:
        raise InputError("graph memory needs an embedder, and this knowledge base has none",
                         hint="pass --embedder on the first write (the knowledge base "
                         "records it)")
    if not url:
        path = Path(location)
        if path.exists() and not path.is_dir():
            raise DatabaseError(f"the graph directory {path} is not a directory")
        if not writing and not path.exists():
            raise NoGraph(f"no graph memory at {path}",
                          hint="append to memory first, or check memory.graph.path")
        path.mkdir(parents=True, exist_ok=True)
    return GraphMemoryBackend(location, url=url, model=model, embedder=embedder,
                              timeout_s=timeout_s)
