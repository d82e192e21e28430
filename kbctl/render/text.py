"""Text that came from outside (file names, titles, URLs, notes) made safe to show people.

Every human renderer passes such text through ``shown`` before it enters rich markup, so
what a document or file name contains can never become styling or layout.
"""

from __future__ import annotations

from rich.markup import escape
from rich.text import Text


def shown(value: str) -> str:
    """``value`` for a rich markup string: markup brackets escaped."""
    return escape(value)


def styled(markup: str) -> Text:
    """One line of rich markup (whose outside text went through ``shown``)."""
    return Text.from_markup(markup)
