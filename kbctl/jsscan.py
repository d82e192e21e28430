"""Reading JavaScript as far as finding where a construct ends needs: a Docusaurus config's
``{…}`` block, an MDX tag whose attributes hold ``{…}`` expressions. Strings (``'…'``,
``"…"``, template literals) and comments (``//``, ``/* … */``) are skipped, braces counted.
"""

from __future__ import annotations


class JsScanner:
    """Scans text a piece at a time (a config whole, a page line by line), keeping its
    place in a string, a comment or nested braces from one piece to the next. Each
    character is looked at once."""

    def __init__(self) -> None:
        self.depth = 0
        self._quote = ""  # the open string's quote
        self._comment = ""  # "//" or "/*" while one is open
        self._escaped = False

    def find(self, text: str, stop: str, start: int = 0) -> int:
        """Index of the first character of ``stop`` in ``text`` (from ``start``) outside
        strings, comments and braces opened after the scan began; -1 when there is none
        yet. A closing ``}`` in ``stop`` is found before it closes anything."""
        i = start
        while i < len(text):
            ch = text[i]
            if self._escaped:
                self._escaped = False
            elif self._quote:
                if ch == "\\":
                    self._escaped = True
                elif ch == self._quote:
                    self._quote = ""
            elif self._comment == "//":
                if ch == "\n":
                    self._comment = ""
            elif self._comment == "/*":
                if text.startswith("*/", i):
                    self._comment = ""
                    i += 1
            elif not self.depth and ch in stop:
                return i
            elif ch in "'\"`":
                self._quote = ch
            elif text.startswith("//", i) or text.startswith("/*", i):
                self._comment = text[i:i + 2]
                i += 1
            elif ch == "{":
                self.depth += 1
            elif ch == "}" and self.depth:
                self.depth -= 1
            i += 1
        return -1
