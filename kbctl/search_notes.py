"""How a search's findings are said to people and agents: the words matched by spelling,
the words nothing uses, a question of stop words only, the synonyms added. The store
returns the findings as data (``kbctl.store.spelling``, ``kbctl.store.thesaurus``); the
query and eval renderers, the agent's tools and memory search all phrase them here, so a
note reads the same wherever it is shown."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from .results import QueryResult

STOP_WORDS_ONLY = ("the question has no word to search for: its words are too common to be "
                   "searched for (stop words such as 'how', 'the', 'is') or it is only symbols "
                   "and punctuation: name what it is about")
# What a synonyms note lists: the first rules applied, and the first words each added.
NOTE_RULES = 8
NOTE_WORDS = 6


def spelling_notes(corrected: Mapping[str, str], unmatched: Sequence[str],
                   searchable: bool = True) -> list[str]:
    """What a question's spelling check found: the words as typed and the indexed words
    (stems, hence the ellipsis) they were matched as, the ones nothing uses, and a question
    made only of stop words (it finds nothing, and would not say why)."""
    out = [] if searchable else [STOP_WORDS_ONLY]
    if corrected:
        pairs = ", ".join(f"{typed} → {stem}…" for typed, stem in corrected.items())
        out.append(f"words no passage uses were matched by spelling: {pairs}")
    if unmatched:
        out.append(f"no passage uses: {', '.join(unmatched)}")
    return out


def synonym_notes(related: Mapping[str, Sequence[str]]) -> list[str]:
    """What synonyms a search added (``lexical.related_words``)."""
    if not related:
        return []
    pairs = [f"{_listed(added, NOTE_WORDS)} (for {used})"
             for used, added in list(related.items())[:NOTE_RULES]]
    more = len(related) - NOTE_RULES
    return [f"also looked for synonyms: {'; '.join(pairs)}"
            + (f"; and for {more} more words" if more > 0 else "")]


def question_notes(result: QueryResult) -> list[str]:
    """A retrieval result's spelling notes, then its synonyms note."""
    return (spelling_notes(result.corrected, result.unmatched, result.searchable)
            + synonym_notes(result.related))


def _listed(words: Sequence[str], most: int) -> str:
    shown = ", ".join(words[:most])
    return shown + (f" and {len(words) - most} more" if len(words) > most else "")
