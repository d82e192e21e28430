"""`kbctl status`: what each namespace holds, and how its sources last synced."""

from __future__ import annotations

from ..pipeline.status import status as namespace_status
from ..render import Output
from .common import ConfigOpt, DataDirOpt, DbOpt, JsonOpt, NamespaceOpt, guard, settings_from


@guard
def status(
    db: DbOpt = None, data_dir: DataDirOpt = None, namespace: NamespaceOpt = None,
    config: ConfigOpt = None, json_output: JsonOpt = False,
) -> None:
    """Sources, chunks, embedder and last sync of each namespace.

    Example: `kbctl status --json | jq '.namespaces[] | {namespace, lastOkAt}'`
    """
    # -n is checked as everywhere ('docs ' is refused), and only narrows what is shown
    settings = settings_from(db_url=db, data_dir=data_dir, config=config, namespace=namespace)
    report = namespace_status(settings, namespace)
    out = Output(json_output)
    out.show(report)
