"""A real threaded HTTP(S) server on 127.0.0.1 for tests: routes map a path to a response.

    with LocalServer({"/": html("<h1>hi</h1>"), "/old": redirect("/")}) as server:
        fetch(server.url("/old"), NetPolicy(allow_private_network=True))

A route is a ``Response`` or a callable ``Request -> Response`` (for stateful servers).
Unknown paths answer 404. The server records every request and counts requests in flight,
in total and per ``Host`` name, so tests can observe a client's concurrency. Pass a server
``ssl_context`` to serve https.
"""

from __future__ import annotations

import ssl
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    query: str
    headers: dict[str, str]  # lower-case names
    body: bytes


@dataclass
class Response:
    """``body`` as bytes gets a Content-Length; an iterable of bytes is sent chunked."""

    status: int = 200
    body: bytes | Iterable[bytes] = b""
    headers: Mapping[str, str] = field(default_factory=dict)
    delay: float = 0.0  # seconds before the status line
    chunk_delay: float = 0.0  # seconds between chunks of an iterable body


Handler = Response | Callable[[Request], Response]


def ok(body: bytes | str | Iterable[bytes], content_type: str | None = "text/plain",
       status: int = 200, headers: Mapping[str, str] | None = None,
       delay: float = 0.0, chunk_delay: float = 0.0) -> Response:
    """A response with a body (str is UTF-8 encoded) and, unless None, a Content-Type."""
    all_headers = {"Content-Type": content_type} if content_type else {}
    all_headers.update(headers or {})
    data = body.encode() if isinstance(body, str) else body
    return Response(status, data, all_headers, delay=delay, chunk_delay=chunk_delay)


def html(body: str, status: int = 200, headers: Mapping[str, str] | None = None,
         delay: float = 0.0) -> Response:
    return ok(body, "text/html; charset=utf-8", status, headers, delay)


def redirect(location: str, status: int = 302) -> Response:
    return Response(status=status, headers={"Location": location})


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    request_queue_size = 128
    owner: LocalServer

    def handle_error(self, request: object, client_address: object) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError | ssl.SSLError):
            super().handle_error(request, client_address)  # type: ignore[arg-type]


class _RequestHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def do_GET(self) -> None:  # noqa: N802 (http.server naming)
        self.server.owner._serve(self)

    do_POST = do_PUT = do_DELETE = do_GET  # noqa: N815

    def do_HEAD(self) -> None:  # noqa: N802
        self.server.owner._serve(self, head=True)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


class LocalServer:
    """Threaded server on 127.0.0.1 with an ephemeral port; a context manager."""

    def __init__(self, routes: Mapping[str, Handler] | None = None, *,
                 ssl_context: ssl.SSLContext | None = None) -> None:
        self.routes: dict[str, Handler] = dict(routes or {})
        self.requests: list[Request] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.max_in_flight_by_host: dict[str, int] = {}
        self._by_host: dict[str, int] = {}
        self._lock = threading.Lock()
        self._httpd = _Server(("127.0.0.1", 0), _RequestHandler)
        self._httpd.owner = self
        self.scheme = "https" if ssl_context else "http"
        if ssl_context:
            self._httpd.socket = ssl_context.wrap_socket(self._httpd.socket, server_side=True)
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.02,),
                                        daemon=True)

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    def url(self, path: str = "/", host: str = "127.0.0.1") -> str:
        return f"{self.scheme}://{host}:{self.port}{path}"

    def hits(self, path: str) -> int:
        with self._lock:
            return sum(1 for r in self.requests if r.path == path)

    def hits_once(self, path: str, expected: int, seconds: float = 30.0) -> int:
        """``hits(path)`` once it reaches ``expected`` (or after ``seconds``). A request
        whose client gave up on it (a deadline passed) is still read by the server, but on
        a busy machine maybe after the client has moved on."""
        end = time.monotonic() + seconds
        while self.hits(path) < expected and time.monotonic() < end:
            time.sleep(0.01)
        return self.hits(path)

    def start(self) -> LocalServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> LocalServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def _serve(self, h: _RequestHandler, head: bool = False) -> None:
        parts = urlsplit(h.path)
        length = int(h.headers.get("Content-Length") or 0)
        request = Request(method=h.command, path=parts.path, query=parts.query,
                          headers={k.lower(): v for k, v in h.headers.items()},
                          body=h.rfile.read(length) if length else b"")
        host = request.headers.get("host", "").rsplit(":", 1)[0]
        self._enter(request, host)
        try:
            route = self.routes.get(request.path)
            if route is None:
                response = Response(404, b"not found", {"Content-Type": "text/plain"})
            else:
                response = route(request) if callable(route) else route
            self._write(h, response, head)
        except (BrokenPipeError, ConnectionResetError):
            h.close_connection = True
        finally:
            self._leave(host)

    def _enter(self, request: Request, host: str) -> None:
        with self._lock:
            self.requests.append(request)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            self._by_host[host] = self._by_host.get(host, 0) + 1
            peak = self.max_in_flight_by_host.get(host, 0)
            self.max_in_flight_by_host[host] = max(peak, self._by_host[host])

    def _leave(self, host: str) -> None:
        with self._lock:
            self.in_flight -= 1
            self._by_host[host] -= 1

    @staticmethod
    def _write(h: _RequestHandler, response: Response, head: bool) -> None:
        if response.delay:
            time.sleep(response.delay)
        h.send_response(response.status)
        for name, value in response.headers.items():
            h.send_header(name, value)
        body = response.body
        if isinstance(body, bytes | bytearray):
            h.send_header("Content-Length", str(len(body)))
            h.end_headers()
            if not head:
                h.wfile.write(body)
            return
        h.send_header("Transfer-Encoding", "chunked")
        h.end_headers()
        for chunk in body:
            if response.chunk_delay:
                time.sleep(response.chunk_delay)
            if chunk and not head:
                h.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                h.wfile.flush()
        if not head:
            h.wfile.write(b"0\r\n\r\n")
