"""Where one command's output goes: results on stdout (exactly one JSON document with
``--json``), progress and messages on stderr, errors for both."""

from __future__ import annotations

import codecs
import contextlib
import errno
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, NoReturn

from rich.console import Console

from ..errors import EnvironmentFailure, KbctlError
from ..hygiene import clipped
from ..pipeline.progress import ProgressEvent
from .formats import Formats, Part, Rendered, check_format
from .jsonable import json_text
from .registry import formats_for
from .text import shown

# What a shell reports for a writer whose reader went away (128 + SIGPIPE), as for any
# Unix tool in `| head`: not 1, which here means "the job ran and its verdict failed".
READER_GONE_EXIT = 141


def _reader_gone(stream: Any) -> NoReturn:
    """The reader of ``stream`` went away (``| head``): write no more, end as SIGPIPE would."""
    _silence(stream)
    raise SystemExit(READER_GONE_EXIT)


def _silence(stream: Any) -> None:
    """Point ``stream``'s descriptor at /dev/null: what is still written to it (the flush at
    exit included) does not fail again."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())


def _unwritable(stream: Any, exc: OSError) -> None:
    """``stream`` cannot be written (a full disk under ``> out.json``). Stdout holds the
    result: say so on stderr in one line and end as an environment failure, not with a
    traceback and exit 1 ("the job failed") after work that may well have been done.
    Stderr holds only chatter: it is dropped, and the command goes on."""
    _silence(stream)
    if stream is sys.stderr:
        return
    _result_lost(str(exc.strerror or exc))


def _result_lost(why: str) -> NoReturn:
    """The result cannot reach stdout: one line on stderr, if it is there, and exit 3."""
    if sys.stderr is not None:
        with contextlib.suppress(OSError, ValueError):
            print(f"kbctl: error: could not write to stdout: {why}", file=sys.stderr,
                  flush=True)
    raise SystemExit(EnvironmentFailure.exit_code)


def stdout_failed(exc: OSError) -> NoReturn:
    """A write to stdout failed outside the output layer (a server's own transport): end
    as the output layer does, 141 for a reader gone, else an environment failure."""
    if isinstance(exc, BrokenPipeError):
        _reader_gone(sys.stdout)
    _unwritable(sys.stdout, exc)
    raise SystemExit(EnvironmentFailure.exit_code)  # _unwritable ends the process


# Off a terminal, long work says how far it is this often (seconds).
PROGRESS_LINE_S = 30.0
# Tables written to a pipe or a CI log are laid out this wide (COLUMNS overrides).
PIPED_WIDTH = 160


def _write_whole(stream: Any, text: str) -> None:
    """Write all of ``text``. A write larger than a pipe's buffer whose reader then leaves
    comes back short instead of failing, and a text stream drops the rest without a word:
    ``kbctl eval … | head`` ended with the verdict's code, its output cut. Writing the rest
    raises the BrokenPipeError that ends the command as SIGPIPE would."""
    if stream is None:  # started with the stream closed: nowhere to write
        return
    buffer = getattr(stream, "buffer", None)
    if buffer is None:  # a text-only stream (StringIO) takes everything at once
        stream.write(text)
        stream.flush()
        return
    stream.flush()  # what the text layer holds goes first
    data = memoryview(_encoded(text, stream.encoding or "utf-8", stream.errors or "strict"))
    while data:
        written = buffer.write(data)
        if not written:
            raise OSError(errno.EIO, "the stream took no bytes")
        data = data[written:]
    buffer.flush()


def _json_escapes(error: UnicodeError) -> tuple[str, int]:
    """A character the stream's encoding cannot hold as ``\\uXXXX`` (astral ones as a
    surrogate pair): a JSON escape, so ``--json`` stays one valid document, and readable
    in a table."""
    if not isinstance(error, UnicodeEncodeError):
        raise error
    out = []
    for char in error.object[error.start:error.end]:
        code = ord(char)
        if code > 0xFFFF:
            code -= 0x10000
            out.append(f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}")
        else:
            out.append(f"\\u{code:04x}")
    return "".join(out), error.end


codecs.register_error("kbctl-escape", _json_escapes)


def _encoded(text: str, encoding: str, errors: str) -> bytes:
    """``text`` in the stream's encoding: an ASCII stdout (``PYTHONIOENCODING=ascii``, a
    POSIX locale without UTF-8 mode) gave a traceback and exit 1 on the first ``›`` of a
    breadcrumb."""
    try:
        return text.encode(encoding, errors)
    except UnicodeEncodeError:
        return text.encode(encoding, "kbctl-escape")


class _WholeWrites:
    """``sys.stdout`` or ``sys.stderr`` as rich writes to it: each write whole
    (``_write_whole``), the stream looked up at each use as rich's default is."""

    def __init__(self, name: str) -> None:
        self._name = name

    def write(self, text: str) -> int:
        _write_whole(getattr(sys, self._name), text)
        return len(text)

    def __getattr__(self, attr: str) -> Any:
        return getattr(getattr(sys, self._name), attr)


class _Console(Console):
    def __init__(self, *, stderr: bool = False, **options: Any) -> None:
        # emoji codes in a string part (a table's cells) stay text, as ``text.styled``'s do
        super().__init__(file=_WholeWrites("stderr" if stderr else "stdout"), stderr=stderr,
                         emoji=False, **options)

    def on_broken_pipe(self) -> None:
        _reader_gone(self.file)


class Output:
    """Where results, chatter and errors go for one command invocation."""

    def __init__(self, json_mode: bool = False, *, quiet: bool = False) -> None:
        self.json_mode = json_mode
        self.quiet = quiet
        self.out = _Console(soft_wrap=True)
        if not self.out.is_terminal and not os.environ.get("COLUMNS"):
            # a log or a pipe has no width to fit: rich's 80 columns cut citations in two
            self.out.width = PIPED_WIDTH
        # chatter is plain: rich's highlighter costs quadratic time on a long line
        self.err = _Console(stderr=True, soft_wrap=True, highlight=False)
        if not self.err.is_terminal and not os.environ.get("COLUMNS"):
            self.err.width = PIPED_WIDTH  # a CI log's failure table keeps its URLs whole

    def show(self, result: Any, fmt: str | None = None, *, formats: Formats | None = None,
             **options: Any) -> None:
        """Render ``result`` in ``fmt`` (``json`` under ``--json``, else its table)."""
        name = "json" if self.json_mode else fmt or "table"
        renderer = check_format(formats if formats is not None else formats_for(result), name)
        self.emit(renderer(result, **options))

    def emit(self, rendered: Rendered) -> None:
        for stream, part in rendered.parts:
            if stream == "out":
                self._write(self.out, sys.stdout, part, result=True)
            else:
                self._write(self.err, sys.stderr, part)

    @staticmethod
    def _write(console: Console, stream: Any, part: Part, *, result: bool = False) -> None:
        """Write ``part``; a ``result`` that cannot reach stdout ends the command."""
        if stream is None:  # started with the stream closed (``>&-``): nowhere to write
            if result:  # the result is lost, as on a full disk: not a silent success
                _result_lost("it is closed")
            return
        try:
            if isinstance(part, str):
                _write_whole(stream, part)
            else:
                console.print(part)
        except BrokenPipeError:
            _reader_gone(stream)
        except OSError as exc:
            _unwritable(stream, exc)

    def json(self, data: Any) -> None:
        self._write(self.out, sys.stdout, json_text(data), result=True)

    def note(self, message: str) -> None:
        """A line for people, on stderr so stdout stays clean for pipes."""
        if not self.quiet:
            self.err.print(f"[dim]{shown(clipped(message), keep_newlines=True)}[/dim]")

    def error(self, exc: KbctlError) -> None:
        if self.json_mode:  # the error's own exit code stands, wherever stdout went
            self._write(self.out, sys.stdout,
                        json_text({"error": exc.to_dict(), "exitCode": exc.exit_code}))
        message = shown(clipped(exc.message), keep_newlines=True)
        self.err.print(f"[bold red]error:[/bold red] {message}")
        if exc.hint:
            self.err.print(f"[yellow]hint:[/yellow] {shown(clipped(exc.hint), keep_newlines=True)}")

    @contextmanager
    def progress(self, label: str) -> Iterator[Any]:
        """A progress bar on stderr when it is a terminal, else a line now and then (a CI
        log or a cron mail sat silent through a 40 s ingest); a callback for the pipeline."""
        if self.quiet:
            yield lambda event: None
            return
        if not self.err.is_terminal:
            yield self._progress_lines(label)
            return
        # here, not at the top: a query or a status draws no bar
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        bar = Progress(TextColumn("[bold]{task.description}"), BarColumn(),
                       MofNCompleteColumn(), TextColumn("{task.fields[status]}"),
                       TimeElapsedColumn(), console=self.err, transient=True)
        counts = {"written": 0, "skipped": 0, "failed": 0}
        with bar:
            task = bar.add_task(label, total=None, status="")

            def on_event(event: ProgressEvent) -> None:
                if event.stage == "total":
                    bar.update(task, total=(bar.tasks[0].total or 0) + (event.total or 0))
                elif event.stage == "note":
                    bar.console.print(f"[dim]{shown(event.message)}[/dim]")
                elif event.stage in counts:
                    counts[event.stage] += 1
                    bar.advance(task)
                    bar.update(task, status=f"written {counts['written']} · unchanged "
                                            f"{counts['skipped']} · failed {counts['failed']}")

            yield on_event

    def _progress_lines(self, label: str) -> Any:
        """A callback that says how far the work is, at most every ``PROGRESS_LINE_S``
        (notes are left to the report, which repeats them)."""
        counts = {"written": 0, "skipped": 0, "failed": 0}
        total = 0
        started = last = time.monotonic()

        def on_event(event: ProgressEvent) -> None:
            nonlocal total, last
            if event.stage == "total":
                total += event.total or 0
            elif event.stage in counts:
                counts[event.stage] += 1
            now = time.monotonic()
            if now - last < PROGRESS_LINE_S:
                return
            last = now
            done = sum(counts.values())
            of = f" of {total:,}" if total >= done else ""
            self.err.print(f"[dim]{label}: {done:,}{of} done (written {counts['written']:,} "
                           f"· unchanged {counts['skipped']:,} · failed {counts['failed']:,})"
                           f" after {now - started:.0f}s[/dim]")

        return on_event
