"""One error tree for the whole project.

Each class carries the process exit code it stands for, so the CLI maps any failure to an
exit code in exactly one place (``KbctlError.exit_code``) and nothing else needs to know.

Exit codes: 1 the job ran and its verdict is a failure; 2 bad usage or bad input;
3 the environment failed (database, API keys, embedder service).
"""

from __future__ import annotations


class KbctlError(Exception):
    """Base of every error kbctl raises on purpose."""

    exit_code: int = 1

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def to_dict(self) -> dict[str, str]:
        out = {"type": type(self).__name__, "message": self.message}
        if self.hint:
            out["hint"] = self.hint
        return out


# --- exit 1: the job ran, the verdict is a failure -------------------------------------


class VerdictFailure(KbctlError):
    """The run completed but its result is a failure (failed sources, failed eval cases)."""


class LockBusy(KbctlError):
    """Another kbctl run holds the namespace lock."""


class SourceError(KbctlError):
    """One source could not be loaded; recorded in the report, the run goes on."""


class FetchError(SourceError):
    """A network fetch failed (status, timeout, size cap, content type)."""

    def __init__(self, message: str, *, url: str, status: int | None = None,
                 hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.url = url
        self.status = status


class Unreachable(FetchError):
    """No answer from the host: its name does not resolve, it refuses the connection, or
    it times out (a site that is down, or a wrong address)."""


class NotAPage(FetchError):
    """The response is not a kind of document the fetch takes (its content type)."""


class BlockedURL(FetchError):
    """The SSRF guard refused a URL; the message names the rule and the address."""


class DefinitionError(SourceError):
    """A recorded source definition no longer validates: that source fails, the run goes on."""


class ExtractError(SourceError):
    """Content was fetched but could not be turned into text."""


# --- exit 2: bad usage or bad input ----------------------------------------------------


class InputError(KbctlError):
    """Bad usage or bad input; the message names the file, field and line."""

    exit_code = 2


class UsageError(InputError):
    """The command line itself is wrong: an unknown flag, a missing argument, a value of
    the wrong type."""


class ConfigError(InputError):
    """Invalid kbctl.yaml or option combination."""


class SuiteError(InputError):
    """Invalid eval suite file."""


class PathError(InputError):
    """A path that breaks the rules (memory tiers, file roots)."""


class MemoryWriteRefused(InputError):
    """A memory write outside the phase the runtime allows (the append guard)."""


class EmbedderMismatch(InputError):
    """The KB was built with another embedder than the one asked for."""


class RetrieverMismatch(InputError):
    """An eval gate names the retriever it was written for, and this run cannot measure
    it (another embedder, fusion or reranker, or one that cannot run here): the gate
    refuses rather than judge a retriever nobody ships."""


# --- exit 3: the environment failed ----------------------------------------------------


class EnvironmentFailure(KbctlError):
    """Something outside kbctl's input is broken or missing."""

    exit_code = 3


class DatabaseError(EnvironmentFailure):
    """The database is unreachable, misconfigured or lacks the vector extension."""


class EmbedderError(EnvironmentFailure):
    """The embedding provider failed after retries, or answered nonsense."""


class AuthError(EmbedderError):
    """Missing or rejected API key."""


class ModelUnavailable(EmbedderError):
    """A local model that cannot be loaded here: every batch would fail alike, so a run
    ends at the first."""


class RerankerError(EnvironmentFailure):
    """The rerank provider failed after retries, refused the key, or answered nonsense."""


# --- 129, 130 and 143: stopped from outside ----------------------------------------------


class Interrupted(KbctlError):
    """Ctrl-C: the run stopped where it was. Every write is one transaction, so what was
    written before is whole and kept."""

    exit_code = 130  # 128 + SIGINT, as shells report it


class Terminated(Interrupted):
    """SIGTERM (a cron or CI timeout, a stopping container or service), handled like Ctrl-C
    so that the same cleanup runs: the server handle is dropped, nothing is left half."""

    exit_code = 143  # 128 + SIGTERM


class HungUp(Interrupted):
    """SIGHUP (the ssh session or terminal of a hand-run command closed), handled like
    SIGTERM: before, the process died on the spot with its run left unfinished."""

    exit_code = 129  # 128 + SIGHUP


class TerminateSignal(KeyboardInterrupt):
    """Raised in the main thread on SIGTERM: a KeyboardInterrupt, so that every ``except
    KeyboardInterrupt`` and ``finally`` that cleans up after Ctrl-C runs for it too."""


class HangupSignal(TerminateSignal):
    """Raised in the main thread on SIGHUP, like ``TerminateSignal``."""
