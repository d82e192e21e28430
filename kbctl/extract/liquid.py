"""Jekyll's Liquid → what a reader of the built page sees, without the site that renders it.

Jekyll renders Liquid over the whole page, code blocks included, before the markdown, as
MkDocs' macros plugin renders Jinja, whose outputs and tags are written the same way.
kbctl has neither the site's data nor its includes, so:

- ``{{ output }}`` goes (its value is the site's: ``{{ site.baseurl }}``);
- a tag goes (``{% if %}``, ``{% include nav.html %}``), and what it wraps stays, but a
  ``title``, ``caption``, ``summary`` or ``content`` argument stays as text
  (``{% include note.html content="Back up first." %}``);
- ``{% link guide/x.md %}`` and ``{% post_url 2024-05-01-hello %}`` (a page's address)
  become the file they name, as a markdown link to a file reads elsewhere, instead of a
  link to nothing;
- ``{% highlight ruby %}`` … ``{% endhighlight %}`` becomes a fence in that language;
- ``{% raw %}`` … ``{% endraw %}`` is shown as written (how docs show Liquid itself);
- ``{% comment %}`` … ``{% endcomment %}`` is not shown;
- given a way to read them (``include``), ``{% include x.md key="v" %}`` and
  ``{% include_relative x.md %}`` put that file there, read in turn (``jekyll_includes``).

A tag cannot contain a brace, so a scan never runs past the next one: linear time on any
input.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from .template_args import visible_values

_MARKUP = re.compile(r"\{%([^{}]*)%\}|\{\{([^{}]*)\}\}")


# An include's text, given the tag's name and arguments; None: the tag reads as any other.
Include = Callable[[str, str], "str | None"]


def liquid_to_markdown(text: str, include: Include | None = None) -> str:
    """The page's markdown as its readers see it (see the module docstring)."""
    if "{%" not in text and "{{" not in text:
        return text
    out: list[str] = []
    last = 0
    hidden_until: str | None = None  # inside raw (shown) or comment (not shown)
    for m in _MARKUP.finditer(text):
        tag = m.group(1)
        name, args = _parts(tag) if tag is not None else ("", "")
        if hidden_until is not None:
            if name != hidden_until:
                continue
            if hidden_until == "endraw":
                out.append(text[last:m.start()])
            hidden_until, last = None, m.end()
            continue
        out.append(text[last:m.start()])
        last = m.end()
        if name in ("raw", "comment"):
            hidden_until = f"end{name}"
            continue
        if tag is None:
            continue
        inserted = (include(name, args) if include is not None
                    and name in ("include", "include_relative") else None)
        out.append(_tag_text(name, args) if inserted is None else inserted)
    out.append(text[last:])  # a raw or comment never closed (no build) loses nothing
    return "".join(out)


def _parts(tag: str) -> tuple[str, str]:
    """A tag's name and arguments, whitespace control (``{%- … -%}``) aside."""
    body = tag.strip().removeprefix("-").removesuffix("-").strip()
    name, _, args = body.replace("\n", " ").replace("\t", " ").partition(" ")
    return name, args


def _tag_text(name: str, args: str) -> str:
    if name == "highlight":
        language = args.split(maxsplit=1)[0] if args.split() else ""
        return f"```{language}"
    if name == "endhighlight":
        return "```"
    if name in ("link", "post_url"):
        return args.split(maxsplit=1)[0] if args.split() else ""
    return " ".join(visible_values(args))
