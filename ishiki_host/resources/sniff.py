"""Media types and text-versus-binary detection for resource content.

Types come from a file name (a private ``mimetypes`` table, so the answer does not depend on the machine's
``/etc/mime.types``) or from the first bytes. Content is text when it decodes as UTF-8 (a BOM is honoured,
UTF-16 with a BOM too) and holds no NUL; anything else is binary and is described, never shown.
"""

from __future__ import annotations

import codecs
import functools
import mimetypes

__all__ = ["decode_text", "extension_for", "guess_media_type", "is_text_media_type"]

_EXTRA_TYPES = (
    ("text/markdown", ".md"),
    ("application/jsonl", ".jsonl"),
    ("application/yaml", ".yaml"),
    ("application/yaml", ".yml"),
    ("application/toml", ".toml"),
    ("image/webp", ".webp"),
    ("audio/ogg", ".oga"),
    ("audio/ogg", ".ogg"),
    ("video/webm", ".webm"),
    ("application/x-tgsticker", ".tgs"),
    ("text/plain", ".log"),
)

_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
    (b"%PDF-", "application/pdf"),
    (b"OggS", "audio/ogg"),
    (b"PK\x03\x04", "application/zip"),
    (b"\x1f\x8b", "application/gzip"),
    (b"\x1aE\xdf\xa3", "video/webm"),
)
_PREFERRED_EXTENSIONS = {
    "text/plain": ".txt",
    "image/jpeg": ".jpg",
    "application/json": ".json",
    "text/markdown": ".md",
    "audio/ogg": ".ogg",
    "application/yaml": ".yaml",
}
_TEXT_APPLICATION_TYPES = frozenset(
    ["application/json", "application/jsonl", "application/yaml", "application/toml", "application/xml"]
)


@functools.cache
def _types() -> mimetypes.MimeTypes:
    # A private table built from Python's own defaults, so answers do not vary with /etc/mime.types.
    table = mimetypes.MimeTypes()
    for media_type, ext in _EXTRA_TYPES:
        table.add_type(media_type, ext)
    return table


def _sniff(data: bytes) -> str | None:
    for magic, media_type in _MAGIC:
        if data.startswith(magic):
            return media_type
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    if data[4:8] == b"ftyp":
        return "video/mp4"
    return None


def guess_media_type(name: str | None = None, data: bytes | None = None) -> str:
    """The media type by file name, else by magic bytes, else ``text/plain`` for text, else octet-stream."""
    if name:
        guessed, _ = _types().guess_type(name, strict=False)
        if guessed:
            return guessed
    if data is not None:
        sniffed = _sniff(data[:64])
        if sniffed:
            return sniffed
        if decode_text(data[:4096], partial=True) is not None:
            return "text/plain"
    return "application/octet-stream"


def extension_for(media_type: str, name: str | None = None) -> str:
    """A file extension (with its dot) for a media type, preferring the one ``name`` already has."""
    if name and "." in name.rsplit("/", 1)[-1]:
        ext = "." + name.rsplit(".", 1)[-1].lower()
        if ext.isascii() and ext[1:].isalnum() and len(ext) <= 8:
            return ext
    return _PREFERRED_EXTENSIONS.get(media_type) or _types().guess_extension(media_type, strict=False) or ".bin"


def is_text_media_type(media_type: str) -> bool:
    """Whether a media type names text (``text/*``, JSON, YAML, XML, ``+json``/``+xml`` suffixes)."""
    base = media_type.split(";", 1)[0].strip().lower()
    return base.startswith("text/") or base in _TEXT_APPLICATION_TYPES or base.endswith(("+json", "+xml"))


def decode_text(data: bytes, *, partial: bool = False) -> str | None:
    """The text of ``data``, or ``None`` when it is binary.

    ``partial`` allows a multi-byte character cut at the end (for sniffing a prefix of a longer file).
    """
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        codec = "utf-16"
    elif b"\x00" in data:
        return None
    else:
        codec = "utf-8-sig"
    decoder = codecs.getincrementaldecoder(codec)()
    try:
        return decoder.decode(data, final=not partial)
    except UnicodeDecodeError:
        return None
