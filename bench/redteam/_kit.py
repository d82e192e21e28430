"""What the attack modules share: running kbctl as an operator would, judging a refusal,
and a loopback site whose routes an attack sets."""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from _common import KBCTL

#: Seconds one kbctl command may take before the attack counts as a hang.
COMMAND_TIMEOUT = 25.0


@dataclass(frozen=True)
class Ran:
    code: int | None  # None: killed at the timeout
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


def kbctl(workdir: Path, *args: str, env: dict[str, str] | None = None,
          timeout: float = COMMAND_TIMEOUT) -> Ran:
    """One kbctl command in ``workdir`` with its own data directory there."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("KBCTL_")}
    environment |= {"KBCTL_DATA_DIR": str(workdir / "kb"), "KBCTL_SERVER_LINGER": "1"}
    environment |= env or {}
    try:
        proc = subprocess.run([*KBCTL, *args], cwd=workdir, capture_output=True, text=True,
                              env=environment, timeout=timeout, check=False)
    except subprocess.TimeoutExpired as exc:
        return Ran(None, _text(exc.stdout), _text(exc.stderr))
    return Ran(proc.returncode, proc.stdout, proc.stderr)


def _text(data: bytes | str | None) -> str:
    if isinstance(data, bytes):
        return data.decode("utf-8", "replace")
    return data or ""


def refused(ran: Ran, needle: str, code: int = 2) -> tuple[bool, str]:
    """Held when kbctl stopped with ``code``, said ``needle``, and printed no traceback."""
    if ran.code is None:
        return False, f"no answer within {COMMAND_TIMEOUT:g} s"
    last = (ran.stderr.strip().splitlines() or [""])[-1][:200]
    held = ran.code == code and needle in ran.output and "Traceback" not in ran.output
    return held, f"exit {ran.code}: {last}"


Route = Callable[["Hit"], tuple[int, dict[str, str], bytes]]


@dataclass(frozen=True)
class Hit:
    method: str
    path: str
    headers: dict[str, str]


class Site:
    """A loopback HTTP server on a fixed port; records every request it gets."""

    def __init__(self, port: int, routes: dict[str, Route] | None = None) -> None:
        self.port = port
        self.routes: dict[str, Route] = dict(routes or {})
        self.hits: list[Hit] = []
        site = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                hit = Hit(self.command, self.path.split("?")[0],
                          {k.lower(): v for k, v in self.headers.items()})
                length = int(self.headers.get("content-length") or 0)
                if length:
                    self.rfile.read(length)
                site.hits.append(hit)
                route = site.routes.get(hit.path)
                status, headers, body = route(hit) if route else (404, {}, b"not here")
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_HEAD = _answer  # noqa: N815

            def log_message(self, *args: object) -> None:
                pass

        ThreadingHTTPServer.allow_reuse_address = True
        self._server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def url(self, path: str = "/") -> str:
        return f"http://127.0.0.1:{self.port}{path}"


@contextmanager
def serving(port: int, routes: dict[str, Route] | None = None) -> Iterator[Site]:
    site = Site(port, routes)
    site._thread.start()
    try:
        yield site
    finally:
        site._server.shutdown()
        site._server.server_close()


def page(body: str, headers: dict[str, str] | None = None, status: int = 200) -> Route:
    data = body.encode()
    return lambda _hit: (status, {"Content-Type": "text/html; charset=utf-8",
                                  **(headers or {})}, data)
