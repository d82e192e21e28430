"""Forget recorded sources: resync stops running them, and their pages leave the KB."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import InputError
from ..store.knowledge import KnowledgeStore


@dataclass
class ForgetReport:
    namespace: str
    forgotten: list[dict[str, str]] = field(default_factory=list)  # {id, kind, target}
    pages_deleted: int = 0
    chunks_deleted: int = 0
    kept_pages: bool = False


def forget(store: KnowledgeStore, namespace: str, target: str, *,
           keep_pages: bool = False) -> ForgetReport:
    """Remove the recorded definitions of ``namespace`` whose target (or id) is ``target``,
    and, unless ``keep_pages``, the pages they stored. The caller holds the namespace's
    write lock, so no ingest or resync of it runs meanwhile.

    Raises ``InputError`` naming the recorded targets when none matches.
    """
    recorded = store.definitions.recorded(namespace)
    matching = ([d for d in recorded if target in (d.target, d.id)]
                or [d for d in recorded if _names(target, d.target)])
    if not matching:
        known = ", ".join(sorted({d.target for d in recorded})[:10]) or "none"
        elsewhere = sorted({d.namespace for d in store.definitions.recorded()
                            if _names(target, d.target) or target == d.id} - {namespace})
        hint = (f"it is recorded in namespace {', '.join(map(repr, elsewhere))}: pass -n"
                if elsewhere else "`kbctl status` lists them; give the target as recorded")
        raise InputError(f"namespace '{namespace}' has no recorded source '{target}' "
                         f"(its recorded targets: {known})", hint=hint)
    report = ForgetReport(namespace=namespace, kept_pages=keep_pages)
    for d in matching:
        if not keep_pages:
            for page in store.documents.stored(namespace, d.id):
                report.chunks_deleted += store.documents.delete(namespace, page.ref)
                report.pages_deleted += 1
        store.definitions.forget(namespace, d.id)
        report.forgotten.append({"id": d.id, "kind": d.kind, "target": d.target})
    return report


def _names(given: str, recorded: str) -> bool:
    """``given`` names the ``recorded`` target, but for a trailing slash (``docs/`` for
    ``docs``, as a shell's completion writes it)."""
    return given == recorded or (given.rstrip("/") == recorded.rstrip("/")
                                 and given.rstrip("/") != "")
