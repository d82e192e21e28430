"""``files`` sources: a file, folder or glob of .md/.mdx/.markdown/.rst/.html/.txt files.

With ``base_url``, a file cites to the address its docs generator publishes it at, and
each heading to the id that generator renders (``kbctl.generators``: detected from the
project's marker files, or chosen with the ``generator`` option), so citations from a
local build equal the live site's. Without it, refs are stable ``kb://ROOT/relpath``.
Nothing outside the root is read: every path is resolved and checked, symlinks included.
Only regular files are read: a FIFO, socket or device, a symlink loop or a broken link is
skipped with a note (and opened, if at all, without blocking), so one odd entry never
hangs or sinks the run. Two files that would cite the same address both fail, naming
each other, instead of one silently replacing the other.
"""

from __future__ import annotations

import dataclasses
import difflib
import errno
import fnmatch
import glob
import itertools
import os
import stat
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath
from typing import Any, ClassVar

from ..encoding import decode_text
from ..errors import InputError, SourceError
from ..extract import HTML_READER
from ..extract.includes import Unresolved, outside_project, unresolved_includes
from ..extract.sphinx_titles import SphinxTitles
from ..generators import (
    AUTO,
    GENERATORS,
    Site,
    likely_site,
    page_path,
    resolve_site,
)
from ..generators.mkdocs import autodoc_stub
from ..generators.sphinx import source_suffix
from ..hygiene import describe_bad_char, drop_bad_chars, dropped_note, first_few
from ..projectfiles import (
    NEVER_DOCS,
    IgnoreFiles,
    OutsideBase,
    inside,
    is_folder,
    is_regular,
    open_within,
)
from . import versions
from .base import (
    MAX_FILE_BYTES,
    READER,
    Document,
    Expansion,
    Leaf,
    Loaded,
    PreviousMeta,
    SourceKind,
    SourceSpec,
)
from .options import SourceOptions, boolean, choice, http_url, option, strings, version_name
from .readers import INCLUDES, READERS, UNTIL, FilePage, Reader, reader_for, reader_named
from .weburl import NOT_IN_PATH, escaped

_READ = ", ".join(READERS)
_GLOB_CHARS = set("*?[")
# Past MAX_TRACKED_INCLUDES files a page includes, its INCLUDES stamp is null: such a
# page is read again every time.
MAX_TRACKED_INCLUDES = 1000
# Folders no docs page lives in: a JavaScript project's installed packages.
@dataclass(frozen=True)
class FilesOptions(SourceOptions):
    """``base_url``: the public URL the pages are published at, so citations match the
    live site; ``exclude``: globs of relative paths to skip; ``generator``: the docs
    generator whose URLs and heading ids to cite (``auto``: detected); ``ignore_noindex``:
    keep HTML pages whose head marks them noindex (a built site's print or search page),
    as web sources do; ``version``, ``lang``: which copy of pages published once per
    version or language to keep (``all``: every one), chosen as web sources choose."""

    kind: ClassVar[str] = "files"
    base_url: str | None = option(None, http_url)
    exclude: tuple[str, ...] = option((), strings("a list of glob patterns"))
    generator: str = option(AUTO, choice(AUTO, *GENERATORS))
    ignore_noindex: bool = option(False, boolean)
    version: str | None = option(None, version_name)
    lang: str | None = option(None, version_name)

    @classmethod
    def check_present(cls, target: str) -> None:
        """Asked before a first ingest: a missing folder there is a mistyped path."""
        if not is_folder(split_root(target)[0]):
            raise _missing_root(target, recorded=False)


@dataclass(frozen=True)
class _File:
    """What a files leaf carries: the file as walked, the folder it was found in
    (resolved), its path under that folder (where its generator looks it up), the site
    that publishes it, the source's options, and an error known before it is read (two
    files citing one address, a profile failing on it)."""

    path: Path
    root: Path
    published: Path
    site: Site
    options: FilesOptions
    error: SourceError | None = None
    titles: SphinxTitles | None = None  # the project's, for :doc: and :ref: without one


class FilesSource:
    """Expands a file, folder or glob into files and loads them one by one."""

    def __init__(self, *, max_bytes: int = MAX_FILE_BYTES, full: bool = False) -> None:
        self.max_bytes = max_bytes
        # ``resync --full``: every file read, its size and mtime set aside (a copy that
        # keeps them, rsync -a or tar -x, brings new text under the old stamp)
        self.full = full

    def expand(self, spec: SourceSpec) -> Expansion:
        root, pattern = split_root(spec.target)
        if not is_folder(root):
            raise _missing_root(spec.target)
        if is_regular(Path(spec.target)) and file_format(Path(spec.target)) is None:
            raise InputError(f"files source: {spec.target} is not a kind of file kbctl reads "
                             f"({_READ})")
        options: FilesOptions = spec.options  # type: ignore[assignment]
        excludes = options.exclude
        real_root = root.resolve()
        site = resolve_site(real_root, options.generator)
        notes: list[str] = []
        readable: list[tuple[str, Path]] = []
        # With no generator to say what is published, what git does not track is no page
        # (a JavaScript project's build output, a virtualenv); a generator decides itself.
        ignores = (IgnoreFiles(root) if site.generator == "plain"
                   and not is_regular(Path(spec.target)) else None)
        excluded = dict.fromkeys(excludes, 0)  # files each pattern left out
        unlisted: list[Path] = []  # folders the walk could not read through
        for path in _walk(root, pattern, notes, ignores, unlisted):
            rel = path.relative_to(root).as_posix()
            if page_reader(path, site) is None:
                continue
            matched = next((ex for ex in excludes if fnmatch.fnmatch(rel, ex)), None)
            if matched is not None:
                excluded[matched] += 1
                continue
            skip = "the name is not UTF-8" if describe_bad_char(rel) else (
                _not_a_regular_file(path))
            if skip:
                notes.append(f"skipped {_printable(path)}: {skip}")
                continue
            readable.append((rel, path))
        leaves, unpublished = _leaves(site, readable, real_root, options)
        if (not leaves and unpublished and options.generator == AUTO
                and site.marker is not None and site.project != real_root):
            # The project above publishes nothing from here: its build output (book/, site/,
            # _build/html…) or a folder beside its content. Read as the files it holds.
            notes.append(f"files {spec.target}: not content of the {site.generator} project "
                         f"at {site.project}; read with the plain rule (a built site "
                         f"keeps its file names)")
            site = resolve_site(real_root, "plain")
            leaves, unpublished = _leaves(site, readable, real_root, options)
        leaves, dropped = _one_copy_each(f"files {spec.target}", leaves, options, notes,
                                         site.settings.get("copies_in_folders", True))
        unmatched = [ex for ex, n in excluded.items() if not n]
        if unmatched:  # a typo, or a path written from elsewhere than the folder
            notes.append(f"files {spec.target}: --exclude {', '.join(map(repr, unmatched))} "
                         f"matched no file (patterns match paths relative to "
                         f"{_printable(root)}, e.g. 'drafts/*')")
        if site.generator != "plain":
            notes.insert(0, f"files {spec.target}: generator {site.describe()}")
        elif options.generator == AUTO and leaves:
            notes[:0] = _likely_note(spec.target, leaves, real_root, options)
        if unpublished:
            notes.append(f"files {spec.target}: {unpublished} file(s) that {site.generator} "
                         f"does not publish as pages were skipped")
        elsewhere = _published_elsewhere(site, real_root) if not leaves else []
        if elsewhere:  # said last: a run that reads nothing fails with its last note
            notes.append(f"files {spec.target}: the {site.generator} project here publishes "
                         f"the pages in {', '.join(map(_printable, elsewhere))}, outside this "
                         f"folder; ingest that folder (with the same --base-url)")
        elif not leaves and not unpublished:
            notes.append(f"files {spec.target}: found no file to read ({_READ})")
        if unlisted:  # their pages are not gone: none of the source's is deleted this run
            notes.append(f"files {spec.target}: {len(unlisted)} folder(s) could not be read "
                         f"through, so no page of this source is deleted as gone this run")
        return Expansion(leaves=_refuse_collisions(leaves), notes=notes, dropped=dropped,
                         info={"generator": site.generator}, complete=not unlisted)

    def load(self, leaves: Sequence[Leaf], previous: PreviousMeta) -> Iterator[Loaded]:
        for leaf in leaves:
            file: _File = leaf.hint
            if file.error is not None:
                yield Loaded(leaf=leaf, error=file.error)
                continue
            try:
                yield self._load_one(leaf, file, previous(leaf.ref))
            except SourceError as exc:
                yield Loaded(leaf=leaf, error=exc)
            except Exception as exc:  # noqa: BLE001 - a reader's bug fails one file, not the run
                yield Loaded(leaf=leaf, error=SourceError(
                    f"{file.path}: cannot read: {type(exc).__name__}: {exc}"))

    def _load_one(self, leaf: Leaf, file: _File, prev: dict[str, Any] | None) -> Loaded:
        path, real_root = file.path, file.root
        try:
            fd = open_within(path, real_root)
        except RuntimeError as exc:  # a symlink loop
            raise SourceError(f"{path}: cannot resolve: {exc}") from exc
        except OutsideBase as exc:
            raise SourceError(f"{path}: resolves outside the source root ({exc.real})") from exc
        except OSError as exc:
            raise SourceError(f"{path}: cannot read: {exc.strerror or exc}") from exc
        with os.fdopen(fd, "rb") as handle:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise SourceError(f"{path}: {_kind_of(st.st_mode)}, not a regular file")
            stamp: dict[str, Any] = {"size": st.st_size, "mtime_ns": st.st_mtime_ns}
            html = file_format(path) == "html"
            if html:  # a page stored by an older HTML reading is read again
                stamp[READER] = HTML_READER
            if prev and not self.full and all(prev.get(key, 1 if key == READER else None) == value
                            for key, value in stamp.items()) and not _lapsed(prev) \
                    and _includes_unchanged(prev):
                return Loaded(leaf=leaf, not_modified=True, meta=stamp)
            if st.st_size > self.max_bytes:
                raise SourceError(f"{path}: {st.st_size} bytes is over the "
                                  f"{self.max_bytes} byte limit for one file")
            try:
                data = handle.read(self.max_bytes + 1)
            except OSError as exc:
                raise SourceError(f"{path}: cannot read: {exc.strerror or exc}") from exc
        if len(data) > self.max_bytes:
            raise SourceError(f"{path}: over the {self.max_bytes} byte limit for one file")
        if html:
            from .directives import file_directives  # lxml: only when HTML shows up

            head = file_directives(data)
            if head.refresh is not None:
                return Loaded(leaf=leaf, dropped="redirect",
                              note=f"{path}: a redirect page to {head.refresh}, skipped")
            if head.noindex and not file.options.ignore_noindex:
                return Loaded(leaf=leaf, dropped="noindex",
                              note=f"{path}: skipped: marked noindex ({head.noindex}; "
                                   "--ignore-noindex keeps such pages)")
        # dropped here, and said: the markdown reader would make a NUL U+FFFD, unsaid
        text, removed = drop_bad_chars(decode_text(data, source=str(path)))
        with outside_project() as outside, unresolved_includes() as missing:
            doc = _document(leaf, file, text, stamp)
        if doc is None:
            return Loaded(leaf=leaf, dropped="not a page",
                          note=f"{path}: {file.site.generator} does not publish it as a page "
                               "(its front matter or the site's config leaves it out), "
                               "skipped")
        bad = dropped_note(_printable(path), removed) if removed else ""
        notes = [n for n in (bad, _left_out(path, outside), _unresolved_note(path, missing),
                             _stub_note(path, file.site, text)) if n]
        return Loaded(leaf=leaf, document=doc, meta=stamp, note="; ".join(notes),
                      unresolved=tuple({"file": _printable(m.file), "line": m.line,
                                        "target": m.target, "reason": m.reason}
                                       for m in missing))


def _likely_note(target: str, leaves: Sequence[Leaf], real_root: Path,
                 options: FilesOptions) -> list[str]:
    """The warning for a folder read with the plain rule that looks like a generator's
    project (``likely_site``): what it cites now and what that generator would cite, said
    as the run starts, before a knowledge base fills with addresses the site never had."""
    likely = likely_site(real_root)
    if likely is None:
        return []
    for leaf in leaves:
        file: _File = leaf.hint
        try:
            page = page_path(likely, file.published)
        except SourceError:
            continue
        if page is None:
            continue
        base = options.base_url.rstrip("/") + "/" if options.base_url else ""
        evidence = likely.settings.get("guessed") or str(likely.marker)
        return [f"files {target}: warning: no docs generator's config found, so pages are "
                f"cited by their paths (plain rule: {leaf.url}); this looks like a "
                f"{likely.generator} project ({evidence}): `--generator {likely.generator}` "
                f"would cite {base}{page}"]
    return []


def _published_elsewhere(site: Site, real_root: Path) -> list[Path]:
    """The folders ``site`` publishes pages from that lie outside ``real_root``: its docs
    folders (Docusaurus' ``path: '../docs'`` beside ``website/``), else its content."""
    if site.marker is None:
        return []
    docs = [site.content / d.path for d in site.settings.get("docs") or ()
            if isinstance(getattr(d, "path", None), str)]
    out = []
    for folder in docs or [site.content]:
        try:
            real = folder.resolve()
        except (OSError, RuntimeError, ValueError):  # a path no file system holds (a NUL)
            continue
        if not inside(real_root, real):
            out.append(real)
    return out


def _stub_note(path: Path, site: Site, text: str) -> str:
    """The note for a page that is little but mkdocstrings directives, or none: without
    it, a folder ingest stored the whole API reference as near-empty pages, unsaid."""
    stub = autodoc_stub(site, text)
    if stub is None:
        return ""
    name, count = stub
    objects = f"`::: {name}`" + (f" and {count - 1} more" if count > 1 else "")
    return (f"{_printable(path)}: its API reference ({objects}) is rendered by mkdocstrings "
            f"at build time, not in this file: ingest the built site to search it")


def _left_out(path: Path, outside: set[Path]) -> str:
    """The note for a page whose includes lie outside its project, or none."""
    if not outside:
        return ""
    named = first_few(sorted(_printable(p) for p in outside))
    return (f"{_printable(path)}: left out what it includes from outside the project "
            f"({named}): a project's files are those of its git repository, or of "
            f"its own folder outside one (a tarball, a git archive); ingest from a git "
            f"checkout to take them in")


def _unresolved_note(path: Path, missing: Sequence[Unresolved]) -> str:
    """The note for a page whose includes could not all be resolved, or none: each was
    left out of its text (listed whole in the report's ``unresolved_includes``)."""
    if not missing:
        return ""
    count = len(missing) + getattr(missing, "more", 0)
    named = first_few([f"{_printable(m.file) if m.file != path else 'line'}"
                       f"{':' if m.file != path else ' '}{m.line} {m.target} ({m.reason})"
                       for m in missing])
    return (f"{_printable(path)}: left out {count} include(s) that could not be resolved: "
            f"{named}")


def _not_a_regular_file(path: Path) -> str | None:
    """Why ``path`` is skipped (a symlink loop, a broken link, a FIFO...), or None."""
    try:
        st = os.stat(path)  # follows links; never opens, so a FIFO cannot block
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "a symlink loop"
        if exc.errno == errno.ENOENT and os.path.islink(path):
            return "a broken symlink"
        return None  # not readable now (a permission): its read fails it, and keeps its page
    if not stat.S_ISREG(st.st_mode):
        return f"{_kind_of(st.st_mode)}, not a regular file"
    return None


def _missing_root(target: str, *, recorded: bool = True) -> InputError:
    """A target whose folder is not there; a relative one says where it was looked for.
    A ``recorded`` definition (resync) is read from wherever it runs (a cron job's home),
    so its hint is about that; a first ingest's is about the path as typed."""
    message = f"files source: {target} is not a file, a directory or a glob whose folder exists"
    if Path(target).is_absolute():
        return InputError(message, hint=None if recorded else "check the path")
    try:
        cwd = Path.cwd()
        where = f"looked for in {_printable(cwd)}"
    except OSError:
        cwd, where = None, "the current directory no longer exists"
    if not recorded:
        near = _near_name(cwd, target) if cwd is not None else None
        return InputError(f"{message} ({where})",
                          hint=f"did you mean {near}?" if near else
                          "check the path: a relative path is read from the current directory")
    return InputError(f"{message} ({where})",
                      hint="a relative path is read from the current directory: run from "
                           "the folder it was ingested in (cron: `cd` there first), or "
                           "ingest it with an absolute path")


def _near_name(cwd: Path, target: str) -> str | None:
    """A folder of ``cwd`` whose name is close to the first part of ``target``."""
    first = PurePosixPath(target).parts[0] if PurePosixPath(target).parts else ""
    try:
        with os.scandir(cwd) as entries:
            names = [e.name for e in itertools.islice(entries, 1000) if e.is_dir()]
    except OSError:
        return None
    near = difflib.get_close_matches(first, names, n=1, cutoff=0.75)
    return near[0] if near else None


def _printable(path: Path | str) -> str:
    """A path for a note: bytes that are not UTF-8 shown as ``\\udcXX`` escapes."""
    return str(path).encode("utf-8", "backslashreplace").decode()


def _kind_of(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISDIR(mode):
        return "a directory"
    return "a special file"


def _refuse_collisions(leaves: list[Leaf]) -> list[Leaf]:
    """Leaves sorted by ref; files sharing a ref each carry an error naming all of them."""
    by_ref: dict[str, list[Leaf]] = {}
    for leaf in leaves:
        by_ref.setdefault(leaf.ref, []).append(leaf)
    out: list[Leaf] = []
    for ref in sorted(by_ref):
        group = by_ref[ref]
        if len(group) == 1:
            out.append(group[0])
            continue
        names = " and ".join(str(leaf.hint.path) for leaf in group)
        every = "both" if len(group) == 2 else "all"
        error = SourceError(f"{names} {every} cite {ref}; rename or exclude all but one",
                            hint="each page needs its own address (see --exclude)")
        out += [Leaf(ref=leaf.ref, url=leaf.url,
                     hint=dataclasses.replace(leaf.hint, error=leaf.hint.error or error))
                for leaf in group]
    return out


def _one_copy_each(where: str, leaves: list[Leaf], options: FilesOptions, notes: list[str],
                   copies_in_folders: bool = True) -> tuple[list[Leaf], dict[str, int]]:
    """The leaves of one version and one language of each page, chosen by their URLs as
    web sources choose (a multilingual Hugo project, a built site with ``/fr/`` or
    ``/v2/`` copies), and how many of each were dropped; every leaf without a base URL,
    or of a project whose generator keeps no copies in folders (Sphinx)."""
    urls = [leaf.url for leaf in leaves] if options.base_url and copies_in_folders else []
    layout = versions.detect(urls) if len(urls) > 1 else versions.Layout()
    if not (layout.versioned or layout.translated):
        if options.version is not None or options.lang is not None:
            notes.append(versions.nothing_to_choose(where))
        return leaves, {}
    selection = versions.select(urls, layout, version=options.version, lang=options.lang)
    line = versions.describe(selection)
    if line:
        notes.append(f"{where}: {line}")
    kept = set(selection.kept)
    return ([leaf for leaf in leaves if leaf.url in kept],
            {what: n for what, n in selection.dropped.items() if n})


def _leaves(site: Site, files: Sequence[tuple[str, Path]], real_root: Path,
            options: FilesOptions) -> tuple[list[Leaf], int]:
    """A leaf for each of ``files`` (path relative to the root, path as walked) that
    ``site`` publishes (cited at the base URL, or by a local ref without one), and how
    many it does not publish."""
    base_url = options.base_url
    leaves: list[Leaf] = []
    unpublished = 0
    formats = site.settings.get("source_suffix") or {}
    titles = SphinxTitles(site.content, (".rst", ".rst.txt", *(
        s for s, how in formats.items() if how == "rst")))  # scanned on first use only
    for rel, path in files:
        failed: SourceError | None = None
        try:  # without a base URL too: a build folder in the docs is no page of them
            page = page_path(site, real_root / rel)
        except SourceError as exc:  # this file fails; the others are read
            page, failed = rel, exc
        if page is None:
            unpublished += 1
            continue
        if base_url:
            url = base_url.rstrip("/") + "/" + page
        else:
            url = local_ref(rel, root_name=real_root.name)
        leaves.append(Leaf(ref=url, url=url, hint=_File(path, real_root, real_root / rel, site,
                                                         options, failed, titles)))
    return leaves, unpublished


KIND = SourceKind(FilesOptions,
                  lambda spec, **context: FilesSource(full=bool(context.get("full"))))


def file_format(path: Path) -> str | None:
    """How a file is read (``markdown``, ``mdx``, ``rst``, ``html``, ``text``…: its
    reader's format); None for files a files source skips."""
    reader = reader_for(path)
    return reader.format if reader is not None else None


def page_reader(path: Path, site: Site) -> Reader | None:
    """The reader of a file of ``site``: as its generator names its sources (Sphinx's
    ``source_suffix``: Django's ``.txt`` files are reStructuredText), else by its suffix;
    None for a file the source skips, a notebook among them where the generator renders
    none."""
    formats = site.settings.get("source_suffix")
    suffix = source_suffix(path.name, formats) if formats else None
    reader = reader_named(formats[suffix]) if suffix else reader_for(path)
    if reader is not None and reader.format == "notebook" and not site.settings.get(
            "notebooks"):
        return None
    return reader


def _document(leaf: Leaf, file: _File, text: str, stamp: dict[str, Any]) -> Document | None:
    """The document a file makes, by the reader of its format; None when its generator
    does not publish it as a page (known only once it is read: a draft, a future date, a
    Jekyll file without front matter)."""
    reader = page_reader(file.path, file.site)
    assert reader is not None  # expand leaves out the files no reader reads
    return reader.file(FilePage(
        path=file.path, ref=leaf.ref, url=leaf.url, site=file.site, published=file.published,
        stamp=stamp | {"generator": file.site.generator},
        publish=lambda front_matter: _published_url(leaf, file, front_matter),
        include_stamps=_include_stamps, docname=_docname(file),
        base_url=file.options.base_url, titles=file.titles), text)


def _docname(file: _File) -> str:
    """The page's name as Sphinx knows it: its path in the source folder, no suffix."""
    try:
        rel = file.published.relative_to(file.site.content).as_posix()
    except ValueError:
        return file.published.stem
    for suffix in (".rst.txt", *file.site.settings.get("source_suffix", {}), ".rst"):
        if rel.endswith(suffix):
            return rel[:-len(suffix)]
    return rel.rsplit(".", 1)[0]


def _include_stamps(paths: Sequence[Path]) -> dict[str, list[int] | None] | None:
    stamps: dict[str, list[int] | None] = {}
    for path in paths:
        if str(path) in stamps:
            continue
        if len(stamps) >= MAX_TRACKED_INCLUDES:
            return None
        try:
            st = os.stat(path)
            stamps[str(path)] = [st.st_size, st.st_mtime_ns]
        except OSError:
            stamps[str(path)] = None
    return stamps


def _includes_unchanged(prev: Mapping[str, Any]) -> bool:
    """Whether the files a stored page included are as they were when it was read."""
    if INCLUDES not in prev:
        return True
    recorded = prev[INCLUDES]
    if not isinstance(recorded, dict):
        return False
    for name, was in recorded.items():
        try:
            st = os.stat(name)
        except OSError:
            return False
        if was != [st.st_size, st.st_mtime_ns]:
            return False
    return True


def _lapsed(prev: Mapping[str, Any]) -> bool:
    """Whether a stored page's publication ended since (its generator's expiry date): then
    it is read again though unchanged, and left out as its generator now leaves it."""
    until = prev.get(UNTIL)
    try:
        return isinstance(until, str) and datetime.fromisoformat(until) <= datetime.now(
            timezone.utc)
    except (ValueError, TypeError):  # TypeError: a stored time without a zone
        return True


def _published_url(leaf: Leaf, file: _File, front_matter: Mapping[str, Any]) -> str | None:
    """The page's URL once its front matter is known (``slug``, ``url``, ``permalink``
    move a page; Jekyll publishes a file without any as it is); the path-based URL when
    there is no base URL. None: the generator does not publish the file as a page."""
    base_url = file.options.base_url
    if not base_url:
        return leaf.url
    page = page_path(file.site, file.published, front_matter)
    return None if page is None else base_url.rstrip("/") + "/" + escaped(page, NOT_IN_PATH)


def split_root(target: str) -> tuple[Path, str | None]:
    """A target is a folder, a glob whose leading literal segments are the root, or one
    file (its folder is the root, so its ref is the one the folder's ingest gives it)."""
    if is_regular(Path(target)):
        path = Path(target)
        return path.parent, glob.escape(path.name)
    parts = PurePosixPath(target).parts
    for i, part in enumerate(parts):
        if _GLOB_CHARS & set(part):
            root = Path(*parts[:i]) if i else Path(".")
            return root, str(PurePosixPath(*parts[i:]))
    return Path(target), None


# Folders deeper than this under a source's root are not walked (a generated tree of a
# thousand levels ended the walk, and the whole source, with a RecursionError).
MAX_FOLDER_DEPTH = 64


def _walk(root: Path, pattern: str | None, notes: list[str],
          ignores: IgnoreFiles | None = None,
          unlisted: list[Path] | None = None) -> Iterator[Path]:
    """Candidate files under ``root`` (those ``pattern`` matches, when there is one);
    symlinked folders are not entered (loops), nor hidden ones (unless the pattern names
    them), ``node_modules`` or (with ``ignores``) what a ``.gitignore`` leaves out. A
    folder that cannot be listed, or lies past ``MAX_FOLDER_DEPTH``, is noted and added to
    ``unlisted``: what it holds is unknown, not gone. One walk for folders and globs:
    pathlib's glob passed over a folder it could not list without a word (its pages were
    deleted as gone) and recursed until a deep tree raised RecursionError."""
    unlisted = [] if unlisted is None else unlisted
    left_out = [0]
    segments = glob_segments(pattern) if pattern is not None else None
    dotted = segments is not None and any(part.startswith(".") for part in segments)

    def kept(folder: Path, rel: tuple[str, ...], *, is_dir: bool) -> bool:
        name = rel[-1]
        if (name.startswith(".") and not dotted) or (is_dir and name in NEVER_DOCS):
            return False
        if segments is not None and not glob_matches(rel, segments, leading=is_dir):
            return False
        if ignores is not None and ignores.ignored(folder, name, is_dir=is_dir):
            left_out[0] += 1
            return False
        return True

    def unreadable(exc: OSError) -> None:
        notes.append(f"skipped {_printable(exc.filename)}: cannot list: "
                     f"{exc.strerror or exc}")
        unlisted.append(Path(exc.filename))

    for dirpath, dirnames, filenames in os.walk(root, onerror=unreadable):
        folder = Path(dirpath)
        here = folder.relative_to(root).parts
        dirnames[:] = sorted(d for d in dirnames if kept(folder, (*here, d), is_dir=True))
        if dirnames and len(here) >= MAX_FOLDER_DEPTH:
            notes.append(f"skipped the folders in {_printable(folder)}: deeper than "
                         f"{MAX_FOLDER_DEPTH} levels under {_printable(root)}")
            unlisted.append(folder)
            dirnames[:] = []
        for name in sorted(filenames):
            if kept(folder, (*here, name), is_dir=False):
                yield folder / name
    if left_out[0]:
        notes.append(f"files {_printable(root)}: {left_out[0]} file(s) or folder(s) a "
                     ".gitignore leaves out were skipped (name a folder to read it anyway)")


def glob_segments(pattern: str) -> tuple[str, ...]:
    """A glob's segments, runs of ``**`` as one (they mean the same). One naming more
    folders than the walk enters can match nothing, and is bad input: a hostile pattern of
    thousands of segments cost each file of the tree that many steps."""
    segments: list[str] = []
    for part in PurePosixPath(pattern).parts:
        if not (part == "**" and segments and segments[-1] == "**"):
            segments.append(part)
    if sum(part != "**" for part in segments) > MAX_FOLDER_DEPTH + 1:
        raise InputError(f"files source: the glob {pattern[:80]!r} names more than "
                         f"{MAX_FOLDER_DEPTH + 1} levels, deeper than folders are read")
    return tuple(segments)


def glob_matches(parts: tuple[str, ...], segments: tuple[str, ...], *,
                 leading: bool = False) -> bool:
    """Whether a path (its ``parts``) matches a glob's ``segments`` as pathlib's glob
    does: ``**`` is any number of folders, other segments match one name each, case
    kept. ``leading``: whether the parts can be the folders a match begins with. Read as
    the set of segments reached so far, one part at a time (no recursion)."""
    def past_folders(reached: set[int]) -> set[int]:  # a ``**`` may match no folder
        out, todo = set(reached), list(reached)
        while todo:
            j = todo.pop()
            if j < len(segments) and segments[j] == "**" and j + 1 not in out:
                out.add(j + 1)
                todo.append(j + 1)
        return out

    reached = past_folders({0})
    for i, part in enumerate(parts):
        is_file = not leading and i == len(parts) - 1  # only ``**`` stops at folders
        reached = {j if segments[j] == "**" else j + 1 for j in reached
                   if j < len(segments) and (
                       (segments[j] == "**" and not is_file)
                       or (segments[j] != "**" and fnmatch.fnmatchcase(part, segments[j])))}
        if not is_file:
            reached = past_folders(reached)
        if not reached:
            return False
    return any(j < len(segments) for j in reached) if leading else len(segments) in reached


def local_ref(rel: str, *, root_name: str) -> str:
    """Stable address of a file ingested without a base URL: ``kb://ROOT/relpath``."""
    return f"kb://{root_name}/{rel}"
