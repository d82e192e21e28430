"""Text that came from outside (file names, titles, URLs, notes) made safe to show people.

Every human renderer passes such text through ``shown`` before it enters rich markup, or
``plain`` when it is written as is, so what a document or file name contains can never
become styling or layout: markup brackets and control characters (newlines too, unless
the text is multi-line by nature) are shown escaped, and emoji codes (``:memo:``) are not
read.
"""

from __future__ import annotations

from collections.abc import Mapping

from rich.markup import escape
from rich.text import Text

from ..hygiene import escape_control


def shown(value: str, *, keep_newlines: bool = False) -> str:
    """``value`` for a rich markup string: markup brackets and control characters escaped."""
    return escape(escape_control(value, keep_newlines=keep_newlines))


def plain(value: str, *, keep_newlines: bool = False) -> str:
    """``value`` for output written without markup: control characters escaped."""
    return escape_control(value, keep_newlines=keep_newlines)


def styled(markup: str) -> Text:
    """One line of rich markup (whose outside text went through ``shown``). Emoji codes
    stay text: a title's ``:memo:`` is what its page shows."""
    return Text.from_markup(markup, emoji=False)


def filter_text(filters: Mapping[str, str]) -> str:
    """Metadata filters as a reader writes them: ``lang=en, section=api``."""
    return ", ".join(f"{key}={value}" for key, value in filters.items())
