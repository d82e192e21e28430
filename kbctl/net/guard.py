"""The SSRF guard: which URLs may be fetched, and at which address.

A URL passes when its scheme is http(s), it carries no userinfo, and EVERY address its host
resolves to is outside the blocked ranges. The caller then connects to one of those vetted
addresses itself, so a second DNS answer (rebinding) can never change where we connect.
Numeric hosts are parsed with the OS's own rules (``inet_aton``: ``2130706433``, ``0x7f.1``,
``0177.0.0.1``, ``127.1``) so we judge exactly what a socket would reach.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

import idna

from kbctl.errors import BlockedURL, FetchError, Unreachable
from kbctl.net.policy import NetPolicy, Resolver

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

PRIVATE_HINT = "pass --allow-private-network to reach local sites"

_V4 = ipaddress.IPv4Network
_V6 = ipaddress.IPv6Network

#: Blocked IPv4 ranges, first match names the rule. Source: the IANA IPv4 Special-Purpose
#: Address Registry (RFC 6890 and updates),
#: https://www.iana.org/assignments/iana-ipv4-special-registry/
BLOCKED_V4: tuple[tuple[ipaddress.IPv4Network, str], ...] = (
    (_V4("0.0.0.0/8"), "'this network'"),
    (_V4("10.0.0.0/8"), "private"),
    (_V4("100.64.0.0/10"), "carrier-grade NAT"),
    (_V4("127.0.0.0/8"), "loopback"),
    (_V4("169.254.0.0/16"), "link-local (cloud metadata)"),
    (_V4("172.16.0.0/12"), "private"),
    (_V4("192.0.0.0/24"), "IETF protocol assignments"),
    (_V4("192.0.2.0/24"), "documentation"),
    (_V4("192.88.99.0/24"), "6to4 relay anycast"),
    (_V4("192.168.0.0/16"), "private"),
    (_V4("198.18.0.0/15"), "benchmarking"),
    (_V4("198.51.100.0/24"), "documentation"),
    (_V4("203.0.113.0/24"), "documentation"),
    (_V4("224.0.0.0/4"), "multicast"),
    (_V4("255.255.255.255/32"), "broadcast"),
    (_V4("240.0.0.0/4"), "reserved"),
)

#: Blocked IPv6 ranges (those that embed an IPv4 are judged by it, see ``_embedded_v4``).
#: Source: the IANA IPv6 Special-Purpose Address Registry,
#: https://www.iana.org/assignments/iana-ipv6-special-registry/
BLOCKED_V6: tuple[tuple[ipaddress.IPv6Network, str], ...] = (
    (_V6("::/128"), "unspecified"),
    (_V6("::1/128"), "loopback"),
    (_V6("100::/64"), "discard-only"),
    (_V6("64:ff9b:1::/48"), "local-use NAT64"),
    (_V6("2001:db8::/32"), "documentation"),
    (_V6("3fff::/20"), "documentation"),
    (_V6("fc00::/7"), "unique-local"),
    (_V6("fe80::/10"), "link-local"),
    (_V6("fec0::/10"), "site-local"),
    (_V6("ff00::/8"), "multicast"),
)

#: Cloud metadata and credential endpoints. They stay blocked even with
#: ``allow_private_network`` (no local test site lives there, and they hand out
#: credentials), and an IPv6 form that embeds one of them is blocked too.
CLOUD_ENDPOINTS: tuple[tuple[str, str], ...] = (
    # AWS EC2 instance metadata (IMDS), IPv4 and IPv6:
    # https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/instancedata-data-retrieval.html
    # GCP: https://cloud.google.com/compute/docs/metadata/querying-metadata
    # Azure IMDS: https://learn.microsoft.com/azure/virtual-machines/instance-metadata-service
    # Oracle OCI: https://docs.oracle.com/iaas/Content/Compute/Tasks/gettingmetadata.htm
    # DigitalOcean: https://docs.digitalocean.com/reference/api/metadata/
    # OpenStack, Hetzner, IBM and most others follow the same EC2-style address.
    ("169.254.169.254", "AWS, GCP, Azure, Oracle, DigitalOcean, OpenStack instance metadata"),
    ("fd00:ec2::254", "AWS instance metadata over IPv6"),
    # AWS ECS task metadata and task role credentials:
    # https://docs.aws.amazon.com/AmazonECS/latest/developerguide/task-iam-roles.html
    ("169.254.170.2", "AWS ECS task credentials"),
    # AWS EKS Pod Identity agent, IPv4 and IPv6:
    # https://docs.aws.amazon.com/eks/latest/userguide/pod-id-agent-setup.html
    ("169.254.170.23", "AWS EKS Pod Identity credentials"),
    ("fd00:ec2::23", "AWS EKS Pod Identity credentials over IPv6"),
    # GCP metadata server over IPv6 (IPv6-only and dual-stack VMs):
    # https://cloud.google.com/compute/docs/metadata/querying-metadata
    ("fd20:ce::254", "GCP instance metadata over IPv6"),
    # Azure WireServer, a PUBLIC address answering inside every Azure VM:
    # https://learn.microsoft.com/azure/virtual-network/what-is-ip-address-168-63-129-16
    ("168.63.129.16", "Azure WireServer"),
    # Alibaba Cloud ECS instance metadata:
    # https://www.alibabacloud.com/help/en/ecs/user-guide/view-instance-metadata
    ("100.100.100.200", "Alibaba Cloud instance metadata"),
    # Oracle Cloud (Classic) instance metadata:
    # https://docs.oracle.com/en/cloud/iaas-classic/compute-iaas-cloud/stcsg/retrieving-instance-metadata.html
    ("192.0.0.192", "Oracle Cloud instance metadata"),
    # Tencent Cloud CVM instance metadata (metadata.tencentyun.com):
    # https://www.tencentcloud.com/document/product/213/4934
    ("169.254.0.23", "Tencent Cloud instance metadata"),
    # OpenStack metadata over IPv6:
    # https://specs.openstack.org/openstack/neutron-specs/specs/ussuri/metadata-add-ipv6-support.html
    ("fe80::a9fe:a9fe", "OpenStack instance metadata over IPv6"),
)

#: Host names of metadata services, refused before any lookup (same sources as above).
CLOUD_METADATA_HOSTS: frozenset[str] = frozenset({
    "metadata.google.internal", "metadata.goog", "metadata.tencentyun.com",
    "instance-data", "instance-data.ec2.internal",
})

METADATA_ADDRESSES: dict[IPAddress, str] = {
    ipaddress.ip_address(address): label for address, label in CLOUD_ENDPOINTS}

# IPv6 forms that carry an IPv4 address. Sources: RFC 4291 §2.5.5 (IPv4-compatible and
# IPv4-mapped), RFC 2765 §2.1 (SIIT IPv4-translated ::ffff:0:a.b.c.d), RFC 6052 §2.2
# (NAT64 64:ff9b::/96) and RFC 8215 (local-use 64:ff9b:1::/48), RFC 3056 (6to4),
# RFC 4380 §4 (Teredo), RFC 5214 §6.1 (ISATAP interface identifiers).
_MAPPED = _V6("::ffff:0:0/96")
_TRANSLATED = _V6("::ffff:0:0:0/96")
_NAT64 = _V6("64:ff9b::/96")
_NAT64_LOCAL = _V6("64:ff9b:1::/48")
_SIXTOFOUR = _V6("2002::/16")
_TEREDO = _V6("2001::/32")
_COMPAT = _V6("::/96")

_NAME = re.compile(r"[a-z0-9_.-]+")
_NUMERIC_V4 = re.compile(r"[0-9a-fx.]+")
_DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True)
class Target:
    """A parsed, syntactically safe URL; ``literal`` is set when the host is an address."""

    url: str
    scheme: str
    host: str
    port: int
    explicit_port: bool
    path_query: str
    literal: IPAddress | None

    @property
    def host_header(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}" if self.explicit_port else host

    def request_url(self, address: IPAddress) -> str:
        """The URL to send on the wire: the vetted address in place of the name."""
        host = f"[{address.compressed}]" if address.version == 6 else str(address)
        port = f":{self.port}" if self.explicit_port else ""
        return f"{self.scheme}://{host}{port}{self.path_query}"


def parse_url(url: str) -> Target:
    """Check scheme, userinfo, host and port; no I/O. Raises ``BlockedURL``."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise BlockedURL(f"blocked {url}: not a valid URL ({exc})", url=url) from exc
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS:
        raise BlockedURL(f"blocked {url}: scheme {scheme or '(none)'!r} is not http or https",
                         url=url)
    if "@" in parts.netloc:
        raise BlockedURL(f"blocked {url}: URLs with user info (user@host) are refused", url=url)
    host = parts.hostname or ""
    if not host:
        raise BlockedURL(f"blocked {url}: no host", url=url)
    if port == 0:
        raise BlockedURL(f"blocked {url}: port 0", url=url)
    literal: IPAddress | None
    if parts.netloc.startswith("["):
        try:
            literal = ipaddress.IPv6Address(host)
        except ValueError as exc:
            raise BlockedURL(f"blocked {url}: invalid IPv6 literal {host!r}", url=url) from exc
    else:
        host = _normalise_name(host, url)
        literal = _numeric_v4(host)
        if host.rstrip(".") in CLOUD_METADATA_HOSTS:
            raise BlockedURL(f"blocked {url}: {host} is a cloud metadata endpoint", url=url)
    path = parts.path or "/"
    path_query = f"{path}?{parts.query}" if parts.query else path
    clean = urlunsplit((scheme, parts.netloc, parts.path or "/", parts.query, ""))
    return Target(url=clean, scheme=scheme, host=host,
                  port=port or _DEFAULT_PORTS[scheme], explicit_port=port is not None,
                  path_query=path_query, literal=literal)


def _normalise_name(host: str, url: str) -> str:
    if not host.isascii():
        try:
            host = idna.encode(host, uts46=True).decode("ascii")
        except idna.IDNAError as exc:
            raise BlockedURL(f"blocked {url}: invalid host name ({exc})", url=url) from exc
    host = host.lower()
    if len(host) > 253 or not _NAME.fullmatch(host):
        raise BlockedURL(f"blocked {url}: invalid host name {host!r}", url=url)
    return host


def _numeric_v4(host: str) -> ipaddress.IPv4Address | None:
    """The address the OS reads from a numeric host (any ``inet_aton`` form), else None."""
    if not _NUMERIC_V4.fullmatch(host):
        return None
    try:
        return ipaddress.IPv4Address(socket.inet_aton(host))
    except OSError:
        return None


def _embedded_v4(ip: ipaddress.IPv6Address) -> list[tuple[ipaddress.IPv4Address, str]]:
    """IPv4 addresses an IPv6 address carries, each named by the embedding that carries it.

    A form whose layout is ambiguous yields every reading, so the guard refuses the address
    when ANY reading is refused.
    """
    value = int(ip)
    low32 = ipaddress.IPv4Address(value & 0xFFFFFFFF)
    if ip in _MAPPED:
        return [(low32, "IPv4-mapped")]
    if ip in _TRANSLATED:
        return [(low32, "IPv4-translated")]
    if ip in _NAT64:
        return [(low32, "NAT64")]
    if ip in _NAT64_LOCAL:
        # RFC 6052 §2.2 /48 layout: 16 bits, the reserved "u" octet, then 16 bits; many
        # deployments use a /96 inside the /48 instead, so read both.
        split = ((value >> 64) & 0xFFFF) << 16 | (value >> 40) & 0xFFFF
        return [(ipaddress.IPv4Address(split), "local-use NAT64"),
                (low32, "local-use NAT64")]
    if ip in _SIXTOFOUR:
        return [(ipaddress.IPv4Address((value >> 80) & 0xFFFFFFFF), "6to4")]
    if ip in _TEREDO:
        server = ipaddress.IPv4Address((value >> 64) & 0xFFFFFFFF)
        client = ipaddress.IPv4Address(~value & 0xFFFFFFFF)
        return [(server, "Teredo server"), (client, "Teredo client")]
    if ip in _COMPAT and value > 1:
        return [(low32, "IPv4-compatible")]
    if (value >> 32) & 0xFDFFFFFF == 0x00005EFE:  # ::0:5efe:a.b.c.d or ::200:5efe:a.b.c.d
        return [(low32, "ISATAP")]
    return []


def _rule(ip: IPAddress) -> str | None:
    rules = BLOCKED_V4 if ip.version == 4 else BLOCKED_V6
    for network, label in rules:
        if ip in network:
            return f"{label} ({network})"
    return None


def opt_in_verdict(ip: IPAddress, allow_private_network: bool) -> tuple[str, bool] | None:
    """(why ``ip`` is refused, whether the opt-in could lift it), or None when it passes."""
    if isinstance(ip, ipaddress.IPv6Address) and ip.scope_id:
        ip = ipaddress.IPv6Address(str(ip).split("%")[0])
    candidates: list[tuple[IPAddress, str]] = [(ip, "")]
    if isinstance(ip, ipaddress.IPv6Address):
        candidates += _embedded_v4(ip)

    def prefix(candidate: IPAddress, how: str) -> str:
        return f"{ip} embeds {candidate} ({how}), which" if how else f"{ip}"

    # Metadata first, over every reading: the opt-in must never lift them.
    for candidate, how in candidates:
        if candidate in METADATA_ADDRESSES:
            label = METADATA_ADDRESSES[candidate]
            return f"{prefix(candidate, how)} is a cloud metadata endpoint ({label})", False
    if allow_private_network:
        return None
    for candidate, how in candidates:
        rule = _rule(candidate)
        if rule:
            return f"{prefix(candidate, how)} is {rule}", True
    return None


def blocked_reason(ip: IPAddress, *, allow_private_network: bool = False) -> str | None:
    """Why ``ip`` may not be fetched (e.g. "127.0.0.1 is loopback (127.0.0.0/8)"), or None."""
    verdict = opt_in_verdict(ip, allow_private_network)
    return verdict[0] if verdict else None


def system_resolver(host: str) -> list[str]:
    """All addresses the OS resolver gives for ``host``, in its order, without repeats."""
    infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def resolve(target: Target, resolver: Resolver | None = None) -> list[IPAddress]:
    """The host's addresses: a numeric host is itself; a name is resolved exactly once."""
    if target.literal is not None:
        return [target.literal]
    lookup = resolver or system_resolver
    try:
        answers = list(lookup(target.host))
    except OSError as exc:
        raise Unreachable(f"cannot resolve {target.host}: {exc}", url=target.url) from exc
    try:
        addresses = [ipaddress.ip_address(a) for a in answers]
    except ValueError as exc:
        raise FetchError(f"resolver gave a bad address for {target.host}: {exc}",
                         url=target.url) from exc
    if not addresses:
        raise Unreachable(f"cannot resolve {target.host}: no addresses", url=target.url)
    return addresses


def vet(url: str, addresses: Iterable[IPAddress], policy: NetPolicy) -> list[IPAddress]:
    """Refuse the URL if ANY address is blocked; otherwise return them all, in order."""
    vetted = list(addresses)
    for ip in vetted:
        verdict = opt_in_verdict(ip, policy.allow_private_network)
        if verdict:
            reason, liftable = verdict
            if liftable:
                raise BlockedURL(f"blocked {url}: {reason}", url=url, hint=PRIVATE_HINT)
            raise BlockedURL(f"blocked {url}: {reason}", url=url)
    return vetted


def check_url(url: str, policy: NetPolicy | None = None,
              resolver: Resolver | None = None) -> list[IPAddress]:
    """Parse, resolve once and vet ``url``: the addresses it is safe to connect to.

    Raises ``BlockedURL`` for a refused URL and ``FetchError`` when the host cannot be
    resolved.
    """
    policy = policy or NetPolicy()
    target = parse_url(url)
    return vet(url, resolve(target, resolver), policy)
