"""Hugo shortcodes → what a reader of the built page sees, without the templates that
render them.

Hugo expands shortcodes (``{{< name args >}}``, ``{{% name args %}}``, closed by
``{{< /name >}}`` or ``/>}}``) everywhere in a page, code blocks included, before the
markdown is rendered; kbctl cannot run the site's templates, so:

- a tag goes, and the text between a pair of tags stays (``{{< note >}}Mind the
  gap{{< /note >}}`` → ``Mind the gap``);
- the values a reader sees on the page stay as text: a ``title``, ``caption``,
  ``summary`` or ``content`` argument (``figure``, ``details``);
- ``{{< highlight LANG >}}`` … ``{{< /highlight >}}`` becomes a fence in that language, as
  the code block it renders;
- a ``tab`` of a ``tabpane`` (Docsy's tabbed panes) is a code block too, in the ``lang`` of
  the tab or its pane, unless the tab or its pane says ``text=true``: Docsy highlights a
  tab's content as code by default, so a YAML sample's ``---`` is no heading;
- an escaped shortcode (``{{</* name */>}}``), which is how docs show one, reads as the
  shortcode itself (``{{< name >}}``), as Hugo prints it.

A tag cannot contain a brace, so a scan never runs past the next one: linear time on any
input.
"""

from __future__ import annotations

import re

from .template_args import named_arguments, visible_values

_TAG = re.compile(r"\{\{([<%])([^{}]*)([>%])\}\}")
_CLOSERS = {"<": ">", "%": "%"}
_NAME = re.compile(r"[A-Za-z_][\w./-]*")


def shortcodes_to_markdown(text: str) -> str:
    """The page's markdown as its readers see it (see the module docstring)."""
    if "{{" not in text:
        return text
    return _TAG.sub(_replacement, _code_tabs(text))


def _code_tabs(text: str) -> str:
    """Each code tab of a ``tabpane`` as a fenced block (see the module docstring)."""
    pane: dict[str, str] | None = None
    tab: tuple[re.Match[str], dict[str, str]] | None = None
    pieces: list[str] = []
    done = 0
    for match in _TAG.finditer(text):
        name, closing, args = _call(match)
        if name == "tabpane":
            pane, tab = (None if closing else named_arguments(args)), None
        elif name == "tab" and pane is not None:
            if not closing:
                tab = (match, named_arguments(args))
            elif tab is not None:
                opened, own = tab
                tab = None
                if _true(own.get("text", pane.get("text", "false"))):
                    continue
                lang = own.get("lang") or pane.get("lang") or (
                    own.get("header", "") if _true(pane.get("langEqualsHeader", "")) else "")
                code = text[opened.end():match.start()].strip("\r\n")
                fence = "`" * max(3, _longest_backtick_run(code) + 1)
                pieces += [text[done:opened.start()], f"\n{fence}{lang.strip()}\n{code}\n{fence}\n"]
                done = match.end()
    return "".join(pieces) + text[done:] if pieces else text


def _call(match: re.Match[str]) -> tuple[str, bool, str]:
    """A tag's shortcode name, whether it closes a pair, and its arguments."""
    body = match.group(2).strip()
    closing = body.startswith("/")
    body = body.lstrip("/").strip()
    if body.endswith("/"):  # self-closing
        body = body[:-1].rstrip()
    name, _, args = body.replace("\n", " ").replace("\t", " ").partition(" ")
    return name, closing, args


def _true(value: str) -> bool:
    return value.strip().lower() == "true"


def _longest_backtick_run(code: str) -> int:
    return max((len(run) for run in re.findall(r"`+", code)), default=0)


def _replacement(match: re.Match[str]) -> str:
    opener, inner, closer = match.groups()
    if _CLOSERS[opener] != closer:
        return match.group(0)  # "{{< … %}}" is no shortcode: Hugo leaves it as text
    body = inner.strip()
    if body.startswith("/*") and body.endswith("*/"):  # escaped: shown as written
        return f"{{{{{opener} {body[2:-2].strip()} {closer}}}}}"
    name, closing, args = _call(match)
    if not _NAME.fullmatch(name):
        return match.group(0)  # not a shortcode call ("{{< >}}", "{{% 50 %}}" in prose)
    if name == "highlight":
        return "```" if closing else f"```{_first_positional(args)}"
    if closing:
        return ""
    return " ".join(visible_values(args))


def _first_positional(args: str) -> str:
    """The language of ``highlight go "linenos=table"``: its first positional argument."""
    first = args.split(maxsplit=1)[0] if args.split() else ""
    return "" if "=" in first else first.strip("\"'`")
