"""The files source against odd entries: special files, symlink loops, colliding citations."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

from kbctl.errors import InputError
from kbctl.extract import HTML_READER
from kbctl.sources.base import READER, Loaded
from kbctl.sources.files import FilesSource
from kbctl.sources.registry import source_spec
from tests.sitebuild import write_tree

T = TypeVar("T")
DEADLINE = 20.0


def within(fn: Callable[[], T], seconds: float = DEADLINE) -> T:
    """Run ``fn`` on a daemon thread and fail the test if it has not ended in ``seconds``."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # handed to the test below
            box["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still running after {seconds}s"
    if "error" in box:
        raise box["error"]
    return box["value"]


def _write(root: Path, rel: str, text: str = "# Page\n\nSome words.\n") -> Path:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8")
    return p


def _run(target: Path | str, **options: Any) -> tuple[list[str], list[Loaded]]:
    source = FilesSource()
    expansion = source.expand(source_spec("files", str(target), options))
    return expansion.notes, list(source.load(expansion.leaves, lambda ref: None))


def _names(loaded: list[Loaded]) -> set[str]:
    return {item.leaf.ref.rsplit("/", 1)[-1] for item in loaded if item.document}


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    _write(root, "good.md")
    _write(root, "guide/more.md")
    return root


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_is_skipped_with_a_note_and_never_opened(docs: Path) -> None:
    os.mkfifo(docs / "x.md")  # opening it for reading would wait for a writer for ever
    notes, loaded = within(lambda: _run(docs))
    assert _names(loaded) == {"good.md", "more.md"}
    assert notes == [f"skipped {docs / 'x.md'}: a FIFO, not a regular file"]
    glob_notes, _ = within(lambda: _run(docs / "*.md"))
    assert glob_notes == notes


def test_a_socket_is_skipped_with_a_note(docs: Path) -> None:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(str(docs / "s.md"))
        notes, loaded = within(lambda: _run(docs))
    finally:
        sock.close()
    assert _names(loaded) == {"good.md", "more.md"}
    assert notes == [f"skipped {docs / 's.md'}: a socket, not a regular file"]


def test_a_device_behind_a_link_is_skipped(docs: Path) -> None:
    if not os.path.exists("/dev/zero"):
        pytest.skip("no /dev/zero")
    (docs / "zero.md").symlink_to("/dev/zero")  # endless if it were read
    notes, loaded = within(lambda: _run(docs))
    assert _names(loaded) == {"good.md", "more.md"}
    assert notes == [f"skipped {docs / 'zero.md'}: a device, not a regular file"]


def test_symlink_loops_and_broken_links_are_skipped(docs: Path) -> None:
    (docs / "a.md").symlink_to("b.md")
    (docs / "b.md").symlink_to("a.md")
    (docs / "self.md").symlink_to("self.md")
    (docs / "gone.md").symlink_to("nowhere.md")
    notes, loaded = within(lambda: _run(docs))
    assert _names(loaded) == {"good.md", "more.md"}
    assert sorted(notes) == sorted([
        f"skipped {docs / 'a.md'}: a symlink loop",
        f"skipped {docs / 'b.md'}: a symlink loop",
        f"skipped {docs / 'self.md'}: a symlink loop",
        f"skipped {docs / 'gone.md'}: a broken symlink",
    ])


def test_a_folder_linking_to_its_parent_is_not_entered(docs: Path) -> None:
    (docs / "guide" / "loop").symlink_to("..")
    for target in (docs, docs / "**" / "*.md"):
        notes, loaded = within(lambda target=target: _run(target))
        assert sorted(item.leaf.ref for item in loaded) == sorted(
            ["kb://docs/good.md", "kb://docs/guide/more.md"]), target
        assert notes == []


def test_several_links_to_a_parent_folder_do_not_explode_a_glob(docs: Path) -> None:
    # Followed, three links to "." make 3**40 paths before the OS says ELOOP.
    for name in ("l1", "l2", "l3"):
        (docs / "guide" / name).symlink_to("..")
    notes, loaded = within(lambda: _run(docs / "**" / "*.md"))
    assert sorted(item.leaf.ref for item in loaded) == [
        "kb://docs/good.md", "kb://docs/guide/more.md"]


def test_globs_skip_hidden_entries_unless_named(docs: Path) -> None:
    _write(docs, ".drafts/secret.md")
    _write(docs, "guide/.wip.md")
    _, loaded = _run(docs / "**" / "*.md")
    assert _names(loaded) == {"good.md", "more.md"}
    _, loaded = _run(docs / ".drafts" / "*.md")
    assert _names(loaded) == {"secret.md"}


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_file_swapped_for_a_fifo_after_listing_fails_at_once(docs: Path) -> None:
    source = FilesSource()
    expansion = source.expand(source_spec("files", str(docs), {}))
    (docs / "good.md").unlink()
    os.mkfifo(docs / "good.md")
    loaded = within(lambda: list(source.load(expansion.leaves, lambda ref: None)))
    errors = {item.leaf.ref: item.error for item in loaded if item.error}
    assert list(errors) == ["kb://docs/good.md"]
    assert "a FIFO, not a regular file" in errors["kb://docs/good.md"].message
    assert _names(loaded) == {"more.md"}


@pytest.mark.parametrize(("files", "ref"), [
    (["a.md", "a.mdx"], "https://docs.test/a"),
    (["guide/index.md", "guide/README.md"], "https://docs.test/guide/"),
    (["x.md", "x.rst"], "https://docs.test/x"),
    (["index.md", "_index.md", "readme.md"], "https://docs.test/"),
])
def test_files_citing_the_same_address_all_fail_naming_each_other(
        tmp_path: Path, files: list[str], ref: str) -> None:
    root = tmp_path / "site"
    for rel in files:
        _write(root, rel, "<title>T</title><p>words</p>" if rel.endswith("html") else "# T\n")
    _write(root, "other.md")
    notes, loaded = _run(root, base_url="https://docs.test/")
    errors = [item for item in loaded if item.error]
    assert [item.leaf.ref for item in errors] == [ref] * len(files)
    for item in errors:
        assert item.error is not None
        for rel in files:
            assert str(root / rel) in item.error.message
        assert f"cite {ref}" in item.error.message
    assert _names(loaded) == {"other"}


def test_distinct_files_keep_distinct_refs_without_base_url(tmp_path: Path) -> None:
    root = tmp_path / "site"
    _write(root, "a.md")
    _write(root, "a.mdx")
    notes, loaded = _run(root)
    assert not [item for item in loaded if item.error]
    assert _names(loaded) == {"a.md", "a.mdx"}


def test_a_file_name_that_is_not_utf8_is_skipped_with_a_readable_note(docs: Path) -> None:
    try:
        Path(os.fsdecode(os.fsencode(docs) + b"/caf\xe9.md")).write_bytes(b"# Latin\n")
    except OSError:
        pytest.skip("this file system refuses names that are not UTF-8")
    notes, loaded = _run(docs)
    assert _names(loaded) == {"good.md", "more.md"}
    assert notes == [f"skipped {docs}/caf\\udce9.md: the name is not UTF-8"]
    notes[0].encode("utf-8")  # printable and storable as is


def test_an_html_redirect_page_is_skipped_with_a_note(docs: Path) -> None:
    _write(docs, "moved.html", "<html><head><meta http-equiv='refresh' content='0; "
                               "url=guide/more.html'></head><body>Redirecting…</body></html>")
    _write(docs, "page.html", "<html><head><title>Page</title></head><body><main><h2 id='a'>"
                              "A</h2><p>Kept.</p></main></body></html>")
    _, loaded = _run(docs)
    [stub] = [item for item in loaded if item.leaf.ref.endswith("moved.html")]
    assert (stub.dropped, stub.document) == ("redirect", None)
    assert stub.note.endswith("moved.html: a redirect page to guide/more.html, skipped")
    assert _names(loaded) == {"good.md", "more.md", "page.html"}


def test_an_html_file_stored_by_an_older_reading_is_read_again(docs: Path) -> None:
    _write(docs, "page.html", "<html><body><main><h2 id='a'>A</h2><p>Kept.</p></main></body>"
                              "</html>")
    source = FilesSource()
    leaves = source.expand(source_spec("files", str(docs), {})).leaves
    stamps = {leaf.ref: {"size": leaf.hint.path.stat().st_size,
                         "mtime_ns": leaf.hint.path.stat().st_mtime_ns} for leaf in leaves}
    older = {ref: dict(stamp) for ref, stamp in stamps.items()}  # no reader: the first one
    now = {ref: stamp | {READER: HTML_READER} for ref, stamp in stamps.items()}
    assert all(item.not_modified for item in source.load(leaves, now.get))
    again = {item.leaf.ref.rsplit("/", 1)[-1]: item for item in source.load(leaves, older.get)}
    assert again["page.html"].document is not None
    assert again["page.html"].meta[READER] == HTML_READER
    assert again["good.md"].not_modified and again["more.md"].not_modified


def test_one_file_is_a_target_with_the_ref_its_folder_gives_it(docs: Path) -> None:
    odd = _write(docs, "guide/[draft] notes.md")
    _, alone = _run(docs / "guide" / "more.md")
    _, folder = _run(docs / "guide")
    assert [item.leaf.ref for item in alone] == ["kb://guide/more.md"]
    assert "kb://guide/more.md" in {item.leaf.ref for item in folder}
    _, bracketed = _run(odd)  # glob characters in the name are the name's
    assert [item.leaf.ref for item in bracketed] == ["kb://guide/[draft] notes.md"]
    with pytest.raises(InputError, match="is not a file, a directory or a glob"):
        _run(docs / "missing.md")


def test_a_file_it_does_not_read_is_refused_and_an_empty_folder_noted(tmp_path: Path) -> None:
    (tmp_path / "slides.pdf").write_bytes(b"%PDF-1.7")
    with pytest.raises(InputError, match=r"slides\.pdf is not a kind of file kbctl reads "
                                         r"\(\.md, \.mdx"):
        _run(tmp_path / "slides.pdf")
    notes, loaded = _run(tmp_path)
    assert loaded == [] and notes == [f"files {tmp_path}: found no file to read (.md, .mdx, "
                                      ".markdown, .rst, .html, .htm, .txt, .ipynb, .qmd, .rst.txt)"]


def _generator_of(project: dict[str, str]) -> str:
    return {"book.toml": "mdbook", "mkdocs.yml": "mkdocs", "conf.py": "sphinx"}[next(iter(project))]


_BUILT_PAGE = ('<html><body><main><h1 id="intro">Intro</h1><p>Built words.</p></main>'
               "</body></html>")


@pytest.mark.parametrize(("project", "built"), [
    ({"book.toml": "[book]\ntitle = 'b'\n", "src/SUMMARY.md": "- [Intro](intro.md)\n",
      "src/intro.md": "# Intro\n\nWords.\n"}, "book"),
    ({"mkdocs.yml": "site_name: s\n", "docs/intro.md": "# Intro\n\nWords.\n"}, "site"),
    ({"conf.py": "project = 'p'\n", "intro.rst": "Intro\n=====\n\nWords.\n",
      "_build/html/.buildinfo": "# Sphinx build info\n",
      "_build/html/_sources/intro.rst.txt": "Intro\n=====\n\nWords.\n"}, "_build/html"),
])
def test_a_projects_built_output_is_read_as_the_site_it_is(
        tmp_path: Path, project: dict[str, str], built: str) -> None:
    # Pointed at its build output, the project above publishes none of it: the files are
    # read with the plain rule, as the host serves them, instead of all being skipped.
    write_tree(tmp_path, project)
    write_tree(tmp_path / built, {"intro.html": _BUILT_PAGE, "index.html": _BUILT_PAGE,
                                  "404.html": "<html><body><p>Not found</p></body></html>"})
    notes, loaded = _run(tmp_path / built, base_url="https://docs.test/")
    assert sorted(item.leaf.ref for item in loaded if item.document) == [
        "https://docs.test/", "https://docs.test/intro.html"]
    assert any("read with the plain rule" in note for note in notes), notes
    # the project itself is still read as its generator publishes it
    notes, loaded = _run(tmp_path, base_url="https://docs.test/")
    assert [item.leaf.ref for item in loaded if item.document] in (
        ["https://docs.test/intro.html"], ["https://docs.test/intro/"])
    # a generator the user names is theirs: nothing is second-guessed
    notes, loaded = _run(tmp_path / built, base_url="https://docs.test/",
                         generator=_generator_of(project))
    assert not loaded


def test_a_page_marked_noindex_is_left_out_unless_kept(tmp_path: Path) -> None:
    # mdBook's print.html repeats the whole book and says noindex; crawls leave it out too.
    root = tmp_path / "built"
    _write(root, "intro.html", _BUILT_PAGE)
    _write(root, "print.html", '<html><head><meta name="robots" content="noindex"></head>'
           "<body><main><p>Every chapter again.</p></main></body></html>")
    notes, loaded = _run(root, base_url="https://docs.test/")
    assert _names(loaded) == {"intro.html"}
    [dropped] = [item for item in loaded if item.dropped]
    assert dropped.dropped == "noindex" and "print.html" in (dropped.note or "")
    assert "--ignore-noindex" in (dropped.note or "")
    notes, loaded = _run(root, base_url="https://docs.test/", ignore_noindex=True)
    assert _names(loaded) == {"intro.html", "print.html"}


def test_with_no_generator_what_gitignore_leaves_out_is_skipped(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A folder no generator claims: git's ignore files say what is no page (build output,
    # a virtualenv), each for its own folder down, a deeper "!" taking a file back.
    root = tmp_path / "repo"
    write_tree(root, {
        ".gitignore": "build/\n*.log.md\nvenv\n",
        "README.md": "# Repo\n\nWords.\n",
        "docs/guide.md": "# Guide\n\nWords.\n",
        "docs/.gitignore": "drafts/\n!keep.log.md\n",
        "docs/drafts/wip.md": "# WIP\n\nWords.\n",
        "docs/keep.log.md": "# Kept\n\nWords.\n",
        "docs/other.log.md": "# Log\n\nWords.\n",
        "build/out.md": "# Built\n\nWords.\n",
        "venv/lib/pkg/README.md": "# Package\n\nWords.\n",
        "site/node_modules/pkg/README.md": "# Package\n\nWords.\n",
    })
    notes, loaded = _run(root)
    assert _names(loaded) == {"README.md", "guide.md", "keep.log.md"}
    assert any(".gitignore leaves out" in note for note in notes), notes
    monkeypatch.chdir(root)  # a relative target, outside any repository: its own files
    assert _names(_run("docs")[1]) == {"guide.md", "keep.log.md", "other.log.md"}
    assert _names(_run(root / "build")[1]) == {"out.md"}  # named on purpose: read
    assert _names(_run(root / "docs" / "drafts" / "wip.md")[1]) == {"wip.md"}
    assert _names(_run(str(root / "**" / "*.md"))[1]) == {"README.md", "guide.md",
                                                           "keep.log.md"}
    # in a git repository, the files above count up to its top, as git counts them, but
    # never against the folder named: ignoring it there does not hide it when named
    write_tree(root, {".git/HEAD": "ref: refs/heads/main\n", ".gitignore":
                      "build/\n*.log.md\nvenv\n/docs/drafts-too/\nsecret/\n",
                      "docs/drafts-too/x.md": "# X\n\nWords.\n",
                      "docs/secret/s.md": "# S\n\nWords.\n"})
    assert _names(_run("docs")[1]) == {"guide.md", "keep.log.md"}
    assert _names(_run(root / "docs" / "secret")[1]) == {"s.md"}
    # a generator decides what it publishes itself, generated and ignored pages included
    write_tree(root, {"mkdocs.yml": "site_name: s\ndocs_dir: docs\n"})
    assert "wip.md" in _names(_run(root / "docs")[1])


def test_a_gitignore_pattern_that_cannot_compile_is_left_out_as_git_leaves_it(
        tmp_path: Path) -> None:
    root = write_tree(tmp_path / "repo", {".gitignore": "[z-a]\n!\ntrailing\\\n[[:alpha:]]\n"
                                                        + "[" * 5000 + "\nskip.md\n",
                                          "a.md": "# A\n\nWords.\n",
                                          "skip.md": "# S\n\nWords.\n"})
    assert _names(_run(root)[1]) == {"a.md"}  # the valid pattern still applies


def test_hundreds_of_costly_gitignore_patterns_are_compiled_in_pieces(tmp_path: Path) -> None:
    """RE2 refuses one set of a few hundred ``*a*a*…`` patterns (its memory budget): they
    are compiled in parts, the last pattern that matches still deciding."""
    costly = "".join("*a" * 40 + f"b{i}\n" for i in range(600))
    root = write_tree(tmp_path / "repo", {".gitignore": "*.md\n" + costly + "!keep*.md\n"
                                                        + "keep" + "a" * 60 + "b599.md\n",
                                          "keep-me.md": "# K\n\nWords.\n",
                                          "skip.md": "# S\n\nWords.\n",
                                          "keep" + "a" * 60 + "b599.md": "# X\n\nWords.\n"})
    assert _names(_run(root)[1]) == {"keep-me.md"}


def test_a_hostile_gitignore_is_matched_in_bounded_time(tmp_path: Path) -> None:
    """A backtracking matcher would spend forever (holding the GIL, so no thread can be
    timed out) on this pattern and one long name: the walk runs in a child process that
    must answer within a minute."""
    root = tmp_path / "repo"
    write_tree(root, {".gitignore": "*a" * 40 + "b\n" + "x\n" * 100_000,
                      "a" * 240 + ".md": "# A\n\nWords.\n"})
    script = ("import sys; from kbctl.sources.files import FilesSource; "
              "from kbctl.sources.registry import source_spec; "
              "expansion = FilesSource().expand(source_spec('files', sys.argv[1], {})); "
              "print(len(expansion.leaves))")
    answer = subprocess.run([sys.executable, "-c", script, str(root)], capture_output=True,
                            text=True, timeout=60, check=True)
    assert answer.stdout.strip() == "1"


def test_a_profile_failing_on_one_file_fails_that_file_alone(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kbctl.generators import GENERATORS

    mkdocs = GENERATORS["mkdocs"]
    real_page = mkdocs.page

    def page(site, rel, front_matter):  # a front matter value no profile foresaw
        if rel.name == "odd.md":
            raise TypeError("'int' object is not iterable")
        return real_page(site, rel, front_matter)

    monkeypatch.setattr(mkdocs, "page", page)
    root = write_tree(tmp_path / "p", {"mkdocs.yml": "site_name: s\n",
                                       "docs/a.md": "# A\n\nWords.\n",
                                       "docs/odd.md": "# Odd\n\nWords.\n"})
    notes, loaded = _run(root, base_url="https://docs.test/")
    assert [item.leaf.ref for item in loaded if item.document] == ["https://docs.test/a/"]
    [failed] = [item for item in loaded if item.error]
    assert "odd.md" in failed.error.message and "TypeError" in failed.error.message


def test_settings_a_profile_cannot_read_are_an_input_error_naming_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kbctl.generators import GENERATORS

    def detect(folder):
        raise ValueError("unexpected setting")

    monkeypatch.setattr(GENERATORS["mkdocs"], "detect", detect)
    root = write_tree(tmp_path / "p", {"mkdocs.yml": "site_name: s\n", "docs/a.md": "# A\n"})
    with pytest.raises(InputError) as err:
        _run(root, base_url="https://docs.test/")
    assert "mkdocs settings" in err.value.message and "unexpected setting" in err.value.message
    assert "--generator" in (err.value.hint or "")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_gitignore_that_is_a_fifo_is_no_ignore_file(tmp_path: Path) -> None:
    # reading it would wait for a writer for ever; it is passed over like an unreadable file
    root = write_tree(tmp_path / "repo", {"a.md": "# A\n\nWords.\n", "sub/b.md": "# B\n"})
    os.mkfifo(root / ".gitignore")
    os.mkfifo(root / "sub" / ".gitignore")
    assert _names(within(lambda: _run(root)[1])) == {"a.md", "b.md"}


@pytest.mark.parametrize(("config", "rendered"), [
    ("plugins:\n  - search\n  - macros\n", True),
    ("markdown_extensions:\n  - zensical.extensions.macros\n", True),
    ("plugins:\n  - search\n", False),
])
def test_mkdocs_pages_read_their_macros_only_where_the_plugin_renders_them(
        tmp_path: Path, config: str, rendered: bool) -> None:
    page = ("# Setup\n\nInstall {{ config.site_name }}.\n\n{% if beta %}\nBeta only.\n{% endif %}"
            "\n/// tip | Faster\nUse the cache.\n///\n")
    root = write_tree(tmp_path / "p", {"mkdocs.yml": f"site_name: s\n{config}",
                                       "docs/setup.md": page})
    _, loaded = _run(root, base_url="https://docs.example.com/")
    body = next(item.document.body for item in loaded if item.document)
    assert "**Tip: Faster**\nUse the cache." in body and "///" not in body
    assert ("{{" in body or "{%" in body) is not rendered
    assert "Beta only." in body and "Install" in body


def test_a_project_whose_pages_lie_outside_the_folder_says_where(tmp_path: Path) -> None:
    write_tree(tmp_path, {
        ".git/HEAD": "ref: refs/heads/main\n",
        "website/docusaurus.config.js": "module.exports = {presets: [['classic', "
                                        "{docs: {path: '../docs'}}]]}",
        "docs/intro.md": "# Intro\n\nWords.\n",
    })
    notes, loaded = _run(tmp_path / "website")
    assert loaded == [] and notes[-1] == (
        f"files {tmp_path / 'website'}: the docusaurus project here publishes the pages in "
        f"{tmp_path / 'docs'}, outside this folder; ingest that folder (with the same "
        "--base-url)")
    _, loaded = _run(tmp_path / "docs", base_url="https://d.example/")
    assert [item.leaf.url for item in loaded] == ["https://d.example/docs/intro"]
    # as Redux's: React pages in website/src/pages and a stray README beside the config;
    # the docs folder is named still, not the repository the site spans
    write_tree(tmp_path, {"website/src/pages/index.js": "export default () => null;\n",
                          "website/README.md": "# Website\n\nHow to build it.\n"})
    notes, loaded = _run(tmp_path / "website")
    assert loaded == [] and notes[-1] == (
        f"files {tmp_path / 'website'}: the docusaurus project here publishes the pages in "
        f"{tmp_path / 'docs'}, outside this folder; ingest that folder (with the same "
        "--base-url)")
    assert any("1 file(s) that docusaurus does not publish" in n for n in notes)


def test_a_build_folder_in_the_docs_is_no_page_of_them_without_a_base_url_too(
        tmp_path: Path) -> None:
    docs = write_tree(tmp_path / "docs", {
        "conf.py": "project = 'x'\n", "index.rst": "Home\n====\n\nText.\n",
        "_build/html/index.html": "<html><body><main><h1>Home</h1><p>Text.</p></main>"
                                  "</body></html>",
        "_build/html/_sources/index.rst.txt": "Home\n====\n\nText.\n"})
    source = FilesSource()
    for options in ({}, {"base_url": "https://docs.example.com/"}):
        expansion = source.expand(source_spec("files", str(docs), options))
        assert [leaf.ref.rsplit("/", 1)[-1] for leaf in expansion.leaves] == [
            "index.rst" if not options else "index.html"]
        assert any("2 file(s) that sphinx does not publish" in n for n in expansion.notes)


@pytest.mark.parametrize("pattern", ["**/*.md", "*.md", "guide/*.md", "guide/**/*.md",
                                     "**/api/*.md", "g*/*", "**/*", "*/*/*.md", "a?.md",
                                     "[ab]*.md", "**/deep/**/*.md", "guide/**", "x[[]y].md"])
def test_a_glob_target_matches_what_pathlibs_glob_matches(tmp_path: Path, pattern: str) -> None:
    """Globs are matched on one walk of the folder (pathlib's glob passed over a folder it
    could not list without a word, and recursed until a deep tree failed the source)."""
    from kbctl.sources.files import _walk

    root = tmp_path / "docs"
    for rel in ("a.md", "ab.md", "b.txt", "x[y].md", "guide/intro.md", "guide/api/ref.md",
                "guide/api/deep/more/x.md", "other/api/y.md", "other/deep/z.md",
                "deep/q/deep/r.md", ".hidden/h.md", "guide/.draft.md", "node_modules/n.md"):
        _write(root, rel)
    expected = sorted(p for p in root.glob(pattern) if p.is_file()
                      and not any(part.startswith(".") or part == "node_modules"
                                  for part in p.relative_to(root).parts))
    assert sorted(_walk(root, pattern, [])) == expected  # the walk goes folder by folder


def test_a_glob_target_keeps_the_pages_of_a_folder_it_cannot_list(
        docs: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_scandir = os.scandir

    def scandir(path: Any = ".") -> Any:
        if Path(path) == docs / "guide":
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    expansion = FilesSource().expand(source_spec("files", f"{docs}/**/*.md", {}))
    assert [leaf.ref.rsplit("/", 1)[-1] for leaf in expansion.leaves] == ["good.md"]
    assert not expansion.complete
    assert any("cannot list: Permission denied" in note for note in expansion.notes)


def test_a_glob_over_a_tree_a_thousand_folders_deep_skips_the_depths(tmp_path: Path) -> None:
    from kbctl.sources.files import MAX_FOLDER_DEPTH

    root = tmp_path / "docs"
    _write(root, "top.md")
    deep = root / "build"
    deep.mkdir()
    for _ in range(1000):  # one level at a time: pathlib's mkdir(parents=True) recurses
        deep = deep / "x"
        deep.mkdir()
    (deep / "bottom.md").write_text("# Bottom\n")
    try:
        expansion = within(lambda: FilesSource().expand(
            source_spec("files", f"{root}/**/*.md", {})))
        assert [leaf.ref.rsplit("/", 1)[-1] for leaf in expansion.leaves] == ["top.md"]
        assert any(f"deeper than {MAX_FOLDER_DEPTH} levels" in n for n in expansion.notes)
    finally:  # taken down one level at a time: shutil.rmtree (pytest's clean-up) recurses
        (deep / "bottom.md").unlink()
        while deep != root:
            deep.rmdir()
            deep = deep.parent


def test_a_hostile_glob_is_bounded_before_the_walk(tmp_path: Path) -> None:
    """Two thousand '**' segments recursed past Python's limit in the matcher; a glob
    naming more folders than the walk enters can match nothing, and is refused."""
    from kbctl.sources.files import MAX_FOLDER_DEPTH, _walk

    root = tmp_path / "docs"
    _write(root, "guide/a.md")
    assert list(_walk(root, "/".join(["**"] * 2000) + "/*.md", [])) == [root / "guide/a.md"]
    with pytest.raises(InputError, match=f"names more than {MAX_FOLDER_DEPTH + 1} levels"):
        list(_walk(root, "/".join(["*"] * 200) + "/*.md", []))
