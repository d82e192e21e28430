"""The guarded client against real local servers (with the opt-in) and mock transports."""

from __future__ import annotations

import asyncio
import gzip
import shutil
import ssl
import subprocess
import time
import zlib
from email.utils import formatdate
from pathlib import Path

import httpx
import pytest

import kbctl
from kbctl.errors import BlockedURL, ExtractError, FetchError
from kbctl.net.client import GuardedClient, fetch
from kbctl.net.decode import gunzip
from kbctl.net.policy import FetchResult, NetPolicy
from tests.http_server import LocalServer, Request, Response, html, ok, redirect

from .allocations import AllocationPeak

LOCAL = NetPolicy(allow_private_network=True)
PUBLIC_IP = "93.184.216.34"


def to_public(host: str) -> list[str]:
    return [PUBLIC_IP]


def run(coro):
    return asyncio.run(coro)


def mock(routes: dict[str, httpx.Response], seen: list[httpx.Request]) -> httpx.MockTransport:
    """A transport answering by path and recording every request it is handed."""

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return routes.get(request.url.path, httpx.Response(404))

    return httpx.MockTransport(handler)


class Sleeps:
    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


# --- basics ------------------------------------------------------------------------------


def test_fetch_from_a_local_server_with_the_opt_in() -> None:
    with LocalServer({"/page": html("<h1>Café</h1>", headers={"ETag": '"v1"'})}) as server:
        result = fetch(server.url("/page"), LOCAL)
    assert result == FetchResult(
        url=server.url("/page"), status=200, content="<h1>Café</h1>".encode(),
        content_type="text/html", charset="utf-8", headers=result.headers, etag='"v1"',
        last_modified=None, not_modified=False)
    assert result.text() == "<h1>Café</h1>"
    assert result.headers["content-type"] == "text/html; charset=utf-8"
    sent = server.requests[0].headers
    assert sent["user-agent"] == kbctl.USER_AGENT == f"kbctl/{kbctl.__version__}"
    assert sent["host"] == f"127.0.0.1:{server.port}"


def test_the_same_server_is_refused_without_the_opt_in() -> None:
    with LocalServer({"/page": html("hi")}) as server:
        with pytest.raises(BlockedURL, match="127.0.0.1 is loopback"):
            fetch(server.url("/page"))
        with pytest.raises(BlockedURL, match="is loopback"):
            fetch(server.url("/page", host="localhost"))
        assert server.requests == []


def test_the_connection_goes_to_the_vetted_address_with_the_name_in_host() -> None:
    with LocalServer({"/": html("named")}) as server:
        result = fetch(f"http://Docs.Test:{server.port}/", LOCAL,
                       resolver=lambda host: ["127.0.0.1"])
    assert result.text() == "named"
    assert result.url == f"http://Docs.Test:{server.port}/"
    assert server.requests[0].headers["host"] == f"docs.test:{server.port}"


# --- DNS pinning ---------------------------------------------------------------------------


class Rebinder:
    """Answers a public address first, loopback afterwards (a DNS rebinding attack)."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def __call__(self, host: str) -> list[str]:
        self.calls.append(host)
        return [PUBLIC_IP] if len(self.calls) == 1 else ["127.0.0.1"]


@pytest.mark.parametrize(("url", "host_header", "sni"), [
    ("https://docs.example/guide?x=1", "docs.example", "docs.example"),
    ("http://docs.example:8080/guide?x=1", "docs.example:8080", None),
])
def test_one_resolution_and_the_request_goes_to_its_first_answer(
        url: str, host_header: str, sni: str | None) -> None:
    seen: list[httpx.Request] = []
    rebinder = Rebinder()
    transport = mock({"/guide": httpx.Response(200, text="ok",
                                               headers={"Content-Type": "text/plain"})}, seen)
    result = fetch(url, resolver=rebinder, transport=transport)
    assert result.text() == "ok"
    assert result.url == url
    assert rebinder.calls == ["docs.example"]
    (request,) = seen
    assert request.url.host == PUBLIC_IP
    assert request.url.port == (8080 if sni is None else None)
    assert request.url.query == b"x=1"
    assert request.headers["host"] == host_header
    assert request.extensions.get("sni_hostname") == sni


def test_ipv6_answers_are_bracketed_and_keep_the_name() -> None:
    seen: list[httpx.Request] = []
    transport = mock({"/": httpx.Response(200, text="v6",
                                          headers={"Content-Type": "text/plain"})}, seen)
    result = fetch("https://docs.example/", resolver=lambda h: ["2606:4700:4700::1111"],
                   transport=transport)
    assert result.text() == "v6"
    assert str(seen[0].url) == "https://[2606:4700:4700::1111]/"
    assert seen[0].headers["host"] == "docs.example"


def test_a_refused_address_falls_back_to_the_next_vetted_one() -> None:
    with LocalServer({"/": html("second")}) as server:
        url = f"http://docs.test:{server.port}/"
        # Nothing listens on 127.0.0.2: that connect is refused, 127.0.0.1 answers.
        both = fetch(url, LOCAL, resolver=lambda h: ["127.0.0.2", "127.0.0.1"])
        assert both.text() == "second"
        with pytest.raises(FetchError, match="cannot connect"):
            fetch(url, LOCAL, resolver=lambda h: ["127.0.0.2"])


def test_proxy_settings_in_the_environment_are_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "all_proxy"):
        monkeypatch.setenv(name, "http://127.0.0.1:9")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    with LocalServer({"/": html("direct")}) as server:
        assert fetch(server.url("/"), LOCAL).text() == "direct"


def _certificate(tmp: Path, name: str) -> tuple[Path, Path]:
    cert, key = tmp / f"{name}.pem", tmp / f"{name}.key"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
         "-nodes", "-keyout", str(key), "-out", str(cert), "-days", "2", "-subj", f"/CN={name}",
         "-addext", f"subjectAltName=DNS:{name}",
         "-addext", "basicConstraints=critical,CA:TRUE",
         "-addext", "keyUsage=critical,digitalSignature,keyCertSign"],
        check=True, capture_output=True)
    return cert, key


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")
@pytest.mark.parametrize(("cert_name", "verified"), [("docs.test", True),
                                                     ("other.test", False)])
def test_tls_is_verified_against_the_name_while_connecting_to_the_address(
        tmp_path: Path, cert_name: str, verified: bool) -> None:
    cert, key = _certificate(tmp_path, cert_name)
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(cert, key)
    client_ctx = ssl.create_default_context(cafile=str(cert))
    with LocalServer({"/": html("secure")}, ssl_context=server_ctx) as server:
        url = f"https://docs.test:{server.port}/"
        transport = httpx.AsyncHTTPTransport(verify=client_ctx)
        if verified:
            result = fetch(url, LOCAL, resolver=lambda h: ["127.0.0.1"], transport=transport)
            assert result.text() == "secure"
            assert server.requests[0].headers["host"] == f"docs.test:{server.port}"
        else:
            with pytest.raises(FetchError, match="CERTIFICATE_VERIFY_FAILED|certificate"):
                fetch(url, LOCAL, resolver=lambda h: ["127.0.0.1"], transport=transport)
            assert server.requests == []


# --- redirects -----------------------------------------------------------------------------


def test_redirects_are_followed_by_hand() -> None:
    routes = {"/a": redirect("/b", 301), "/b": redirect("c?q=1", 307), "/c": html("end")}
    with LocalServer(routes) as server:
        result = fetch(server.url("/a"), LOCAL)
    assert result.url == server.url("/c?q=1")
    assert result.text() == "end"
    assert [r.path for r in server.requests] == ["/a", "/b", "/c"]


def test_exactly_five_hops_pass_and_a_sixth_is_refused() -> None:
    routes = {f"/{i}": redirect(f"/{i + 1}") for i in range(6)}
    routes["/5"] = html("five hops")
    with LocalServer(routes) as server:
        assert fetch(server.url("/0"), LOCAL).text() == "five hops"
        routes6 = {f"/{i}": redirect(f"/{i + 1}") for i in range(7)}
        server.routes.update(routes6)
        server.routes["/6"] = html("six hops")
        with pytest.raises(FetchError, match=r"too many redirects \(more than 5\)"):
            fetch(server.url("/0"), LOCAL)
        with pytest.raises(FetchError, match="too many redirects"):
            fetch(server.url("/4"), NetPolicy(allow_private_network=True, max_redirects=1))


def test_a_redirect_loop_is_an_error() -> None:
    with (LocalServer({"/x": redirect("/y"), "/y": redirect("/x")}) as server,
          pytest.raises(FetchError, match="redirect loop") as err):
        fetch(server.url("/x"), LOCAL)
    assert server.hits("/x") == 1
    assert server.hits("/y") == 1
    assert "(redirected from" in str(err.value)


def test_redirect_to_loopback_is_refused_after_an_allowed_public_hop() -> None:
    seen: list[httpx.Request] = []
    transport = mock({"/": httpx.Response(302, headers={"Location": "http://127.0.0.1:9/x"})},
                     seen)
    with pytest.raises(BlockedURL) as err:
        fetch("https://docs.example/", resolver=to_public, transport=transport)
    assert "127.0.0.1 is loopback" in str(err.value)
    assert "(redirected from https://docs.example/)" in str(err.value)
    assert err.value.url == "http://127.0.0.1:9/x"
    assert len(seen) == 1


@pytest.mark.parametrize("location", [
    "http://169.254.169.254/latest/meta-data/",
    "http://[::ffff:a9fe:a9fe]/latest/meta-data/",
    "http://2852039166/latest/meta-data/",
])
def test_redirect_to_cloud_metadata_is_refused(location: str) -> None:
    seen: list[httpx.Request] = []
    transport = mock({"/": httpx.Response(302, headers={"Location": location})}, seen)
    with pytest.raises(BlockedURL, match="169.254.169.254"):
        fetch("http://docs.example/", resolver=to_public, transport=transport)
    assert len(seen) == 1
    # The opt-in for local sites does not open the metadata endpoint either.
    with (LocalServer({"/": redirect(location)}) as server,
          pytest.raises(BlockedURL, match="cloud metadata endpoint")):
        fetch(server.url("/"), LOCAL)
    assert server.hits("/") == 1


def test_every_hop_is_resolved_and_checked_again() -> None:
    seen: list[httpx.Request] = []
    asked: list[str] = []

    def resolver(host: str) -> list[str]:
        asked.append(host)
        return [PUBLIC_IP] if host == "docs.example" else ["10.1.2.3"]

    transport = mock({"/": httpx.Response(301, headers={"Location": "https://intra.example/"})},
                     seen)
    with pytest.raises(BlockedURL, match="10.1.2.3 is private"):
        fetch("https://docs.example/", resolver=resolver, transport=transport)
    assert asked == ["docs.example", "intra.example"]


@pytest.mark.parametrize(("location", "words"), [
    ("file:///etc/passwd", "not http or https"),
    ("gopher://docs.example/", "not http or https"),
    ("http://user:pw@docs.example/", "user info"),
])
def test_redirects_to_other_schemes_or_with_userinfo_are_refused(location: str,
                                                                 words: str) -> None:
    with (LocalServer({"/": redirect(location)}) as server,
          pytest.raises(BlockedURL, match=words) as err):
        fetch(server.url("/"), LOCAL)
    assert str(err.value).endswith(f"(redirected from {server.url('/')})")


# --- size, encoding, content type ------------------------------------------------------------


def test_size_cap_with_and_without_content_length() -> None:
    policy = NetPolicy(allow_private_network=True, max_bytes=1000)
    routes = {"/fits": ok(b"x" * 1000), "/big": ok(b"x" * 1001),
              "/stream": ok([b"x" * 400] * 3)}
    with LocalServer(routes) as server:
        assert fetch(server.url("/fits"), policy).content == b"x" * 1000
        for path in ("/big", "/stream"):
            with pytest.raises(FetchError, match="larger than 1000 bytes") as err:
                fetch(server.url(path), policy)
            assert err.value.status == 200


def test_gzip_and_deflate_bodies_are_decoded() -> None:
    text = "<p>" + "compressible " * 500 + "</p>"
    raw_deflate = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    routes = {
        "/gz": ok(gzip.compress(text.encode()), "text/html",
                  headers={"Content-Encoding": "gzip"}),
        "/zlib": ok(zlib.compress(text.encode()), "text/html",
                    headers={"Content-Encoding": "deflate"}),
        "/raw": ok(raw_deflate.compress(text.encode()) + raw_deflate.flush(), "text/html",
                   headers={"Content-Encoding": "deflate"}),
        "/cut": ok(gzip.compress(text.encode())[:-20], "text/html",
                   headers={"Content-Encoding": "gzip"}),
        "/br": ok(b"??", "text/html", headers={"Content-Encoding": "br"}),
    }
    with LocalServer(routes) as server:
        for path in ("/gz", "/zlib", "/raw"):
            assert fetch(server.url(path), LOCAL).text() == text
        with pytest.raises(FetchError, match="truncated"):
            fetch(server.url("/cut"), LOCAL)
        with pytest.raises(FetchError, match="unsupported content-encoding 'br'"):
            fetch(server.url("/br"), LOCAL)
        assert server.requests[0].headers["accept-encoding"] == "gzip, deflate"


def _gzip_bomb(size: int) -> bytes:
    packer = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS | 16)
    block = bytes(1 << 20)
    return b"".join(packer.compress(block) for _ in range(size >> 20)) + packer.flush()


def test_a_gzip_bomb_stops_at_the_cap_without_inflating() -> None:
    bomb = _gzip_bomb(128 << 20)  # 128 MiB of zeros in about 130 KB
    assert len(bomb) < 200_000
    policy = NetPolicy(allow_private_network=True, max_bytes=1 << 20)
    route = ok([bomb[i:i + 16384] for i in range(0, len(bomb), 16384)], "text/html",
               headers={"Content-Encoding": "gzip"})
    with LocalServer({"/bomb": route}) as server, AllocationPeak() as peak, pytest.raises(
            FetchError, match="larger than 1048576 bytes") as err:
        fetch(server.url("/bomb"), policy)
    assert "after decompression" in str(err.value)
    assert peak.bytes < 12 << 20, f"peak memory {peak.bytes} bytes: the bomb was inflated"
    with pytest.raises(FetchError, match="larger than"):
        gunzip(bomb, max_bytes=1 << 20, url="https://docs.example/sitemap.xml.gz")


def test_gunzip_for_gzip_files() -> None:
    data = b"<urlset/>" * 100
    assert gunzip(gzip.compress(data), max_bytes=len(data), url="u") == data
    with pytest.raises(FetchError, match="larger than"):
        gunzip(gzip.compress(data), max_bytes=len(data) - 1, url="u")
    with pytest.raises(FetchError, match="corrupt"):
        gunzip(b"not gzip at all", max_bytes=100, url="u")
    with pytest.raises(FetchError, match="truncated"):
        gunzip(gzip.compress(data)[:-30], max_bytes=10_000, url="u")


def test_content_types_are_checked() -> None:
    routes = {"/bin": ok(b"\x00\x01", "application/octet-stream"),
              "/none": ok(b"hello", None),
              "/md": ok("# Title", "text/markdown; charset=UTF-8"),
              "/csv": ok("a,b", "text/csv"),
              "/gz": ok(gzip.compress(b"<urlset/>"), "application/x-gzip")}
    with LocalServer(routes) as server:
        with pytest.raises(FetchError, match="content type application/octet-stream"):
            fetch(server.url("/bin"), LOCAL)
        with pytest.raises(FetchError, match=r"content type \(none\)"):
            fetch(server.url("/none"), LOCAL)
        with pytest.raises(FetchError, match="content type text/csv"):
            fetch(server.url("/csv"), LOCAL)
        md = fetch(server.url("/md"), LOCAL)
        assert (md.content_type, md.charset, md.text()) == ("text/markdown", "utf-8", "# Title")
        gz = fetch(server.url("/gz"), LOCAL)
        assert gzip.decompress(gz.content) == b"<urlset/>"
        own = fetch(server.url("/bin"), LOCAL, content_types=["application/octet-stream"])
        assert own.content == b"\x00\x01"
        assert fetch(server.url("/csv"), LOCAL, content_types=["text/*"]).text() == "a,b"
        assert fetch(server.url("/none"), LOCAL, content_types=["*/*"]).content == b"hello"


def test_text_uses_the_charset_and_refuses_undecodable_bytes() -> None:
    routes = {"/latin": ok("café".encode("latin-1"), "text/plain; charset=ISO-8859-1"),
              "/bad": ok(b"caf\xe9", "text/plain"),
              "/bom": ok(b"\xef\xbb\xbfhi", "text/plain; charset=latin-1")}
    with LocalServer(routes) as server:
        assert fetch(server.url("/latin"), LOCAL).text() == "café"
        assert fetch(server.url("/bom"), LOCAL).text() == "hi"
        with pytest.raises(ExtractError, match="not valid utf-8"):
            fetch(server.url("/bad"), LOCAL).text()


# --- statuses, timeouts, retries -------------------------------------------------------------


@pytest.mark.parametrize("status", [404, 410, 500, 502])
def test_error_statuses_raise_with_the_status(status: int) -> None:
    with LocalServer({"/": ok("no", status=status)}) as server:
        with pytest.raises(FetchError, match=f"HTTP {status}") as err:
            fetch(server.url("/"), LOCAL)
        assert err.value.status == status
        assert err.value.url == server.url("/")
        assert server.hits("/") == 1  # only 429 and 503 are retried


def test_a_slow_server_times_out() -> None:
    policy = NetPolicy(allow_private_network=True, read_timeout=0.2)
    routes = {"/slow": html("late", delay=1.0),
              "/drip": ok([b"a"] * 50, "text/plain", chunk_delay=0.1)}
    with LocalServer(routes) as server:
        with pytest.raises(FetchError, match="timed out") as err:
            fetch(server.url("/slow"), policy)
        assert not isinstance(err.value, BlockedURL)
        drip = NetPolicy(allow_private_network=True, read_timeout=5, total_timeout=0.3)
        with pytest.raises(FetchError, match=r"timed out after 0.3 s"):
            fetch(server.url("/drip"), drip)


def _flaky(failures: list[Response], final: Response):
    def handler(request: Request) -> Response:
        return failures.pop(0) if failures else final
    return handler


def test_429_waits_for_retry_after_then_succeeds() -> None:
    sleeps = Sleeps()
    route = _flaky([ok("slow down", status=429, headers={"Retry-After": "3"})], html("done"))

    async def go() -> FetchResult:
        async with GuardedClient(LOCAL, sleep=sleeps) as client:
            return await client.fetch(server.url("/"))

    with LocalServer({"/": route}) as server:
        assert run(go()).text() == "done"
    assert sleeps.waits == [3.0]
    assert server.hits("/") == 2


def test_retry_after_as_a_date_is_capped_and_503_gives_up_after_the_retries() -> None:
    sleeps = Sleeps()
    far = formatdate(time.time() + 3600, usegmt=True)
    route = _flaky([ok("busy", status=503, headers={"Retry-After": far}),
                    ok("busy", status=503)], ok("still busy", status=503))

    async def go() -> FetchResult:
        async with GuardedClient(LOCAL, sleep=sleeps) as client:
            return await client.fetch(server.url("/"))

    with (LocalServer({"/": route}) as server,
          pytest.raises(FetchError, match="HTTP 503 .* after 3 attempts") as err):
        run(go())
    assert err.value.status == 503
    assert sleeps.waits == [30.0, 2.0]  # the date capped at 30 s; then plain backoff
    assert server.hits("/") == 3


# --- conditional requests --------------------------------------------------------------------


def test_etag_and_last_modified_make_a_304_not_modified() -> None:
    stamp = "Wed, 21 Oct 2015 07:28:00 GMT"

    def page(request: Request) -> Response:
        if request.headers.get("if-none-match") == '"v2"' or \
                request.headers.get("if-modified-since") == stamp:
            return Response(304, headers={"ETag": '"v2"'})
        return html("fresh", headers={"ETag": '"v2"', "Last-Modified": stamp})

    with LocalServer({"/": page}) as server:
        first = fetch(server.url("/"), LOCAL)
        assert (first.not_modified, first.etag, first.last_modified) == (False, '"v2"', stamp)
        again = fetch(server.url("/"), LOCAL, etag=first.etag)
        assert again.not_modified and again.status == 304 and again.content == b""
        assert again.etag == '"v2"'
        by_date = fetch(server.url("/"), LOCAL, last_modified=first.last_modified)
        assert by_date.not_modified and by_date.last_modified == stamp
        stale = fetch(server.url("/"), LOCAL, etag='"v1"')
        assert not stale.not_modified and stale.text() == "fresh"
    assert server.requests[1].headers["if-none-match"] == '"v2"'
    assert server.requests[2].headers["if-modified-since"] == stamp


# --- concurrency -----------------------------------------------------------------------------


def _fetch_all(urls: list[str], policy: NetPolicy, resolver) -> list[FetchResult]:
    async def go() -> list[FetchResult]:
        async with GuardedClient(policy, resolver=resolver) as client:
            return await asyncio.gather(*(client.fetch(u) for u in urls))
    return run(go())


def test_total_and_per_host_limits_hold_and_are_reached() -> None:
    policy = NetPolicy(allow_private_network=True, concurrency=8, per_host=4)
    with LocalServer({"/slow": html("ok", delay=0.25)}) as server:
        urls = [f"http://{name}.test:{server.port}/slow"
                for name in ("a", "b", "c") for _ in range(6)]
        results = _fetch_all(urls, policy, lambda host: ["127.0.0.1"])
    assert [r.text() for r in results] == ["ok"] * 18
    assert server.max_in_flight == 8
    peaks = server.max_in_flight_by_host
    assert set(peaks) == {"a.test", "b.test", "c.test"}
    assert max(peaks.values()) == 4


def test_per_host_limit_alone() -> None:
    policy = NetPolicy(allow_private_network=True, concurrency=8, per_host=3)
    with LocalServer({"/slow": html("ok", delay=0.2)}) as server:
        _fetch_all([server.url("/slow")] * 7, policy, None)
    assert server.max_in_flight == 3
    assert server.hits("/slow") == 7
