"""kbctl: docs-as-code knowledge bases on Postgres + pgvector."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("kbctl")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0"

USER_AGENT = f"kbctl/{__version__}"
