"""Holding an eval run to the retriever its gate was written for.

Pins come from the suites (``defaults.retriever``), ``kbctl.yaml`` (``eval.retriever``)
and ``--retriever``; all of them must hold. The comparison is by provider and model (and
dimensions when the pin names them), as ``kbctl status`` shows a KB's embedder.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..embed.registry import parse_spec
from ..errors import ConfigError, EmbedderError, KbctlError, RerankerError, RetrieverMismatch
from ..evals.retriever import MeasuredRetriever, RetrieverPin, pin_from_text
from ..rerank.registry import parse_rerank_spec

RETRIEVER_FLAG = "--retriever"


def flag_pin(text: str | None) -> RetrieverPin | None:
    """The pin ``--retriever`` gives, checked like the suites' (exit 2 naming the flag)."""
    if text is None:
        return None
    pin = pin_from_text(text, RETRIEVER_FLAG, RetrieverMismatch)
    check_specs(pin)
    return pin


def check_specs(pin: RetrieverPin) -> None:
    """Refuse a pin whose embedder or reranker spec no provider reads, naming its place."""
    try:
        if pin.embedder is not None:
            parse_spec(pin.embedder)
        if pin.rerank is not None and pin.rerank.lower() != "none":
            parse_rerank_spec(pin.rerank)
    except ConfigError as exc:
        raise RetrieverMismatch(f"{pin.source}: retriever: {exc.message}",
                                hint=exc.hint) from None


def collect(suite_pins: Iterable[RetrieverPin], configured: RetrieverPin | None,
            flag: str | None) -> tuple[RetrieverPin, ...]:
    """Every pin of a run, each checked before anything is opened."""
    pins = [*suite_pins, *(p for p in (configured, flag_pin(flag)) if p is not None)]
    for pin in pins:
        check_specs(pin)
    return tuple(pins)


def require(pins: Iterable[RetrieverPin], measured: MeasuredRetriever) -> None:
    """Raise ``RetrieverMismatch`` for the first pin the measured retriever breaks."""
    for pin in pins:
        problems = _differences(pin, measured)
        if problems:
            raise RetrieverMismatch(
                f"{pin.source}: the gate was written for {pin.describe()}, but this run "
                f"would measure {measured.describe()} ({'; '.join(problems)})",
                hint=_hint(pin, measured))


def unavailable(pins: Iterable[RetrieverPin], error: KbctlError) -> KbctlError:
    """An embedder or reranker a pin needs that cannot run here (no key, no server) is the
    gate's refusal (exit 2), not a fallback; without a pin the error stands as it is."""
    pinned = [pin for pin in pins if pin.embedder is not None or pin.rerank is not None]
    if not pinned or not isinstance(error, EmbedderError | RerankerError):
        return error
    pin = pinned[0]
    return RetrieverMismatch(f"{pin.source}: the gate was written for {pin.describe()}, "
                             f"which cannot run here: {error.message}",
                             hint=error.hint or "give the job the provider's key or server")


def _differences(pin: RetrieverPin, measured: MeasuredRetriever) -> list[str]:
    problems = []
    if pin.embedder is not None and not _same_embedder(pin.embedder, measured.embedder):
        problems.append(f"embedder {measured.embedder}, not {pin.embedder}")
    if pin.fusion is not None:
        if measured.lexical:
            problems.append(f"a lexical-only knowledge base fuses nothing ({pin.fusion} "
                            "was required)")
        elif pin.fusion != measured.fusion:
            problems.append(f"fusion {measured.fusion}, not {pin.fusion}")
    if pin.rerank is not None and not _same_reranker(pin.rerank, measured.reranker):
        problems.append(f"reranker {measured.reranker}, not {pin.rerank}")
    return problems


def _same_embedder(spec: str, identity: str) -> bool:
    wanted = parse_spec(spec)
    if wanted.provider == "none" or identity == "none":
        return wanted.provider == "none" and identity == "none"
    have = parse_spec(identity)  # identities read back as specs ("provider/model@N")
    return (wanted.provider, wanted.model) == (have.provider, have.model) and \
        wanted.dimensions in (None, have.dimensions)


def _same_reranker(spec: str, identity: str) -> bool:
    if spec.lower() == "none" or identity == "none":
        return spec.lower() == identity == "none"
    provider, model = parse_rerank_spec(spec)
    return identity.lower() in (f"{provider}/{model}".lower(), f"{provider}:{model}".lower())


def _hint(pin: RetrieverPin, measured: MeasuredRetriever) -> str:
    if pin.embedder is not None and not _same_embedder(pin.embedder, measured.embedder):
        if measured.lexical:
            return (f"build the knowledge base with `--embedder {pin.embedder}` (a CI job "
                    "needs the provider's key; without one kbctl builds a lexical-only KB)")
        return (f"build the knowledge base with `--embedder {pin.embedder}`, or change "
                f"the pin at {pin.source} if the gate should measure {measured.embedder}")
    if pin.fusion is not None and not measured.lexical:
        return f"run with `--fusion {pin.fusion}`, or set `fusion:` in kbctl.yaml"
    if pin.rerank is not None:
        return f"run with `--rerank {pin.rerank}`" if pin.rerank.lower() != "none" \
            else "run without --rerank"
    return f"change the pin at {pin.source}"
