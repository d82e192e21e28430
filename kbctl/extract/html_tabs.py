"""Content tabs in built HTML: each panel read under its tab's label.

A page shows one tab of a set at a time; its HTML holds the labels in one place (a tab
list) and the panels in another. Read in document order, the labels run together
(``npmyarnpnpm``) and the panels follow unlabelled, so which command is yarn's is lost.
Here each panel is opened by its label, ``**npm**``, as the files source reads a tab of
MkDocs' or Docusaurus' sources, and the label list is not read. The shapes:

- ARIA (Docusaurus, Starlight, sphinx-tabs, Bootstrap/Docsy): ``role="tab"`` elements in a
  ``role="tablist"``, matched to ``role="tabpanel"`` elements by ``aria-controls``, by
  ``aria-labelledby``, or else in order;
- pymdownx.tabbed (Material): ``.tabbed-set`` with ``label`` elements (in
  ``.tabbed-labels`` in its alternate style) and ``.tabbed-block`` or ``.tabbed-content``
  panels, in order;
- sphinx-design: ``.sd-tab-set`` with ``label.sd-tab-label`` and ``.sd-tab-content``;
  sphinx-inline-tabs the same without the ``sd-`` prefixes;
- VitePress code groups: ``.vp-code-group`` with labels in ``.tabs`` and one block each
  in ``.blocks``.

A set whose labels and panels do not pair up one to one is left as it is, and so are the
sets past the first ``MAX_TAB_SETS`` of a page.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field

from lxml import etree

_WS = re.compile(r"\s+")
# Class names of the non-ARIA sets: (set, label, panel, element that holds the labels)
_SETS = (
    ("tabbed-set", "label", "tabbed-block", "tabbed-labels"),
    ("sd-tab-set", "label", "sd-tab-content", None),
    ("tab-set", "label", "tab-content", None),  # sphinx-inline-tabs (Furo, pip, pytest)
    ("vp-code-group", "label", None, "tabs"),
)
MAX_TAB_SETS = 200
MAX_NEIGHBOURS = 64
_FIND = etree.XPath(
    "//*[@role='tablist'] | //*[contains(@class, 'tabbed-set') or contains(@class, "
    "'tab-set') or contains(@class, 'vp-code-group')]")


@dataclass
class Tabs:
    """Where a page's tab sets put their labels: the label of each panel, and the
    elements that only list labels (read as nothing)."""

    labels: dict[etree._Element, str] = field(default_factory=dict)
    label_lists: set[etree._Element] = field(default_factory=set)


def find_tabs(root: etree._Element) -> Tabs:
    """The tab sets of ``root``'s tree (see the module docstring)."""
    tabs = Tabs()
    found = _FIND(root)[:MAX_TAB_SETS]
    panels: dict[str, dict[str, etree._Element]] = {}
    if any(el.get("role") == "tablist" for el in found):
        marked = [p for p in root.iter() if p.get("role") == "tabpanel"]
        panels["id"] = {p.get("id"): p for p in marked if p.get("id")}
        panels["aria-labelledby"] = {p.get("aria-labelledby"): p for p in marked
                                     if p.get("aria-labelledby")}
    for el in found:
        if el.get("role") == "tablist":
            _aria(el, panels, tabs)
        else:
            _classed(el, tabs)
    return tabs


def _label(el: etree._Element) -> str:
    return _WS.sub(" ", "".join(el.itertext())).strip()


def _classes(el: etree._Element) -> list[str]:
    return (el.get("class") or "").split()


def _pair(labels: list[str], panels: list[etree._Element], tabs: Tabs) -> bool:
    if not panels or len(labels) != len(panels) or not all(labels):
        return False
    for panel, label in zip(panels, labels, strict=True):
        tabs.labels.setdefault(panel, label)
    return True


def _aria(tablist: etree._Element, panels_by: dict[str, dict[str, etree._Element]],
          tabs: Tabs) -> None:
    """A tab list with ``role="tab"`` items and its ``role="tabpanel"`` panels
    (``panels_by``: the page's panels by ``id`` and by ``aria-labelledby``)."""
    items = [t for t in tablist.iter() if t.get("role") == "tab"]
    if not items:
        return
    panels = [panels_by["id"].get(t.get("aria-controls") or "") for t in items]
    if not all(p is not None for p in panels):
        panels = [panels_by["aria-labelledby"].get(t.get("id") or "") for t in items]
    if not all(p is not None for p in panels):
        panels = _panels_in_order(tablist)
    if _pair([_label(t) for t in items], [p for p in panels if p is not None], tabs):
        tabs.label_lists.add(tablist)


def _panels_in_order(tablist: etree._Element) -> list[etree._Element]:
    """The panels of a tab list that names none: the run of them that follows it, as its
    siblings or their children (Docusaurus: the next ``div`` holds them; sphinx-tabs: they
    are siblings), the tab list's own wrapper's (up to three levels) when it has none.
    Only ``MAX_NEIGHBOURS`` siblings and children each are looked at: a page of hundreds
    of tab lists in one huge element must not be walked whole for each."""
    node: etree._Element | None = tablist
    for _ in range(3):
        if node is None:
            return []
        panels: list[etree._Element] = []
        for sibling in itertools.islice(node.itersiblings(), MAX_NEIGHBOURS):
            found = [sibling] if sibling.get("role") == "tabpanel" else [
                c for c in itertools.islice(sibling, MAX_NEIGHBOURS)
                if isinstance(c.tag, str) and c.get("role") == "tabpanel"]
            if not found and panels:
                break  # the run of panels ended
            panels += found
        if panels:
            return panels
        node = node.getparent()
    return []


def _classed(tab_set: etree._Element, tabs: Tabs) -> None:
    """A set known by its class names: labels and panels paired in order."""
    classes = _classes(tab_set)
    for set_class, label_tag, panel_class, list_class in _SETS:
        if set_class not in classes:
            continue
        holder = _child_with(tab_set, list_class) if list_class else tab_set
        if holder is None:
            if set_class != "tabbed-set":
                return
            holder = tab_set  # pymdownx.tabbed's first style: labels among the panels
        labels = [el for el in holder if el.tag == label_tag]
        if panel_class is None:  # VitePress: every child of .blocks is a panel
            blocks = _child_with(tab_set, "blocks")
            panels = [] if blocks is None else [el for el in blocks if isinstance(el.tag, str)]
        else:
            panels = [el for el in tab_set.iter() if panel_class in _classes(el)
                      and _owner(el, set_class) is tab_set]
            if not panels and set_class == "tabbed-set":
                panels = [el for el in tab_set.iter() if "tabbed-content" in _classes(el)
                          and _owner(el, set_class) is tab_set]
        if _pair([_label(el) for el in labels], panels, tabs):
            tabs.label_lists.update([holder] if holder is not tab_set else labels)
        return


def _child_with(el: etree._Element, cls: str) -> etree._Element | None:
    return next((c for c in el if isinstance(c.tag, str) and cls in _classes(c)), None)


def _owner(el: etree._Element, set_class: str) -> etree._Element | None:
    """The nearest enclosing tab set of ``el``."""
    return next((a for a in el.iterancestors() if set_class in _classes(a)), None)
