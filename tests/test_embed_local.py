"""The local provider, run on tiny ONNX models the tests build (no model hub here)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from kbctl.embed import local as local_module
from kbctl.embed.local import INSTALL_HINT, LocalEmbedder
from kbctl.embed.registry import create_embedder
from kbctl.errors import ConfigError, EmbedderError

from .conftest import Cli

VOCAB = ["[PAD]", "[UNK]", "alpha", "beta", "gamma", "delta"]


def table(dims: int) -> list[list[float]]:
    """A distinct, deterministic embedding row per vocabulary entry."""
    return [[float((i * 7 + j * 3) % 11) - 5.0 for j in range(dims)] for i in range(len(VOCAB))]


def unit(values: list[float]) -> list[float]:
    norm = math.sqrt(sum(v * v for v in values))
    return [v / norm for v in values]


def mean_rows(words: list[str], dims: int) -> list[float]:
    rows = [table(dims)[VOCAB.index(w) if w in VOCAB else 1] for w in words]
    return [sum(col) / len(rows) for col in zip(*rows, strict=True)]


def build_model(folder: Path, dims: int, *, model_file: str = "onnx/model.onnx") -> Path:
    """Write a word-level tokenizer and an ONNX graph that looks each token's row up.

    The graph's ``last_hidden_state`` is ``table[input_ids]``, so pooled outputs are easy to
    compute independently.
    """
    onnx = pytest.importorskip("onnx")
    numpy = pytest.importorskip("numpy")
    tokenizers = pytest.importorskip("tokenizers")
    from onnx import TensorProto, helper, numpy_helper

    (folder / model_file).parent.mkdir(parents=True, exist_ok=True)
    tok = tokenizers.Tokenizer(
        tokenizers.models.WordLevel(vocab={w: i for i, w in enumerate(VOCAB)}, unk_token="[UNK]")
    )
    tok.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    tok.save(str(folder / "tokenizer.json"))
    (folder / "tokenizer_config.json").write_text(
        json.dumps({"model_max_length": 64, "pad_token": "[PAD]"})
    )
    (folder / "special_tokens_map.json").write_text(
        json.dumps({"pad_token": "[PAD]", "unk_token": "[UNK]"})
    )
    (folder / "config.json").write_text(json.dumps({"hidden_size": dims, "pad_token_id": 0}))
    weights = numpy_helper.from_array(numpy.array(table(dims), dtype=numpy.float32), "table")
    graph = helper.make_graph(
        [helper.make_node("Gather", ["table", "input_ids"], ["last_hidden_state"], axis=0)],
        "lookup",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"])],
        [helper.make_tensor_value_info(
            "last_hidden_state", TensorProto.FLOAT, ["batch", "seq", dims])],
        [weights],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(folder / model_file))
    return folder


needs_fastembed = pytest.mark.skipif(
    not local_module.fastembed_available(), reason="kbctl[local] extra not installed"
)


# --- without the extra ---------------------------------------------------------------


def test_missing_extra_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local_module, "fastembed_available", lambda: False)
    with pytest.raises(EmbedderError) as info:
        LocalEmbedder("BAAI/bge-small-en-v1.5")
    assert info.value.hint == INSTALL_HINT
    assert info.value.exit_code == 3


def test_bad_options_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="pooling"):
        LocalEmbedder("x", pooling="max")
    with pytest.raises(ConfigError, match="batch_size"):
        LocalEmbedder("x", batch_size=0)


# --- a model folder ------------------------------------------------------------------


@needs_fastembed
def test_folder_model_embeds_with_mean_pooling(tmp_path: Path) -> None:
    folder = build_model(tmp_path / "tiny", dims=6)
    emb = create_embedder(f"local:{folder}")
    assert isinstance(emb, LocalEmbedder)
    vectors = emb.embed(["alpha beta", "gamma", "delta unknownword"], titles=["t", None, None])
    expected = [
        unit(mean_rows(["alpha", "beta"], 6)),
        unit(mean_rows(["gamma"], 6)),
        unit(mean_rows(["delta", "[UNK]"], 6)),
    ]
    for got, want in zip(vectors, expected, strict=True):
        assert got == pytest.approx(want, abs=1e-6)
    assert emb.embed_query("beta") == pytest.approx(unit(mean_rows(["beta"], 6)), abs=1e-6)
    assert emb.dimensions == 6
    assert str(emb.identity) == f"local/{folder}@6"


@needs_fastembed
def test_folder_pooling_comes_from_sentence_transformers_config(tmp_path: Path) -> None:
    folder = build_model(tmp_path / "cls", dims=5, model_file="model.onnx")
    (folder / "1_Pooling").mkdir()
    (folder / "1_Pooling" / "config.json").write_text(
        json.dumps({"pooling_mode_cls_token": True, "pooling_mode_mean_tokens": False})
    )
    (vector,) = LocalEmbedder(str(folder)).embed(["gamma alpha"])
    assert vector == pytest.approx(unit(table(5)[VOCAB.index("gamma")]), abs=1e-6)


@needs_fastembed
def test_folder_dimensions_in_spec_are_checked(tmp_path: Path) -> None:
    folder = build_model(tmp_path / "tiny", dims=4)
    assert create_embedder(f"local:{folder}@4").dimensions == 4
    wrong = create_embedder(f"local:{folder}@8")
    with pytest.raises(EmbedderError, match="4-dimensional vectors, not 8"):
        wrong.embed(["alpha"])


@needs_fastembed
def test_broken_folders_are_reported(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not found"):
        LocalEmbedder(str(tmp_path / "absent"))
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(EmbedderError, match="no .onnx file"):
        LocalEmbedder(str(empty)).embed(["x"])
    folder = build_model(tmp_path / "notok", dims=4)
    (folder / "tokenizer.json").unlink()
    with pytest.raises(EmbedderError, match="tokenizer.json"):
        LocalEmbedder(str(folder)).embed(["x"])


# --- a named model from fastembed's cache --------------------------------------------


def plant_in_cache(cache: Path, hf_repo: str, model_file: str, dims: int) -> None:
    """Lay a tiny model out the way huggingface_hub caches a snapshot of ``hf_repo``."""
    repo_dir = cache / ("models--" + hf_repo.replace("/", "--"))
    revision = "0" * 40
    build_model(repo_dir / "snapshots" / revision, dims=dims, model_file=model_file)
    (repo_dir / "refs").mkdir(parents=True)
    (repo_dir / "refs" / "main").write_text(revision)


@needs_fastembed
def test_named_model_loads_offline_from_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from fastembed import TextEmbedding

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    name = "BAAI/bge-small-en-v1.5"
    description = next(m for m in TextEmbedding.list_supported_models() if m["model"] == name)
    dims = description["dim"]
    plant_in_cache(tmp_path, description["sources"]["hf"], description["model_file"], dims)

    emb = create_embedder(f"local:{name}", cache_dir=str(tmp_path), offline=True)
    assert emb.dimensions == dims  # known from fastembed's registry, before loading
    (vector,) = emb.embed(["delta beta"])
    # bge models pool the first token (CLS)
    assert vector == pytest.approx(unit(table(dims)[VOCAB.index("delta")]), abs=1e-5)
    assert str(emb.identity) == f"local/{name}@{dims}"


@needs_fastembed
def test_named_model_missing_from_the_cache_offline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    emb = LocalEmbedder("BAAI/bge-small-en-v1.5", cache_dir=str(tmp_path), offline=True)
    with pytest.raises(EmbedderError) as info:
        emb.embed(["x"])
    assert "local:/path/to/model-dir" in (info.value.hint or "")


@needs_fastembed
def test_unknown_named_model_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="no-such/model"):
        create_embedder("local:no-such/model")


@needs_fastembed
def test_named_model_dimension_mismatch_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="384"):
        create_embedder("local:BAAI/bge-small-en-v1.5@768")


@needs_fastembed
def test_a_model_that_cannot_load_ends_the_ingest_in_one_line(
        cli: Cli, workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No model in the folder and no hub to download from: one error line naming the
    folder (exit 3), not a failed-sources table per batch."""
    folder = workdir / "models"
    monkeypatch.setenv("FASTEMBED_CACHE_PATH", str(folder))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    result = cli("ingest", "text", "# Notes\n\nalpha beta", "--ref", "notes",
                 "--embedder", "local")
    assert result.exit_code == 3, result.output
    said = [line for line in result.stderr.splitlines() if line.strip()]
    errors = [line for line in said if line.startswith("error:")]
    assert len(errors) == 1 and len(said) <= 3, said  # the error, its hint, a KB notice
    assert "could not load local model BAAI/bge-small-en-v1.5" in errors[0]
    assert str(folder) in errors[0] and "Traceback" not in result.stderr
    assert "failed sources" not in result.output
