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
- an escaped shortcode (``{{</* name */>}}``), which is how docs show one, reads as the
  shortcode itself (``{{< name >}}``), as Hugo prints it.

A tag cannot contain a brace, so a scan never runs past the next one: linear time on any
input.
"""

from __future__ import annotations

import re

from .template_args import visible_values

_TAG = re.compile(r"\{\{([<%])([^{}]*)([>%])\}\}")
_CLOSERS = {"<": ">", "%": "%"}
_NAME = re.compile(r"[A-Za-z_][\w./-]*")


def shortcodes_to_markdown(text: str) -> str:
    """The page's markdown as its readers see it (see the module docstring)."""
    if "{{" not in text:
        return text
    return _TAG.sub(_replacement, text)


def _replacement(match: re.Match[str]) -> str:
    opener, inner, closer = match.groups()
    if _CLOSERS[opener] != closer:
        return match.group(0)  # "{{< … %}}" is no shortcode: Hugo leaves it as text
    body = inner.strip()
    if body.startswith("/*") and body.endswith("*/"):  # escaped: shown as written
        return f"{{{{{opener} {body[2:-2].strip()} {closer}}}}}"
    closing = body.startswith("/")
    body = body.lstrip("/").strip()
    if body.endswith("/"):  # self-closing
        body = body[:-1].rstrip()
    name, _, args = body.replace("\n", " ").replace("\t", " ").partition(" ")
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
