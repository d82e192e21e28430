"""Local cross-encoders through fastembed (the optional ``kbctl[local]`` extra).

``local:MODEL`` names a cross-encoder fastembed knows (``Xenova/ms-marco-MiniLM-L-6-v2``,
``BAAI/bge-reranker-base`` …), loaded from its cache or downloaded into it when the
network allows; ``local:/path/to/dir`` loads a folder holding an ONNX export with its
``tokenizer.json``. Raw logits are mapped through a sigmoid into 0..1.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kbctl.embed.local import (
    INSTALL_HINT,
    fastembed_available,
    find_onnx,
    load_options,
    looks_like_path,
    quiet_fastembed,
)
from kbctl.errors import ConfigError, RerankerError
from kbctl.rerank.base import RerankerIdentity, sigmoid

DEFAULT_MODEL = "Xenova/ms-marco-MiniLM-L-6-v2"
_REGISTER_LOCK = threading.Lock()


class LocalReranker:
    """A cross-encoder running in-process; no network, no key."""

    provider = "local"

    def __init__(self, model: str = DEFAULT_MODEL, *, cache_dir: str | None = None,
                 threads: int | None = None, batch_size: int = 32,
                 offline: bool = False) -> None:
        model = model.strip()
        if not model:
            raise ConfigError("local reranker needs a model name or folder")
        if batch_size < 1:
            raise ConfigError(f"local reranker batch_size must be positive, got {batch_size}")
        if not fastembed_available():
            raise RerankerError(f"the local reranker ({model}) needs the optional fastembed "
                                "package", hint=INSTALL_HINT)
        self.model = model
        self.folder = Path(model).expanduser() if looks_like_path(model) else None
        if self.folder is not None and not self.folder.is_dir():
            raise ConfigError(f"local reranker model folder not found: {model}")
        if self.folder is None:
            self._check_known(model)
        self.cache_dir = cache_dir
        self.threads = threads
        self.batch_size = batch_size
        self.offline = offline
        self._engine: Any = None
        self._lock = threading.Lock()

    @property
    def identity(self) -> RerankerIdentity:
        return RerankerIdentity(self.provider, self.model)

    def score(self, query: str, documents: Sequence[str]) -> list[float]:
        if not documents:
            return []
        engine = self._load()
        try:
            raw = [float(x) for x in engine.rerank(query, list(documents),
                                                   batch_size=self.batch_size)]
        except Exception as exc:
            raise RerankerError(f"local reranker {self.model} failed: {exc}") from exc
        if len(raw) != len(documents):
            raise RerankerError(f"local reranker {self.model}: {len(documents)} documents "
                                f"gave {len(raw)} scores")
        return [sigmoid(x) for x in raw]

    # --- loading ---------------------------------------------------------------------------

    @staticmethod
    def _check_known(model: str) -> None:
        from fastembed.rerank.cross_encoder import TextCrossEncoder

        known = {m["model"].lower() for m in TextCrossEncoder.list_supported_models()}
        if model.lower() not in known:
            raise ConfigError(f"fastembed does not know the cross-encoder {model!r}",
                              hint="use a model from fastembed's list, or "
                              "local:/path/to/model-dir")

    def _load(self) -> Any:
        with self._lock:
            if self._engine is None:
                with quiet_fastembed():
                    self._engine = (self._load_folder() if self.folder is not None
                                    else self._load_named())
            return self._engine

    def _load_named(self) -> Any:
        from fastembed.rerank.cross_encoder import TextCrossEncoder

        try:
            return TextCrossEncoder(model_name=self.model,
                                    **load_options(self.cache_dir, self.threads, self.offline))
        except Exception as exc:
            raise RerankerError(
                f"could not load local reranker {self.model}: {exc}",
                hint="it is not in fastembed's cache and could not be downloaded; "
                "point at a model folder with local:/path/to/model-dir") from exc

    def _load_folder(self) -> Any:
        from fastembed.common.model_description import ModelSource
        from fastembed.rerank.cross_encoder import TextCrossEncoder

        assert self.folder is not None
        folder = self.folder.resolve()
        model_file = find_onnx(folder, what="local reranker", error=RerankerError)
        if not (folder / "tokenizer.json").is_file():
            raise RerankerError(f"local reranker folder {folder} has no tokenizer.json")
        name = "kbctl-rerank/" + hashlib.sha256(
            f"{folder}\0{model_file}".encode()).hexdigest()[:16]
        with _REGISTER_LOCK:
            known = {m["model"] for m in TextCrossEncoder.list_supported_models()}
            if name not in known:
                TextCrossEncoder.add_custom_model(model=name, sources=ModelSource(hf=name),
                                                  model_file=model_file)
        try:
            return TextCrossEncoder(model_name=name, cache_dir=self.cache_dir,
                                    threads=self.threads, specific_model_path=str(folder))
        except Exception as exc:
            raise RerankerError(f"could not load the local reranker in {folder}: {exc}"
                                ) from exc
