"""Reading JavaScript as far as finding where a construct ends needs: a Docusaurus config's
``{…}`` block, an MDX tag whose attributes hold ``{…}`` expressions, and a config's code
without its comments. Strings (``'…'``, ``"…"``, template literals) and comments (``//``,
``/* … */``) are told apart from code, braces counted.
"""

from __future__ import annotations

from collections.abc import Iterator

CODE, STRING, COMMENT = "code", "string", "comment"
#: Config files written in JavaScript or TypeScript.
JS_SUFFIXES = (".js", ".ts", ".mjs", ".cjs", ".mts", ".cts")


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
        for i, part in self._walk(text, start):
            if part != CODE:
                continue
            ch = text[i]
            if not self.depth and ch in stop:
                return i
            if ch == "{":
                self.depth += 1
            elif ch == "}" and self.depth:
                self.depth -= 1
        return -1

    def _walk(self, text: str, start: int) -> Iterator[tuple[int, str]]:
        """Each character's index from ``start`` with what it is part of: code (a string's
        opening quote included), a string, or a comment (its delimiters included; the
        newline that ends a ``//`` comment is code). State moves past a character only
        once the caller asks for the next one."""
        i = start
        while i < len(text):
            ch = text[i]
            if self._escaped:
                self._escaped = False
                yield i, STRING
            elif self._quote:
                yield i, STRING
                if ch == "\\":
                    self._escaped = True
                elif ch == self._quote:
                    self._quote = ""
            elif self._comment == "//" and ch != "\n":
                yield i, COMMENT
            elif self._comment == "/*":
                if text.startswith("*/", i):
                    yield i, COMMENT
                    i += 1
                    self._comment = ""
                yield i, COMMENT
            elif ch == "/" and text[i + 1:i + 2] in ("/", "*") and not self._comment:
                self._comment = text[i:i + 2]
                yield i, COMMENT
                yield i + 1, COMMENT
                i += 1
            else:  # code, or the newline that ends a // comment
                self._comment = ""
                yield i, CODE
                if ch in "'\"`":
                    self._quote = ch
            i += 1


def without_comments(text: str) -> str:
    """JavaScript with each comment turned into one space, so a setting commented out
    (``// routerMode: 'history',``) is not read as set; strings are kept as written."""
    out: list[str] = []
    in_comment = False
    for i, part in JsScanner()._walk(text, 0):
        if part == COMMENT:
            if not in_comment:
                out.append(" ")
            in_comment = True
        else:
            out.append(text[i])
            in_comment = False
    return "".join(out)


def outer_level(block: str) -> str:
    """A ``{…}`` block's code at its own level: the insides of blocks nested in it and its
    comments left out (their braces kept), so a key is read where it belongs. In
    ``{ editUrl: ({ docPath }) => docPath, path: '../docs' }`` ``path`` is at the block's
    level; in ``{ docs: { sidebar: { path: 'x' } } }`` no ``path`` is."""
    out: list[str] = []
    depth = 0
    for i, part in JsScanner()._walk(block, 0):
        ch = block[i]
        if part == COMMENT:
            continue
        if part == CODE and ch == "{":
            depth += 1
            if depth <= 2:
                out.append(ch)
        elif part == CODE and ch == "}" and depth:
            depth -= 1
            if depth <= 1:
                out.append(ch)
        elif depth <= 1:
            out.append(ch)
    return "".join(out)
