"""Provider endpoints: an embedder's or a reranker's base URL pointed where its API key
must never go (cloud metadata, loopback without the opt-in), malformed, or answering
with a redirect to another host."""

from __future__ import annotations

from pathlib import Path

from redteam._kit import Hit, kbctl, refused, serving

CLASS = "provider endpoints"
KEY = {"OPENAI_API_KEY": "sk-redteam-secret"}


def _embedder_url(url: str, needle: str, *extra: str) -> tuple[str, str, object]:
    def run(workdir: Path) -> tuple[bool, str]:
        ran = kbctl(workdir, "ingest", "text", "widgets", "--ref", "a", "--embedder",
                    "openai:m", "--embedder-base-url", url, *extra, env=KEY)
        return refused(ran, needle)
    return CLASS, f"embedder at {url}{' ' + ' '.join(extra) if extra else ''}", run


def env_metadata(workdir: Path) -> tuple[bool, str]:
    ran = kbctl(workdir, "ingest", "text", "widgets", "--ref", "a", "--embedder", "openai:m",
                env=KEY | {"KBCTL_EMBEDDER_BASE_URL": "http://[fd00:ec2::254]/v1"})
    return refused(ran, "KBCTL_EMBEDDER_BASE_URL")


def yaml_rerank_metadata(workdir: Path) -> tuple[bool, str]:
    (workdir / "kbctl.yaml").write_text("namespace: n\nrerank: tei:m\n"
                                        "rerank_base_url: http://169.254.170.2/v2\n")
    return refused(kbctl(workdir, "query", "widgets"), "kbctl.yaml:3")


def rerank_flag_mapped(workdir: Path) -> tuple[bool, str]:
    ran = kbctl(workdir, "query", "widgets", "--rerank", "cohere:m", "--rerank-base-url",
                "http://[::ffff:169.254.169.254]/v2", "--allow-private-network")
    return refused(ran, "cloud metadata endpoint")


def loopback_without_opt_in(workdir: Path) -> tuple[bool, str]:
    with serving(18300) as site:
        ran = kbctl(workdir, "ingest", "text", "widgets", "--ref", "a", "--embedder",
                    "openai:m", "--embedder-base-url", site.url("/v1"), env=KEY)
    held, detail = refused(ran, "loopback")
    return held and not site.hits, f"{detail}; requests reaching it: {len(site.hits)}"


def key_across_redirect(workdir: Path) -> tuple[bool, str]:
    with serving(18302) as other, serving(18301) as first:
        first.routes["/v1/embeddings"] = lambda _hit: (
            307, {"Location": other.url("/v1/embeddings")}, b"")
        ran = kbctl(workdir, "ingest", "text", "widgets", "--ref", "a", "--embedder",
                    "openai:m@3", "--embedder-base-url", first.url("/v1"),
                    "--allow-private-network", env=KEY)
    keys = [h for h in other.hits if "sk-redteam" in h.headers.get("authorization", "")]
    held = ran.code == 3 and not other.hits and "redirects to" in ran.output \
        and "Traceback" not in ran.output
    return held, (f"exit {ran.code}; requests at the redirect's target: {len(other.hits)}, "
                  f"with the key: {len(keys)}")


def resolved_name_is_vetted(workdir: Path) -> tuple[bool, str]:
    # localhost is a name: resolved once, its loopback address refused without the opt-in
    with serving(18303) as site:
        ran = kbctl(workdir, "ingest", "text", "widgets", "--ref", "a", "--embedder",
                    "openai:m", "--embedder-base-url", f"http://localhost:{site.port}/v1",
                    env=KEY)
    held, detail = refused(ran, "loopback")
    return held and not site.hits, f"{detail}; requests reaching it: {len(site.hits)}"


def opt_in_reaches_loopback(workdir: Path) -> tuple[bool, str]:
    """The control: with the opt-in a local embedder works, so the refusals above are the
    guard's and not a broken client."""
    import json

    def embeddings(hit: Hit) -> tuple[int, dict[str, str], bytes]:
        body = {"data": [{"index": 0, "embedding": [1.0, 0.5, 0.25]}]}
        return 200, {"Content-Type": "application/json"}, json.dumps(body).encode()

    with serving(18304, {"/v1/embeddings": embeddings}) as site:
        ran = kbctl(workdir, "ingest", "text", "widgets", "--ref", "a", "--embedder",
                    "openai:m@3", "--embedder-base-url", site.url("/v1"),
                    "--allow-private-network", env=KEY)
    return ran.code == 0 and len(site.hits) == 1, f"exit {ran.code}, {len(site.hits)} request"


ATTACKS = [
    _embedder_url("http://169.254.169.254/latest/v1", "cloud metadata endpoint"),
    _embedder_url("http://[fd00:ec2::23]/v1", "cloud metadata endpoint",
                  "--allow-private-network"),
    _embedder_url("http://[::ffff:a9fe:a9fe]/v1", "embeds 169.254.169.254"),
    _embedder_url("http://2852039166/v1", "cloud metadata endpoint"),
    _embedder_url("http://metadata.google.internal/v1", "cloud metadata endpoint",
                  "--allow-private-network"),
    _embedder_url("http://[::1/v1", "not a valid URL"),
    _embedder_url("http://10.0.0.7:11434/v1", "private"),
    (CLASS, "KBCTL_EMBEDDER_BASE_URL at IPv6 metadata", env_metadata),
    (CLASS, "kbctl.yaml rerank_base_url at ECS credentials", yaml_rerank_metadata),
    (CLASS, "--rerank-base-url IPv4-mapped metadata with the opt-in", rerank_flag_mapped),
    (CLASS, "loopback embedder without the opt-in", loopback_without_opt_in),
    (CLASS, "localhost embedder without the opt-in", resolved_name_is_vetted),
    (CLASS, "key across a 307 to another host", key_across_redirect),
    (CLASS, "control: loopback embedder with the opt-in", opt_in_reaches_loopback),
]
