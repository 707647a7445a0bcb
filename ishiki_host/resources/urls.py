"""Resource URLs: one strict parser shared by every scheme (built-in or registered by an extension).

A resource URL is ``scheme://segment/segment...?key=value&...#fragment``. The first segment is the
*authority* (an asset id, an artifact's tool, a workspace mount); the rest is the *path*. Segments are
percent-decoded one by one, so ``%2F`` never becomes a separator and ``%2e%2e`` is the same ``..`` as a
literal one. Anything that could steer a handler outside its space is refused here, once, for every scheme:
empty, ``.`` and ``..`` segments (``local:///etc/passwd`` has an empty first segment), ``/``, ``\\``, NUL or
control characters inside a segment, malformed escapes, invalid UTF-8 and repeated query keys. Handlers still
confine what they resolve (a symlink is not visible in a URL).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ishiki_host.errors import ResourceError

__all__ = [
    "MAX_URL_LENGTH",
    "ResourceURL",
    "format_resource_url",
    "is_valid_scheme",
    "parse_resource_url",
]

MAX_URL_LENGTH = 8192

_SCHEME = re.compile(r"[a-z][a-z0-9+.-]*")
_URL = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://([^?#]*)(?:\?([^#]*))?(?:#(.*))?", re.DOTALL)
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")
# Characters written as-is in a formatted segment or query value; everything else ASCII is escaped.
# Non-ASCII text stays readable (an IRI): models and people copy these URLs.
_KEEP = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~!$'()*+,;:@")


def is_valid_scheme(scheme: str) -> bool:
    """Whether ``scheme`` is a lowercase URL scheme (``[a-z][a-z0-9+.-]*``)."""
    return _SCHEME.fullmatch(scheme) is not None


def _invalid(raw: str, why: str) -> ResourceError:
    shown = raw if len(raw) <= 200 else raw[:200] + "…"
    return ResourceError("invalid_resource_uri", f"{shown!r}: {why}")


def _decode(raw: str, text: str, what: str) -> str:
    if _ESCAPE.search(text):
        raise _invalid(raw, f"malformed percent escape in {what}")
    if "%" not in text:
        return text
    out = bytearray()
    i = 0
    while i < len(text):
        if text[i] == "%":
            out.append(int(text[i + 1 : i + 3], 16))
            i += 3
        else:
            out += text[i].encode("utf-8")
            i += 1
    try:
        return out.decode("utf-8")
    except UnicodeDecodeError:
        raise _invalid(raw, f"{what} is not valid UTF-8 once decoded") from None


def _segment(raw: str, text: str) -> str:
    value = _decode(raw, text, "a path segment")
    if value in ("", ".", ".."):
        why = "an empty segment (an absolute path or '//')" if not value else f"a {value!r} segment"
        raise _invalid(raw, f"{why} is not allowed")
    if "/" in value or "\\" in value:
        raise _invalid(raw, "an encoded '/' or '\\' inside a segment is not allowed")
    if _CONTROL.search(value):
        raise _invalid(raw, "NUL and control characters are not allowed")
    return value


def _query(raw: str, text: str | None) -> tuple[tuple[str, str], ...]:
    if not text:
        return ()
    pairs: list[tuple[str, str]] = []
    for item in text.split("&"):
        if not item:
            continue
        key, _, value = item.partition("=")
        key = _decode(raw, key, "a query key")
        value = _decode(raw, value, "a query value")
        if not key:
            raise _invalid(raw, "a query parameter without a name")
        if _CONTROL.search(key + value):
            raise _invalid(raw, "NUL and control characters are not allowed")
        if any(key == seen for seen, _ in pairs):
            raise _invalid(raw, f"query parameter {key!r} is given twice")
        pairs.append((key, value))
    return tuple(pairs)


def _readable(ch: str) -> bool:
    # Letters, marks, digits, punctuation and symbols stay as they are; spaces, controls and format
    # characters (a bidi override, a zero-width space) are escaped so what a person sees is the URL.
    return ch in _KEEP or (ord(ch) > 0x7F and unicodedata.category(ch)[0] not in "CZ")


def _encode(text: str) -> str:
    return "".join(ch if _readable(ch) else "".join(f"%{b:02X}" for b in ch.encode("utf-8")) for ch in text)


@dataclass(frozen=True, slots=True)
class ResourceURL:
    """A parsed resource URL. ``str(url)`` is its canonical form."""

    scheme: str
    segments: tuple[str, ...] = ()
    query: tuple[tuple[str, str], ...] = ()
    fragment: str | None = None

    @property
    def authority(self) -> str:
        """The first segment (``""`` for ``scheme://``)."""
        return self.segments[0] if self.segments else ""

    @property
    def path_segments(self) -> tuple[str, ...]:
        """The segments after the authority."""
        return self.segments[1:]

    @property
    def path(self) -> str:
        """The segments after the authority, joined with ``/``."""
        return "/".join(self.segments[1:])

    @property
    def params(self) -> dict[str, str]:
        """The query parameters as a dict (keys are unique by construction)."""
        return dict(self.query)

    def param(self, name: str) -> str | None:
        """One query parameter, or ``None``."""
        return next((value for key, value in self.query if key == name), None)

    @property
    def view(self) -> str | None:
        """The ``view`` query parameter (``meta``, ``original``...), if any."""
        return self.param("view")

    def without_fragment(self) -> ResourceURL:
        """The same URL without its fragment."""
        return ResourceURL(self.scheme, self.segments, self.query)

    def bare(self) -> ResourceURL:
        """The same URL without its query and fragment (how a handler names the thing itself)."""
        return ResourceURL(self.scheme, self.segments)

    def __str__(self) -> str:
        return format_resource_url(self.scheme, self.segments, self.query, self.fragment)


def parse_resource_url(raw: str) -> ResourceURL:
    """Parse ``raw`` strictly; raises ``ResourceError("invalid_resource_uri")`` saying what is wrong."""
    if not isinstance(raw, str):
        raise ResourceError("invalid_resource_uri", f"a resource URL must be a string, not {type(raw).__name__}")
    text = raw.strip()
    if len(text) > MAX_URL_LENGTH:
        raise _invalid(raw, f"longer than {MAX_URL_LENGTH} characters")
    match = _URL.fullmatch(text)
    if match is None:
        raise _invalid(raw, "expected scheme://path, e.g. local://notes.txt")
    scheme, body, query, fragment = match.groups()
    if _CONTROL.search(body) or (fragment and _CONTROL.search(fragment)):
        raise _invalid(raw, "NUL and control characters are not allowed")
    # One trailing slash names a directory the same way as none does.
    body = body[:-1] if body.endswith("/") and len(body) > 1 else body
    segments = tuple(_segment(raw, part) for part in body.split("/")) if body else ()
    return ResourceURL(scheme.lower(), segments, _query(raw, query), fragment or None)


def format_resource_url(
    scheme: str,
    segments: Iterable[str],
    query: Mapping[str, str] | Iterable[tuple[str, str]] = (),
    fragment: str | None = None,
) -> str:
    """Build the canonical URL text; segments and query values are escaped so that it parses back."""
    if not is_valid_scheme(scheme):
        raise ResourceError("invalid_scheme", f"{scheme!r} is not a valid scheme (expected [a-z][a-z0-9+.-]*)")
    out = f"{scheme}://" + "/".join(_encode(segment) for segment in segments)
    pairs = list(query.items()) if isinstance(query, Mapping) else list(query)
    if pairs:
        out += "?" + "&".join(f"{_encode(key)}={_encode(value)}" for key, value in pairs)
    if fragment:
        out += "#" + fragment
    return out
