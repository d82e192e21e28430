"""``projectfiles.real_path`` within one run's ``RealFolders``: the path ``Path.resolve``
gives (links followed, ``..`` walked as the file system walks it, loops refused), with each
folder looked up once however many pages name files in it."""

from __future__ import annotations

import itertools
import os
from pathlib import Path

import pytest

from kbctl import projectfiles
from kbctl.projectfiles import RealFolders, real_path, repository_top


def _tree(root: Path) -> Path:
    """A project with links of every kind: inside, out of it, up, to a file, dangling, in
    a loop, and a file where a folder is named."""
    project = root / "project"
    (project / "docs" / "deep" / "er").mkdir(parents=True)
    (project / "docs" / "deep" / "er" / "page.md").write_text("x")
    (project / "docs" / "a.md").write_text("x")
    (root / "elsewhere" / "inner").mkdir(parents=True)
    (root / "elsewhere" / "inner" / "secret.md").write_text("x")
    (project / "docs" / "out").symlink_to(root / "elsewhere" / "inner")
    (project / "docs" / "up").symlink_to("..")
    (project / "docs" / "same").symlink_to("deep")
    (project / "docs" / "file-link.md").symlink_to("a.md")
    (project / "docs" / "dangling").symlink_to("nowhere/at/all")
    (project / "docs" / "loop1").symlink_to("loop2")
    (project / "docs" / "loop2").symlink_to("loop1")
    return project


def _outcome(resolve: object, path: Path) -> object:
    try:
        return resolve(path)  # type: ignore[operator]
    except RuntimeError:  # a loop, before Python 3.13
        return "loop"
    except OSError as exc:
        return ("error", exc.errno)


def test_every_path_resolves_as_the_file_system_resolves_it(tmp_path: Path) -> None:
    project = _tree(tmp_path)
    parts = ["docs", "deep", "er", "page.md", "a.md", "out", "up", "same", "file-link.md",
             "dangling", "loop1", "missing", "..", "secret.md", "inner"]
    paths = [project.joinpath(*combo) for n in range(1, 4)
             for combo in itertools.product(parts, repeat=n)]
    folders = RealFolders()  # one for all, as one run keeps it across its pages
    with folders.resolving():
        cached = [_outcome(real_path, p) for p in paths]
    for path, got in zip(paths, cached, strict=True):
        expected = _outcome(Path.resolve, path)
        # a path through a loop of links is refused even where a ".." walks back out of
        # it (``Path.resolve`` takes the loop's name as it stands there): stricter, never
        # another file
        assert got == expected or (got == "loop" and "loop1" in path.parts), path
    assert len(paths) > 3000 and len(folders.real) > 200


def test_each_folder_is_looked_up_once_however_many_files_it_holds(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = tmp_path / "book"
    listings = [project / "listings" / f"ch{c:02}" / f"listing-{n:02}" / "src" / "main.rs"
                for c in range(10) for n in range(10)]
    for path in listings[::2]:  # half are there, half are not (a listing left out)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("fn main() {}")
    named = [project / "src" / ".." / path.relative_to(project) for path in listings] * 3
    lookups = []
    real_lstat = os.lstat

    def counted(path: object, *args: object, **kwargs: object) -> os.stat_result:
        lookups.append(path)
        return real_lstat(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(projectfiles.os, "lstat", counted)
    with RealFolders().resolving():
        real = [real_path(path) for path in named]
    looked_up = len(lookups)
    assert real == [path.resolve() for path in named]
    # the folders once each (listings, 10 chapters, 100 listings of which 50 are there,
    # and the 50 src folders in those), the 50 files that are there each time they are
    # named, nothing below a folder that is not there, the folders above once
    assert looked_up <= (1 + 10 + 100 + 50) + 50 * 3 + len(project.parts) + 1, looked_up


def test_a_repository_top_is_looked_up_once_per_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    (tmp_path / "repo" / "docs").mkdir()
    asked = []
    real_exists = Path.exists

    def exists(self: Path) -> bool:
        asked.append(self)
        return real_exists(self)

    monkeypatch.setattr(Path, "exists", exists)
    with RealFolders().resolving():
        tops = [repository_top(tmp_path / "repo" / "docs") for _ in range(50)]
    assert tops == [(tmp_path / "repo").resolve()] * 50
    assert len(asked) == 2  # docs/.git, then repo/.git: once
