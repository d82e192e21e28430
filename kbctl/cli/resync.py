"""`kbctl resync` and `kbctl forget`: the cron side of a knowledge base."""

from __future__ import annotations

from typing import Annotated

import typer

from ..errors import InputError
from ..pipeline import api
from ..pipeline.resync import ResyncOptions
from ..render import Output
from ..sources.extractpool import allow_worker_processes
from .common import (
    ConfigOpt,
    DataDirOpt,
    DbOpt,
    EmbedderUrlOpt,
    JsonOpt,
    NamespaceOpt,
    PrivateOpt,
    exit_with,
    guard,
    settings_from,
)


@guard
def resync(
    all_namespaces: Annotated[bool, typer.Option(
        "--all", help="Resync every namespace that has recorded sources.")] = False,
    full: Annotated[bool, typer.Option(
        "--full", help="Fetch every page whole and read every file, even when a sitemap "
        "lastmod, ETag, Last-Modified or a file's size and mtime say unchanged.")
    ] = False,
    plan: Annotated[bool, typer.Option(
        "--plan", help="Show what would be added, updated, deleted; write nothing.")] = False,
    max_delete: Annotated[float, typer.Option(
        "--max-delete", help="Refuse to delete more than this fraction of a namespace's "
        "sources in one run.")] = 0.2,
    force: Annotated[bool, typer.Option(
        "--force", help="Delete even past the --max-delete guard.")] = False,
    wait: Annotated[bool, typer.Option(
        "--wait/--no-wait", help="Wait for a running ingest/resync of the same namespace, "
        "or exit 1 at once.")] = True,
    lock_timeout: Annotated[float, typer.Option(
        "--lock-timeout", help="Seconds to wait for the namespace lock.")] = 600.0,
    db: DbOpt = None, data_dir: DataDirOpt = None, namespace: NamespaceOpt = None,
    config: ConfigOpt = None, embedder_base_url: EmbedderUrlOpt = None,
    allow_private_network: PrivateOpt = None, json_output: JsonOpt = False,
) -> None:
    """Re-run the recorded sources of a namespace and apply only the differences.

    Example (a cron line): `kbctl resync --all --json | jq -c . >> /var/log/kbctl.jsonl`
    """
    if all_namespaces and namespace:
        raise InputError("use either --all or --namespace, not both")
    allow_worker_processes()  # this program guards __main__: large sites may use processes
    settings = settings_from(db_url=db, data_dir=data_dir, namespace=namespace, config=config,
                             embedder_base_url=embedder_base_url,
                             allow_private_network=allow_private_network)
    out = Output(json_output)
    options = ResyncOptions(full=full, plan=plan, max_delete=max_delete, force=force,
                            wait=wait, lock_timeout=lock_timeout)
    with out.progress("resync") as progress:
        report = api.resync_kb(settings, namespaces=[namespace] if namespace else None,
                               all_namespaces=all_namespaces, options=options,
                               progress=progress, announce=out.note)
    out.show(report)
    exit_with(report.exit_code)


@guard
def forget(
    target: Annotated[str, typer.Argument(
        help="The recorded source to forget: its target as `kbctl status` shows it, or its "
        "id.", show_default=False)],
    keep_pages: Annotated[bool, typer.Option(
        "--keep-pages", help="Keep the pages it stored (resync just stops running it).")
    ] = False,
    wait: Annotated[bool, typer.Option(
        "--wait/--no-wait", help="Wait for a running ingest/resync of the same namespace, "
        "or exit 1 at once.")] = True,
    db: DbOpt = None, data_dir: DataDirOpt = None, namespace: NamespaceOpt = None,
    config: ConfigOpt = None, json_output: JsonOpt = False,
) -> None:
    """Forget a recorded source: resync stops running it, and its pages leave the
    knowledge base.

    Example: `kbctl forget https://old.example.com/sitemap.xml -n docs`
    """
    settings = settings_from(db_url=db, data_dir=data_dir, namespace=namespace, config=config)
    out = Output(json_output)
    out.show(api.forget_source(settings, target, keep_pages=keep_pages, wait=wait,
                               announce=out.note))
