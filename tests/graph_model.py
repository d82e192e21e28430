"""A language-model stand-in on 127.0.0.1 for graph memory: it answers Graphiti's
structured-output requests deterministically, over the real wire formats (OpenAI's
``/chat/completions`` with ``response_format``, Gemini's ``generateContent``).

Its reading of a note is rule-based, one fact per sentence: the entities are the
sentence's capitalised names (or, with fewer than two, its first and last words), the
relation the words between them, and the fact the sentence itself. A new fact
contradicts an older one with the same subject and relation and another object ("Alice
works on team Falcon", later "Alice works on team Heron"). Every request is recorded, so
tests can check what went over the wire.
"""

from __future__ import annotations

import ast
import json
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_SENTENCE = re.compile(r"[^.\n]+")
_WORD = re.compile(r"[A-Za-z0-9_/'-]+")
_NOT_NAMES = {"The", "A", "An", "In", "On", "Since", "From", "Our", "Its", "It", "This",
              "That", "Every", "Each", "When", "Now", "Then", "We", "They", "He", "She"}


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.findall(text) if len(_WORD.findall(s)) >= 2]


def names(sentence: str) -> list[str]:
    """Runs of capitalised words (not a sentence's leading article), else first and last."""
    words = _WORD.findall(sentence)
    runs: list[list[str]] = []
    for i, w in enumerate(words):
        if w[:1].isupper() and not (i == 0 and w in _NOT_NAMES):
            if runs and words[i - 1] == runs[-1][-1] and i > 0 and words[i - 1][:1].isupper():
                runs[-1].append(w)
            else:
                runs.append([w])
    found = [" ".join(r) for r in runs]
    found = list(dict.fromkeys(found))
    if len(found) >= 2:
        return found
    return list(dict.fromkeys([words[0], words[-1]])) if len(words) >= 2 else found


def triple(sentence: str) -> tuple[str, str, str] | None:
    """(subject, RELATION, object) of a sentence, or None."""
    found = names(sentence)
    if len(found) < 2:
        return None
    subject, obj = found[0], found[-1]
    words = _WORD.findall(sentence)
    text = " ".join(words)
    start = text.find(subject) + len(subject)
    end = text.rfind(obj)
    between = text[start:end].split() if end > start else []
    relation = "_".join(w.upper() for w in between) or "RELATES_TO"
    return subject, relation, obj


def _section(text: str, tag: str) -> str | None:
    m = re.search(rf"<{tag}>\n?(.*?)\n?</{tag}>", text, re.S)
    return m[1].strip() if m else None


def _listed(raw: str | None) -> list[Any]:
    if not raw:
        return []
    try:
        return json.loads(raw)
    except ValueError:
        return ast.literal_eval(raw)


def answer(name: str, prompt: str, schema: dict[str, Any]) -> dict[str, Any]:
    """The stand-in's structured answer to one of Graphiti's requests."""
    if name == "ExtractedEntities":
        text = _section(prompt, "TEXT") or _section(prompt, "CURRENT_MESSAGE") or ""
        found = list(dict.fromkeys(n for s in sentences(text) for n in names(s)))
        return {"extracted_entities": [{"name": n, "entity_type_id": 0} for n in found]}
    if name == "ExtractedEdges":
        text = _section(prompt, "CURRENT_MESSAGE") or ""
        known = {e["name"] for e in _listed(_section(prompt, "ENTITIES"))}
        edges = []
        for s in sentences(text):
            t = triple(s)
            if t and t[0] in known and t[2] in known and t[0] != t[2]:
                edges.append({"source_entity_name": t[0], "target_entity_name": t[2],
                              "relation_type": t[1], "fact": s})
        return {"edges": edges}
    if name == "EdgeTimestamps":
        when = (_section(prompt, "REFERENCE TIME") or "").split("#")[0].strip()
        return {"valid_at": when or None, "invalid_at": None}
    if name == "EdgeDuplicate":
        new = triple(_section(prompt, "NEW FACT") or "")
        existing = _listed(_section(prompt, "EXISTING FACTS"))
        candidates = _listed(_section(prompt, "FACT INVALIDATION CANDIDATES"))
        fact = (_section(prompt, "NEW FACT") or "").strip()
        dupes = [e["idx"] for e in existing if e["fact"].strip() == fact]
        contradicted = []
        for e in [*existing, *candidates]:
            old = triple(e["fact"])
            if new and old and old[:2] == new[:2] and old[2] != new[2]:
                contradicted.append(e["idx"])
        return {"duplicate_facts": dupes, "contradicted_facts": contradicted}
    if name == "NodeResolutions":
        extracted = _listed(_section(prompt, "ENTITIES"))
        existing = _listed(_section(prompt, "EXISTING ENTITIES"))
        by_name = {e["name"].lower(): e["candidate_id"] for e in existing}
        return {"entity_resolutions": [
            {"id": e["id"], "name": e["name"],
             "duplicate_candidate_id": by_name.get(e["name"].lower(), -1)}
            for e in extracted]}
    return _default(schema, schema)


def _default(node: dict[str, Any], root: dict[str, Any]) -> Any:
    """The plainest value a schema accepts: summaries empty, lists empty, flags true."""
    if "$ref" in node:
        return _default(root["$defs"][node["$ref"].rsplit("/", 1)[-1]], root)
    if "anyOf" in node:
        return None
    kind = node.get("type")
    if kind == "object":
        props = node.get("properties", {})
        return {k: _default(v, root) for k, v in props.items()
                if k in node.get("required", props)}
    return {"array": [], "string": "", "integer": 0, "number": 0,
            "boolean": True}.get(kind)


@dataclass
class StandInModel:
    """The server's state: what it was asked, and whether it should fail."""

    url: str = ""
    requests: list[dict[str, Any]] = field(default_factory=list)
    fail_with: int | None = None  # an HTTP status every request gets, when set
    lock: threading.Lock = field(default_factory=threading.Lock)

    def names(self) -> list[str]:
        with self.lock:
            return [r["name"] for r in self.requests]


def _handler(state: StandInModel) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if self.path.endswith("/chat/completions"):
                fmt = body["response_format"]["json_schema"]
                name, schema = fmt["name"], fmt["schema"]
                prompt = "\n".join(m["content"] for m in body["messages"])
            elif self.path.endswith(":generateContent"):
                schema = body["generationConfig"]["responseJsonSchema"]
                name = schema.get("title", "Answer")
                prompt = "\n".join(p["text"] for c in body["contents"] for p in c["parts"])
            else:
                return self._send(404, {"error": "unknown path"})
            with state.lock:
                state.requests.append({"path": self.path, "name": name, "body": body,
                                       "auth": self.headers.get("Authorization")
                                       or self.headers.get("x-goog-api-key")})
                failing = state.fail_with
            if failing is not None:
                return self._send(failing, {"error": {"message": "stand-in told to fail"}})
            text = json.dumps(answer(name, prompt, schema))
            if self.path.endswith("/chat/completions"):
                return self._send(200, {"choices": [{"index": 0, "message": {
                    "role": "assistant", "content": text}}]})
            return self._send(200, {"candidates": [{"content": {"parts": [{"text": text}]}}]})

        def _send(self, status: int, payload: Any) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler


@contextmanager
def stand_in_model() -> Iterator[StandInModel]:
    """The stand-in serving on a free loopback port; ``url`` is its OpenAI-style base."""
    state = StandInModel()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    server.daemon_threads = True
    state.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
