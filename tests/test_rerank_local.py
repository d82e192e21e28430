"""The local reranker, run on a tiny ONNX cross-encoder the tests build (no model hub
here): a word-level tokenizer and a graph whose logit is the sum of its tokens' weights."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from kbctl.embed import local as embed_local
from kbctl.errors import ConfigError, RerankerError
from kbctl.rerank.local import LocalReranker
from kbctl.rerank.registry import create_reranker

# token -> logit contribution; the query word "alpha" weighs nothing
WEIGHTS = {"[PAD]": 0.0, "[UNK]": 0.0, "alpha": 0.0, "beta": 1.5, "gamma": -2.0,
           "delta": 0.5}
VOCAB = list(WEIGHTS)


def sigmoid(x: float) -> float:
    return 1 / (1 + math.exp(-x))


def build_cross_encoder(folder: Path, model_file: str = "onnx/model.onnx") -> Path:
    onnx = pytest.importorskip("onnx")
    numpy = pytest.importorskip("numpy")
    tokenizers = pytest.importorskip("tokenizers")
    from onnx import TensorProto, helper, numpy_helper

    (folder / model_file).parent.mkdir(parents=True, exist_ok=True)
    tok = tokenizers.Tokenizer(tokenizers.models.WordLevel(
        vocab={w: i for i, w in enumerate(VOCAB)}, unk_token="[UNK]"))
    tok.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    tok.save(str(folder / "tokenizer.json"))
    (folder / "tokenizer_config.json").write_text(
        json.dumps({"model_max_length": 64, "pad_token": "[PAD]"}))
    (folder / "special_tokens_map.json").write_text(
        json.dumps({"pad_token": "[PAD]", "unk_token": "[UNK]"}))
    (folder / "config.json").write_text(json.dumps({"pad_token_id": 0}))
    table = numpy_helper.from_array(
        numpy.array([[WEIGHTS[w]] for w in VOCAB], dtype=numpy.float32), "table")
    axes = numpy_helper.from_array(numpy.array([1], dtype=numpy.int64), "axes")
    graph = helper.make_graph(
        [helper.make_node("Gather", ["table", "input_ids"], ["per_token"], axis=0),
         helper.make_node("ReduceSum", ["per_token", "axes"], ["logits"], keepdims=0)],
        "cross_encoder",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 1])],
        [table, axes],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(folder / model_file))
    return folder


needs_fastembed = pytest.mark.skipif(not embed_local.fastembed_available(),
                                     reason="kbctl[local] extra not installed")


def test_missing_extra_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from kbctl.rerank import local as rerank_local

    monkeypatch.setattr(rerank_local, "fastembed_available", lambda: False)
    with pytest.raises(RerankerError, match="fastembed") as info:
        LocalReranker("Xenova/ms-marco-MiniLM-L-6-v2")
    assert info.value.exit_code == 3 and "kbctl[local]" in (info.value.hint or "")


@needs_fastembed
def test_folder_cross_encoder_scores_pairs(tmp_path: Path) -> None:
    folder = build_cross_encoder(tmp_path / "ce")
    rr = create_reranker(f"local:{folder}")
    scores = rr.score("alpha", ["beta beta", "gamma", "delta", "alpha"])
    assert scores == pytest.approx([sigmoid(3.0), sigmoid(-2.0), sigmoid(0.5), 0.5],
                                   abs=1e-6)
    assert str(rr.identity) == f"local/{folder}"


@needs_fastembed
def test_named_cross_encoder_loads_offline_from_the_cache(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from fastembed.rerank.cross_encoder import TextCrossEncoder

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    name = "Xenova/ms-marco-MiniLM-L-6-v2"
    description = next(m for m in TextCrossEncoder.list_supported_models()
                       if m["model"] == name)
    repo = tmp_path / ("models--" + description["sources"]["hf"].replace("/", "--"))
    build_cross_encoder(repo / "snapshots" / ("0" * 40), description["model_file"])
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text("0" * 40)

    rr = LocalReranker(name, cache_dir=str(tmp_path), offline=True)
    assert rr.score("alpha", ["beta", "gamma"]) == pytest.approx(
        [sigmoid(1.5), sigmoid(-2.0)], abs=1e-6)


@needs_fastembed
def test_named_cross_encoder_missing_offline_fails_cleanly(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    rr = LocalReranker("Xenova/ms-marco-MiniLM-L-6-v2", cache_dir=str(tmp_path),
                       offline=True)
    with pytest.raises(RerankerError) as info:
        rr.score("q", ["d"])
    assert info.value.exit_code == 3
    assert "local:/path/to/model-dir" in (info.value.hint or "")


@needs_fastembed
def test_unknown_model_and_broken_folders(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no-such/reranker"):
        create_reranker("local:no-such/reranker")
    with pytest.raises(ConfigError, match="not found"):
        LocalReranker(str(tmp_path / "absent"))
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(RerankerError, match="local reranker folder .* holds no .onnx file"):
        LocalReranker(str(empty)).score("q", ["d"])
    folder = build_cross_encoder(tmp_path / "notok")
    (folder / "tokenizer.json").unlink()
    with pytest.raises(RerankerError, match="tokenizer.json"):
        LocalReranker(str(folder)).score("q", ["d"])
    with pytest.raises(ConfigError, match="base URL"):
        create_reranker(f"local:{folder}", base_url="http://127.0.0.1:1")
