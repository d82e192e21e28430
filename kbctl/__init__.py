"""kbctl: docs-as-code knowledge bases on Postgres + pgvector."""

# The one place the version is written: pyproject.toml reads it from here
# (``[tool.setuptools.dynamic]``), so `kbctl --version` needs no package metadata lookup,
# which alone costs more than the rest of that command.
__version__ = "0.1.0"

USER_AGENT = f"kbctl/{__version__}"
