"""The SSRF guard: schemes, userinfo, every blocked range, numeric host forms, opt-in."""

from __future__ import annotations

import ipaddress

import pytest

from kbctl.errors import BlockedURL, FetchError
from kbctl.net.guard import CLOUD_ENDPOINTS, blocked_reason, check_url
from kbctl.net.policy import NetPolicy

OPEN = NetPolicy(allow_private_network=True)


def answers(*addresses: str):
    """A resolver that answers ``addresses`` for any name and records the names asked."""
    asked: list[str] = []

    def resolver(host: str) -> list[str]:
        asked.append(host)
        return list(addresses)

    resolver.asked = asked  # type: ignore[attr-defined]
    return resolver


def no_dns(host: str) -> list[str]:
    raise AssertionError(f"numeric host must not reach the resolver (asked for {host})")


# (address, words the refusal must contain): first and last address of every range.
BLOCKED = [
    ("0.0.0.0", "0.0.0.0/8"), ("0.255.255.255", "0.0.0.0/8"),
    ("10.0.0.0", "private (10.0.0.0/8)"), ("10.255.255.255", "10.0.0.0/8"),
    ("100.64.0.0", "carrier-grade NAT"), ("100.127.255.255", "100.64.0.0/10"),
    ("127.0.0.1", "loopback (127.0.0.0/8)"), ("127.255.255.254", "127.0.0.0/8"),
    ("169.254.0.1", "link-local"), ("169.254.255.255", "169.254.0.0/16"),
    ("172.16.0.0", "172.16.0.0/12"), ("172.31.255.255", "172.16.0.0/12"),
    ("192.0.0.1", "192.0.0.0/24"), ("192.0.2.1", "192.0.2.0/24"),
    ("192.168.0.1", "192.168.0.0/16"), ("192.168.255.255", "192.168.0.0/16"),
    ("198.18.0.1", "198.18.0.0/15"), ("198.19.255.255", "198.18.0.0/15"),
    ("198.51.100.7", "198.51.100.0/24"), ("203.0.113.9", "203.0.113.0/24"),
    ("224.0.0.1", "multicast"), ("239.255.255.255", "224.0.0.0/4"),
    ("240.0.0.1", "240.0.0.0/4"), ("255.255.255.255", "broadcast"),
    ("::", "unspecified"), ("::1", "loopback (::1/128)"),
    ("fc00::1", "unique-local"), ("fdff:ffff::1", "fc00::/7"),
    ("fe80::1", "link-local (fe80::/10)"), ("febf:ffff::1", "fe80::/10"),
    ("ff02::1", "multicast (ff00::/8)"),
    # IPv6 forms that carry an IPv4 are judged by that IPv4.
    ("::ffff:127.0.0.1", "embeds 127.0.0.1 (IPv4-mapped), which is loopback"),
    ("::ffff:10.1.2.3", "embeds 10.1.2.3 (IPv4-mapped), which is private"),
    ("::ffff:192.168.1.1", "embeds 192.168.1.1"),
    ("64:ff9b::7f00:1", "embeds 127.0.0.1 (NAT64)"),
    ("64:ff9b::a00:1", "embeds 10.0.0.1 (NAT64)"),
    ("2002:7f00:1::", "embeds 127.0.0.1 (6to4)"),
    ("2002:c0a8:101::1", "embeds 192.168.1.1 (6to4)"),
    ("::127.0.0.1", "embeds 127.0.0.1 (IPv4-compatible)"),
    ("2001:0:808:808::80ff:fffe", "embeds 127.0.0.1 (Teredo client)"),
    ("::ffff:0:7f00:1", "embeds 127.0.0.1 (IPv4-translated), which is loopback"),
    ("::ffff:0:a00:1", "embeds 10.0.0.1 (IPv4-translated), which is private"),
    ("2001:4860:1::5efe:7f00:1", "embeds 127.0.0.1 (ISATAP), which is loopback"),
    ("64:ff9b:1::a00:1", "local-use NAT64 (64:ff9b:1::/48)"),
    ("192.88.99.1", "6to4 relay anycast"),
    ("3fff::1", "documentation (3fff::/20)"),
]

# Every cloud endpoint, and the metadata address in every IPv6 form that carries an IPv4.
METADATA = [address for address, _label in CLOUD_ENDPOINTS] + [
    "::ffff:169.254.169.254",  # IPv4-mapped
    "::ffff:0:a9fe:a9fe",  # IPv4-translated (SIIT)
    "::a9fe:a9fe",  # IPv4-compatible
    "64:ff9b::a9fe:a9fe",  # NAT64 well-known prefix
    "64:ff9b:1::a9fe:a9fe",  # local-use NAT64, /96 inside the /48
    "64:ff9b:1:a9fe:a9:fe00::",  # local-use NAT64, RFC 6052 /48 layout
    "2002:a9fe:a9fe::",  # 6to4
    "2001:0:a9fe:a9fe::",  # Teredo server
    "2001:0:808:808::5601:5601",  # Teredo client (obfuscated)
    "2001:4860:1::5efe:a9fe:a9fe",  # ISATAP
    "2001:4860:1::200:5efe:a9fe:a9fe",  # ISATAP, universal bit set
    "::ffff:0:a83f:8110",  # Azure WireServer 168.63.129.16, IPv4-translated
    "64:ff9b::a9fe:aa17",  # EKS Pod Identity 169.254.170.23 through NAT64
]

PUBLIC = ["93.184.216.34", "8.8.8.8", "1.1.1.1", "172.32.0.1", "172.15.255.255",
          "100.128.0.1", "100.63.255.255", "192.169.0.1", "198.20.0.1", "223.255.255.255",
          "2606:4700:4700::1111", "2001:4860:4860::8888", "::ffff:8.8.8.8",
          "64:ff9b::808:808", "2002:808:808::1", "::ffff:0:808:808",
          "2001:4860:1::5efe:808:808", "2001:0:808:808::f7f7:f7f7"]


@pytest.mark.parametrize(("address", "words"), BLOCKED)
def test_every_blocked_range_is_refused_by_name(address: str, words: str) -> None:
    resolver = answers(address)
    with pytest.raises(BlockedURL) as err:
        check_url("https://docs.example/page", resolver=resolver)
    message = str(err.value)
    assert message.startswith("blocked https://docs.example/page: ")
    assert str(ipaddress.ip_address(address)) in message
    assert words in message
    assert err.value.hint == "pass --allow-private-network to reach local sites"
    assert err.value.url == "https://docs.example/page"
    assert resolver.asked == ["docs.example"]


@pytest.mark.parametrize(("address", "words"), BLOCKED)
def test_the_opt_in_lifts_every_private_range(address: str, words: str) -> None:
    assert check_url("http://site.test/", OPEN, resolver=answers(address)) == [
        ipaddress.ip_address(address)]


@pytest.mark.parametrize("address", METADATA)
def test_cloud_metadata_stays_blocked_even_with_the_opt_in(address: str) -> None:
    for policy in (OPEN, NetPolicy()):
        with pytest.raises(BlockedURL, match="cloud metadata endpoint") as err:
            check_url("http://site.test/", policy, resolver=answers(address))
        assert err.value.hint is None
    literal = f"http://[{address}]/" if ":" in address else f"http://{address}/"
    with pytest.raises(BlockedURL, match="cloud metadata endpoint"):
        check_url(literal, OPEN, resolver=no_dns)


def test_the_refusal_names_the_cloud_service() -> None:
    with pytest.raises(BlockedURL) as err:
        check_url("http://168.63.129.16/machine", OPEN, resolver=no_dns)
    assert "Azure WireServer" in str(err.value)
    with pytest.raises(BlockedURL) as err:
        check_url("http://[::ffff:0:a9fe:aa17]/", OPEN, resolver=no_dns)
    assert "embeds 169.254.170.23 (IPv4-translated)" in str(err.value)
    assert "AWS EKS Pod Identity" in str(err.value)


@pytest.mark.parametrize("host", ["metadata.google.internal", "METADATA.google.internal.",
                                  "metadata.goog", "metadata.tencentyun.com"])
def test_metadata_host_names_are_refused_before_any_lookup(host: str) -> None:
    with pytest.raises(BlockedURL, match="cloud metadata endpoint"):
        check_url(f"http://{host}/computeMetadata/v1/", OPEN, resolver=no_dns)


@pytest.mark.parametrize("address", PUBLIC)
def test_public_addresses_pass(address: str) -> None:
    assert blocked_reason(ipaddress.ip_address(address)) is None
    assert check_url("http://docs.example/", resolver=answers(address)) == [
        ipaddress.ip_address(address)]


def test_one_blocked_answer_among_many_refuses_the_url() -> None:
    with pytest.raises(BlockedURL, match=r"10\.0\.0\.5 is private"):
        check_url("http://docs.example/", resolver=answers("93.184.216.34", "10.0.0.5"))


@pytest.mark.parametrize(("url", "address"), [
    ("http://2130706433/", "127.0.0.1"),
    ("http://0x7f.1/", "127.0.0.1"),
    ("http://0x7F000001/", "127.0.0.1"),
    ("http://0177.0.0.1/", "127.0.0.1"),
    ("http://0177.1/", "127.0.0.1"),
    ("http://127.1/", "127.0.0.1"),
    ("http://127.0.0.1:8080/x", "127.0.0.1"),
    ("http://0/", "0.0.0.0"),
    ("http://10.1/", "10.0.0.1"),
    ("http://3232235777/", "192.168.1.1"),
    ("http://0xa9.0xfe.0xa9.0xfe/", "169.254.169.254"),
    ("http://127。0。0。1/", "127.0.0.1"),  # ideographic full stops map to dots
    ("http://[::1]/", "::1"),
    ("http://[::ffff:7f00:1]/", "::ffff:7f00:1"),
    ("http://[0:0:0:0:0:ffff:127.0.0.1]/", "::ffff:7f00:1"),
])
def test_numeric_hosts_are_read_like_the_os_reads_them(url: str, address: str) -> None:
    with pytest.raises(BlockedURL) as err:
        check_url(url, resolver=no_dns)
    assert f": {address} " in str(err.value)


def test_message_names_the_url_as_written_the_address_and_the_rule() -> None:
    with pytest.raises(BlockedURL) as err:
        check_url("http://0x7f.1/")
    assert str(err.value) == "blocked http://0x7f.1/: 127.0.0.1 is loopback (127.0.0.0/8)"
    assert err.value.hint == "pass --allow-private-network to reach local sites"  # once


def test_localhost_through_the_system_resolver_is_refused() -> None:
    with pytest.raises(BlockedURL, match="is loopback"):
        check_url("http://localhost:8000/")
    assert ipaddress.ip_address("127.0.0.1") in check_url("http://localhost/", OPEN)


@pytest.mark.parametrize("url", [
    "ftp://docs.example/", "file:///etc/passwd", "gopher://docs.example/",
    "javascript:alert(1)", "data:text/html,hi", "//docs.example/", "docs.example/page",
])
def test_only_http_and_https(url: str) -> None:
    with pytest.raises(BlockedURL, match="is not http or https"):
        check_url(url, OPEN, resolver=answers("93.184.216.34"))


@pytest.mark.parametrize("url", [
    "http://a@docs.example/", "https://user:pw@docs.example/", "http://@docs.example/",
    "http://docs.example\\@127.0.0.1/", "http://93.184.216.34@127.0.0.1/",
])
def test_userinfo_is_refused(url: str) -> None:
    with pytest.raises(BlockedURL, match="user info"):
        check_url(url, OPEN, resolver=answers("93.184.216.34"))


@pytest.mark.parametrize("url", [
    "http:///path", "http://docs.example:99999/", "http://docs.example:0/",
    "http://%31%32%37.0.0.1/", "http://[not-v6]/", "http://docs.exa mple/",
])
def test_malformed_hosts_and_ports_are_refused(url: str) -> None:
    with pytest.raises(BlockedURL):
        check_url(url, OPEN, resolver=answers("93.184.216.34"))


def test_names_are_resolved_in_their_ascii_form() -> None:
    resolver = answers("93.184.216.34")
    check_url("https://Bücher.Example/", resolver=resolver)
    assert resolver.asked == ["xn--bcher-kva.example"]


def test_unresolvable_host_is_a_fetch_error_not_a_block() -> None:
    def fail(host: str) -> list[str]:
        raise OSError("Name or service not known")

    with pytest.raises(FetchError, match="cannot resolve nowhere.invalid") as err:
        check_url("http://nowhere.invalid/", resolver=fail)
    assert not isinstance(err.value, BlockedURL)
    with pytest.raises(FetchError, match="no addresses"):
        check_url("http://docs.example/", resolver=answers())
