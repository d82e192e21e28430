"""Local ONNX embeddings through ``fastembed`` (the optional ``kbctl[local]`` extra).

``local:MODEL`` names a model fastembed knows (loaded from its cache, downloaded into it
when the network allows); ``local:/path/to/model-dir`` loads a folder holding an ONNX
export (``onnx/model.onnx`` or ``model.onnx``) with its ``tokenizer.json``,
``tokenizer_config.json`` and, optionally, ``config.json``, ``special_tokens_map.json`` and
a sentence-transformers ``1_Pooling/config.json`` that picks the pooling.

fastembed is imported only when a model is loaded, so the rest of kbctl never needs it.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import os
import tempfile
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kbctl.embed.base import EmbedderIdentity
from kbctl.embed.common import l2_normalize, require_positive
from kbctl.errors import ConfigError, EmbedderError, KbctlError, ModelUnavailable

DEFAULT_MODEL = "BAAI/bge-small-en-v1.5"
INSTALL_HINT = "pip install 'kbctl[local]'"
POOLINGS = ("mean", "cls", "last_token")
_PROBE_TEXT = "dimension probe"
_REGISTER_LOCK = threading.Lock()


def fastembed_available() -> bool:
    return importlib.util.find_spec("fastembed") is not None


@contextmanager
def quiet_fastembed() -> Iterator[None]:
    r"""fastembed's own log lines (timestamped ``ERROR``\s through loguru, the Hugging Face
    hub's through ``logging``) silenced while a model loads: a load that fails is said
    once, by kbctl's error with its hint, not first in a library's words."""
    try:
        from loguru import logger
    except ImportError:  # fastembed without loguru: nothing of its own to silence
        logger = None
    hub = logging.getLogger("huggingface_hub")
    level = hub.level
    if logger is not None:
        logger.disable("fastembed")
    hub.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        hub.setLevel(level)
        if logger is not None:
            logger.enable("fastembed")


def looks_like_path(model: str) -> bool:
    """A spec names a folder when it is written as a path, or when that folder exists."""
    return model.startswith(("/", "./", "../", "~")) or Path(model).expanduser().is_dir()


class LocalEmbedder:
    """Embedder running an ONNX model in-process; no network, no key."""

    provider = "local"

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        *,
        dimensions: int | None = None,
        cache_dir: str | None = None,
        threads: int | None = None,
        batch_size: int = 32,
        pooling: str | None = None,
        offline: bool = False,
    ) -> None:
        model = model.strip()
        if not model:
            raise ConfigError("local embedder needs a model name or folder")
        require_positive("dimensions", dimensions)
        require_positive("batch_size", batch_size)
        require_positive("threads", threads)
        if pooling is not None and pooling not in POOLINGS:
            raise ConfigError(f"local embedder pooling must be one of {POOLINGS}, got {pooling!r}")
        if not fastembed_available():
            raise EmbedderError(
                f"the local embedder ({model}) needs the optional fastembed package",
                hint=INSTALL_HINT,
            )
        self.model = model
        self.folder = Path(model).expanduser() if looks_like_path(model) else None
        if self.folder is not None and not self.folder.is_dir():
            raise ConfigError(f"local embedder model folder not found: {model}")
        self.cache_dir = cache_dir
        self.threads = threads
        self.batch_size = batch_size
        self.pooling = pooling
        self.offline = offline
        self._requested = dimensions
        self._dimensions = dimensions if self.folder is not None else self._native_dimensions()
        if dimensions is not None and self._dimensions != dimensions:
            raise ConfigError(
                f"local model {model} produces {self._dimensions}-dimensional vectors, "
                f"not {dimensions}"
            )
        self._engine: Any = None
        self._lock = threading.Lock()

    # --- the Embedder protocol ---------------------------------------------------------

    @property
    def identity(self) -> EmbedderIdentity:
        return EmbedderIdentity(self.provider, self.model, self.dimensions)

    @property
    def dimensions(self) -> int:
        if self._dimensions is None:
            self._load()
        if self._dimensions is None:  # pragma: no cover - _load sets it or raises
            raise EmbedderError(f"could not learn the dimensions of {self.model}")
        return self._dimensions

    def embed(
        self, texts: Sequence[str], titles: Sequence[str | None] | None = None
    ) -> list[list[float]]:
        """Titles are not used: the models fastembed runs take plain passages."""
        if titles is not None and len(titles) != len(texts):
            raise ValueError(f"got {len(texts)} texts but {len(titles)} titles")
        if not texts:
            return []
        engine = self._load()
        raw = engine.passage_embed(list(texts), batch_size=self.batch_size)
        return self._finish(raw, len(texts))

    def embed_query(self, text: str) -> list[float]:
        engine = self._load()
        return self._finish(engine.query_embed([text]), 1)[0]

    # --- loading -----------------------------------------------------------------------

    def _native_dimensions(self) -> int:
        from fastembed import TextEmbedding

        try:
            return int(TextEmbedding.get_embedding_size(self.model))
        except ValueError as exc:
            raise ConfigError(
                f"fastembed does not know the model {self.model!r}",
                hint="use a model from fastembed's list, or local:/path/to/model-dir",
            ) from exc

    def _load(self) -> Any:
        with self._lock:
            if self._engine is None:
                with quiet_fastembed():
                    engine = (self._load_folder() if self.folder is not None
                              else self._load_named())
                width = len(_first(engine.passage_embed([_PROBE_TEXT])))
                if self._dimensions is not None and width != self._dimensions:
                    raise EmbedderError(
                        f"local model {self.model} produces {width}-dimensional vectors, "
                        f"not {self._dimensions}"
                    )
                self._dimensions = width
                self._engine = engine
            return self._engine

    def _load_named(self) -> Any:
        from fastembed import TextEmbedding

        try:
            return TextEmbedding(model_name=self.model,
                                 **load_options(self.cache_dir, self.threads, self.offline))
        except Exception as exc:
            raise ModelUnavailable(
                f"could not load local model {self.model}: not in the model folder "
                f"{model_folder(self.cache_dir)} and not downloadable from here "
                f"({first_line(exc)})",
                hint="let one run download it (the kbctl Action caches that folder), set "
                "FASTEMBED_CACHE_PATH to a folder that holds it, or use "
                "local:/path/to/model-dir",
            ) from exc

    def _load_folder(self) -> Any:
        from fastembed import TextEmbedding
        from fastembed.common.model_description import ModelSource, PoolingType

        assert self.folder is not None
        folder = self.folder.resolve()
        model_file = find_onnx(folder)
        pooling = self.pooling or _folder_pooling(folder)
        for required in ("tokenizer.json", "tokenizer_config.json"):
            if not (folder / required).is_file():
                raise EmbedderError(f"local model folder {folder} has no {required}")
        name = "kbctl-local/" + hashlib.sha256(
            f"{folder}\0{model_file}\0{pooling}".encode()
        ).hexdigest()[:16]
        with _REGISTER_LOCK:
            known = {d["model"] for d in TextEmbedding.list_supported_models()}
            if name not in known:
                TextEmbedding.add_custom_model(
                    model=name,
                    pooling=PoolingType[pooling.upper()],
                    normalization=True,
                    sources=ModelSource(hf=name),
                    dim=self._requested or _hidden_size(folder) or 0,
                    model_file=model_file,
                )
        try:
            return TextEmbedding(
                model_name=name, cache_dir=self.cache_dir, threads=self.threads,
                specific_model_path=str(folder),
            )
        except Exception as exc:
            raise ModelUnavailable(
                f"could not load the local model in {folder}: {first_line(exc)}") from exc

    def _finish(self, raw: Any, count: int) -> list[list[float]]:
        what = f"local model {self.model}"
        vectors = [l2_normalize(v.tolist(), what=what) for v in raw]
        if len(vectors) != count:
            raise EmbedderError(f"{what}: {count} texts gave {len(vectors)} vectors")
        for v in vectors:
            if len(v) != self._dimensions:
                raise EmbedderError(
                    f"{what}: expected a {self._dimensions}-dimensional vector, got {len(v)}"
                )
        return vectors


def model_folder(cache_dir: str | None) -> str:
    """Where fastembed keeps named models: ``cache_dir``, else FASTEMBED_CACHE_PATH, else
    its folder in the system's temporary directory."""
    return cache_dir or os.environ.get("FASTEMBED_CACHE_PATH") or os.path.join(
        tempfile.gettempdir(), "fastembed_cache")


def first_line(exc: BaseException) -> str:
    """An exception's message as one line: a loader's may run to a page of causes."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    text = lines[0] if lines else type(exc).__name__
    return text if len(text) <= 200 else text[:199] + "…"


def _first(raw: Any) -> Any:
    for vector in raw:
        return vector
    raise EmbedderError("local model returned no vector")


def load_options(cache_dir: str | None, threads: int | None, offline: bool) -> dict[str, Any]:
    """fastembed's keyword arguments for a named model: where its cache is, how many
    threads, and whether it may download (offline: the cache only)."""
    options: dict[str, Any] = {"cache_dir": cache_dir, "threads": threads}
    if offline:
        options["local_files_only"] = True
    return options


def find_onnx(folder: Path, *, what: str = "local model",
              error: type[KbctlError] = EmbedderError) -> str:
    """The one ONNX file of an exported model folder, relative to it; ``error`` naming
    ``what`` (an embedder's or a reranker's folder) when there is none or a choice."""
    for candidate in ("onnx/model.onnx", "model.onnx"):
        if (folder / candidate).is_file():
            return candidate
    found = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*.onnx"))
    if len(found) == 1:
        return found[0]
    if not found:
        raise error(f"{what} folder {folder} holds no .onnx file")
    raise error(f"{what} folder {folder} holds several .onnx files ({', '.join(found)}); "
                "keep one as onnx/model.onnx")


def _folder_pooling(folder: Path) -> str:
    """Read sentence-transformers' pooling config; mean pooling when there is none."""
    config = _read_json(folder / "1_Pooling" / "config.json")
    if config.get("pooling_mode_cls_token"):
        return "cls"
    if config.get("pooling_mode_lasttoken"):
        return "last_token"
    return "mean"


def _hidden_size(folder: Path) -> int | None:
    value = _read_json(folder / "config.json").get("hidden_size")
    return value if isinstance(value, int) and value > 0 else None


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
