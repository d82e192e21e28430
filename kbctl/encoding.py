"""The one path from bytes to text: byte-order marks, declared charsets, binary refusal.

It sits below ``net/`` and ``extract/``, which both read bodies through it.
``decode_text`` is the strict path for text bodies and files (a BOM wins, then the charset
the server or caller declares, else UTF-8; anything that does not decode is an error
naming its source). ``to_utf8`` is the HTML path: bytes or text in, UTF-8 bytes out, the one
form the HTML parser is fed. The parser is always told "utf-8" explicitly, so a page's own
``<meta charset>`` is honoured here, once, and a wrong or missing declaration cannot make
libxml2 guess latin-1 for a UTF-8 page. Binary payloads (images, archives, PDFs served as
text/html) are refused early with a message that says what they look like.
"""

from __future__ import annotations

import codecs
import re

from kbctl.errors import ExtractError

_SNIFF = 4096

_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "a PNG image"),
    (b"GIF87a", "a GIF image"),
    (b"GIF89a", "a GIF image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"%PDF-", "a PDF document"),
    (b"PK\x03\x04", "a ZIP archive"),
    (b"\x1f\x8b", "gzip-compressed data"),
    (b"\x7fELF", "an ELF executable"),
    (b"RIFF", "a RIFF (WebP/WAV/AVI) file"),
    (b"\x00\x00\x01\x00", "an icon file"),
    (b"wOFF", "a web font"),
    (b"wOF2", "a web font"),
)

_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)

# <meta charset="x">, <meta http-equiv=... content="text/html; charset=x">, <?xml encoding="x"?>
_CHARSET = re.compile(
    rb"""<meta[^>]*?charset\s*=\s*["']?\s*([A-Za-z0-9_:.+-]+)"""
    rb"""|<\?xml[^>]*?encoding\s*=\s*["']([A-Za-z0-9_:.+-]+)""",
    re.IGNORECASE,
)

#: NUL bytes tolerated at the start of a text body: a generator that printed a ``'\0'``
#: constant (Javadoc's ``CharUtils.NUL``) leaves one or two in a long page, a binary file
#: many more, or a dense few in a short one. The stray ones are dropped (ingest notes it).
MAX_STRAY_NULS = 8


def _binary_nuls(head: bytes) -> bool:
    nuls = head.count(b"\x00")
    return nuls > MAX_STRAY_NULS or nuls * 100 > len(head)


# C0 controls other than tab, LF, FF, CR: a few are tolerable noise, many mean binary.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f]")


def strip_bom(data: bytes) -> tuple[str | None, bytes]:
    """The encoding a byte-order mark announces (None without one) and the data after it."""
    for bom, name in _BOMS:
        if data.startswith(bom):
            return name, data[len(bom):]
    return None, data


def decode_text(data: bytes, charset: str | None = None, *, source: str) -> str:
    """Decode strictly: a BOM wins, then ``charset``, else UTF-8.

    Binary data (NUL bytes beyond a few stray ones in the first 8 KB of a body that is not
    UTF-16/32, see ``MAX_STRAY_NULS``) is refused even when it happens to decode. Raises
    ``ExtractError`` naming ``source``.
    """
    encoding, body = strip_bom(data)
    encoding = encoding or charset or "utf-8"
    if _binary_nuls(body[:8192]) and not encoding.lower().startswith(("utf-16", "utf-32")):
        raise ExtractError(f"{source}: the body is binary (NUL bytes), not text",
                           hint="the source is a binary file; exclude it")
    try:
        return body.decode(encoding)
    except LookupError as exc:
        raise ExtractError(f"{source}: unknown charset {encoding!r}") from exc
    except UnicodeDecodeError as exc:
        raise ExtractError(
            f"{source}: body is not valid {encoding} (byte {exc.start})") from exc


def lenient_text(data: bytes, charset: str | None = None) -> str:
    """The text of a body that must be read whatever it holds (robots rules, a page handed
    to the generic extractor): ``charset`` or UTF-8, undecodable bytes replaced."""
    return data.decode(charset or "utf-8", "replace")


def header_text(data: bytes, charset: str) -> str | None:
    """The body in the charset its response header declares (which wins over the page's
    own ``<meta>``, as in browsers); None when that charset is unknown or wrong, so the
    page's own declaration is sniffed instead."""
    try:
        return data.decode(charset)
    except (LookupError, UnicodeDecodeError):
        return None


def _declared_encoding(head: bytes) -> str | None:
    match = _CHARSET.search(head)
    if not match:
        return None
    name = (match.group(1) or match.group(2)).decode("ascii", "replace")
    try:
        return codecs.lookup(name).name
    except LookupError:
        return None


def _looks_utf16(head: bytes) -> str | None:
    """UTF-16 without a BOM: every other byte of ASCII-heavy markup is NUL."""
    sample = head[:512]
    if len(sample) < 16:
        return None
    even, odd = sample[0::2], sample[1::2]
    if odd.count(0) > 0.8 * len(odd) and even.count(0) < 0.1 * len(even):
        return "utf-16-le"
    if even.count(0) > 0.8 * len(even) and odd.count(0) < 0.1 * len(odd):
        return "utf-16-be"
    return None


def _check_text(text: str) -> None:
    sample = text[:_SNIFF]
    if not sample:
        return
    controls = len(_CONTROL.findall(sample))
    replaced = sample.count("\ufffd")
    if controls > max(8, len(sample) // 100) or replaced > max(16, len(sample) // 10):
        raise ExtractError(
            "input is not text: it is full of control bytes or undecodable sequences",
            hint="the URL probably serves a binary file; exclude it from the source",
        )


def to_utf8(data: str | bytes) -> bytes:
    """Return the document as UTF-8 bytes, or raise ExtractError when it is not text."""
    if isinstance(data, str):
        _check_text(data)
        return data.replace("\x00", "").encode("utf-8", "replace")
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise ExtractError(f"expected str or bytes, got {type(data).__name__}")
    raw = bytes(data)
    if not raw.strip():
        raise ExtractError("the document is empty")
    encoding, raw = strip_bom(raw)
    head = raw[:_SNIFF]
    if encoding is None:
        for magic, what in _MAGIC:
            if head.startswith(magic):
                raise ExtractError(
                    f"input is not HTML text: it looks like {what}",
                    hint="the URL serves a binary file; exclude it from the source",
                )
        encoding = _looks_utf16(head)
    if encoding is None:
        if _binary_nuls(head):
            raise ExtractError(
                "input is not text: it contains NUL bytes",
                hint="the URL probably serves a binary file; exclude it from the source",
            )
        encoding = _declared_encoding(head)
        if encoding and encoding.startswith(("utf-16", "utf-32")):
            # An ASCII-readable declaration cannot be UTF-16/32 (browsers read it as UTF-8).
            encoding = "utf-8"
    if encoding in (None, "utf-8"):
        if b"\x00" in raw:
            raw = raw.replace(b"\x00", b"")  # stray ones only: many were refused above
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            # A declared or assumed UTF-8 that is not: the web's usual culprit is cp1252.
            text = raw.decode("utf-8" if encoding else "cp1252", "replace")
            _check_text(text)
            return text.encode("utf-8")
        _check_text(text)
        return raw
    text = raw.decode(encoding, "replace")
    _check_text(text)
    return text.replace("\x00", "").encode("utf-8", "replace")
