"""Hugo's languages: which content folder holds each language's pages, and the language
of one file. A page is in the default language (``defaultContentLanguage``, ``en``) unless
its folder is another language's ``contentDir`` (or module mount) or its name ends in a
configured language (``about.fr.md``, which wins over the folder).
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from .base import Site

DEFAULT_LANGUAGE = "en"


def content_dirs(folder: Path, config: Mapping[str, Any]) -> tuple[Path, dict[str, Any]]:
    """The folder holding every language's content, and the language settings: the content
    folders below it with the language of their files (a language's own ``contentDir`` or
    mount; the site's folder, when some language has none, for the default language), the
    default language, whether it too is served under ``/LANG/``, and the languages a file
    name may end in (``about.fr.md``, which wins over its folder's language)."""
    site_dir = _content_dir(_mounted_content(config)) or _content_dir(
        config.get("contentdir")) or "content"
    default = config.get("defaultcontentlanguage")
    default = default.strip().lower() if isinstance(default, str) and default.strip() else (
        DEFAULT_LANGUAGE)
    languages = config.get("languages") if isinstance(config.get("languages"), dict) else {}
    disabled = config.get("disablelanguages")
    disabled = {str(d).lower() for d in disabled} if isinstance(disabled, list) else set()
    mounted = _mounted_language_content(config)
    enabled = sorted({default, *(str(k).lower() for k in languages)} - disabled) or [default]
    dirs: list[tuple[str, str]] = []  # (language, content folder)
    for language in enabled:
        own = languages.get(language)
        own_dir = mounted.get(language) or _content_dir(
            own.get("contentdir") if isinstance(own, dict) else None)
        if own_dir:
            dirs.append((language, own_dir))
    if len(dirs) < len(enabled):  # some language reads the site's folder: it is mounted,
        dirs.append((default, site_dir))  # its files the default language's unless named
    common = PurePosixPath(os.path.commonpath([d for _, d in dirs]))
    below = sorted(((lang, PurePosixPath(d).relative_to(common).as_posix()) for lang, d in dirs),
                   key=lambda pair: (-len(pair[1]), pair[0]))
    return folder / common, {
        "contentDirs": tuple(below), "defaultLanguage": default,
        "languageInSubdir": config.get("defaultcontentlanguageinsubdir") is True,
        "languages": tuple(enabled), "disabledLanguages": tuple(sorted(disabled))}


def _content_dir(value: Any) -> str | None:
    """A content folder setting as a path inside the project; None when unset or outside."""
    if not isinstance(value, str) or not value.strip("/ "):
        return None
    path = posixpath.normpath(value.strip().strip("/"))
    return None if path == "." or path.startswith("..") else path


def language_of(site: Site, rel: PurePosixPath
                 ) -> tuple[str, str, PurePosixPath, str] | None:
    """The language of the file at ``rel`` (below ``site.content``), the content folder it
    is in, its path in that folder and its stem without a language suffix; None when no
    language's content holds it or its language is not built."""
    settings = site.settings
    for language, folder in settings.get("contentDirs", ((DEFAULT_LANGUAGE, "."),)):
        if folder != "." and not rel.is_relative_to(folder):
            continue
        inner = rel if folder == "." else rel.relative_to(folder)
        stem = inner.stem
        base, dot, suffix = stem.rpartition(".")
        if dot and base and suffix.lower() in settings.get("languages", (DEFAULT_LANGUAGE,)):
            return suffix.lower(), folder, inner, base
        if dot and base and suffix.lower() in settings.get("disabledLanguages", ()):
            return None
        return language, folder, inner, stem
    return None


def _mounted_content(config: Mapping[str, Any]) -> str | None:
    """The folder a module mount serves as the whole of ``content`` for every language (the
    first, as for the default language), e.g. ``source = 'content/en'``; None without one."""
    return next((source for source, language in _content_mounts(config) if not language), None)


def _mounted_language_content(config: Mapping[str, Any]) -> dict[str, str]:
    """The content folders mounted for one language each (a mount's ``lang``)."""
    out: dict[str, str] = {}
    for source, language in _content_mounts(config):
        folder = _content_dir(source)
        if language and folder:
            out.setdefault(language, folder)
    return out


def _content_mounts(config: Mapping[str, Any]) -> list[tuple[str, str | None]]:
    """(source, language or None) of each module mount onto ``content``, in order."""
    module = config.get("module")
    mounts = module.get("mounts") if isinstance(module, dict) else None
    out = []
    for mount in mounts if isinstance(mounts, list) else []:
        if (isinstance(mount, dict) and str(mount.get("target", "")).strip("/") == "content"
                and isinstance(mount.get("source"), str) and mount["source"].strip("/")):
            out.append((mount["source"].strip("/"), _mount_language(mount)))
    return out


def _mount_language(mount: Mapping[str, Any]) -> str | None:
    """The one language a mount is for: its ``lang``, or a ``sites.matrix.languages`` of
    one name (Hugo 0.153 and later); None when it is for every language."""
    language = mount.get("lang")
    sites = mount.get("sites")
    matrix = sites.get("matrix") if isinstance(sites, dict) else None
    languages = matrix.get("languages") if isinstance(matrix, dict) else None
    if isinstance(languages, list) and len(languages) == 1:
        language = languages[0]
    return language.lower() if isinstance(language, str) and language.strip("*") else None
