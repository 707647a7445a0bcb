"""Finding the credentials a request carried, and scrubbing them from what the provider answered, in every
form an echo of them can take.

Some servers repeat the key they refused in their error message, and not always as it was sent: a JSON
encoder may write any character as ``\\uXXXX`` (and ``/`` as ``\\/``), an upstream's error body may be carried
as a JSON string inside the JSON answer (OpenRouter's ``metadata.raw``: every backslash doubled), and a key
may come back inside a URL, percent-encoded. ``scrub`` matches each secret with every character in any of
these forms, mixed freely:

- the character itself;
- a JSON escape at any depth of nesting: ``\\uXXXX`` (hex digits in either case; a surrogate pair beyond the
  BMP), ``\\/``, ``\\"``, ``\\\\`` and the control-character escapes, each with one or more backslashes;
- URL encoding: ``%XX`` of each UTF-8 byte (either case), and ``+`` for a space.

Because JSON has no other way to spell a character, a decoded string of a scrubbed JSON text cannot hold a
secret; ``scrub_json`` scrubs the decoded values as well, as a second line for whatever decoding a reader
does next. Not covered, on purpose: base64 (an encoded substring depends on its alignment and on the
characters around it, so there is no fixed pattern to match; no provider is known to echo keys so) and
HTML character references (error pages of proxies do not repeat request headers).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["REDACTED", "scrub", "scrub_json", "secrets_of"]

REDACTED = "<redacted>"
_SECRET_HEADER = re.compile(r"auth|key|token|secret", re.IGNORECASE)
_MIN_SECRET = 8  # shorter values ("Bearer" alone, a one-letter key) would blank out ordinary words
_SHORT_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "\b": "b", "\f": "f", "\n": "n", "\r": "r", "\t": "t"}
_BACKSLASHES = r"\\+"  # one backslash per level of JSON nesting the echo went through (at least one)


def secrets_of(headers: Mapping[str, str]) -> tuple[str, ...]:
    """The credentials in request ``headers`` (a ``Bearer``/``Basic`` value also without its scheme), longest
    first."""
    found: set[str] = set()
    for name, value in headers.items():
        if not _SECRET_HEADER.search(name) or not value:
            continue
        found.add(value)
        scheme, _, rest = value.partition(" ")
        if rest and scheme.lower() in ("bearer", "basic", "token"):
            found.add(rest.strip())
    return tuple(sorted((s for s in found if len(s) >= _MIN_SECRET), key=len, reverse=True))


def scrub(text: str, secrets: Sequence[str]) -> str:
    """``text`` with every secret, in any of the forms of the module docstring, replaced by ``<redacted>``
    (``text`` itself when it held none)."""
    if not secrets:
        return text
    scrubbed, found = _pattern(tuple(secrets)).subn(REDACTED, text)
    return scrubbed if found else text


def scrub_json(value: Any, secrets: Sequence[str]) -> Any:
    """A decoded JSON value with every string in it (keys too) scrubbed."""
    if isinstance(value, str):
        return scrub(value, secrets)
    if isinstance(value, list):
        return [scrub_json(item, secrets) for item in value]
    if isinstance(value, dict):
        return {scrub(str(k), secrets): scrub_json(v, secrets) for k, v in value.items()}
    return value


@functools.lru_cache(maxsize=64)
def _pattern(secrets: tuple[str, ...]) -> re.Pattern[str]:
    """One pattern for all ``secrets``, longest first (so a ``Bearer`` value goes whole, not just its key)."""
    ordered = sorted(secrets, key=len, reverse=True)
    return re.compile("|".join("".join(_char(c) for c in secret) for secret in ordered))


def _char(c: str) -> str:
    """Every way a character of a secret may appear in an answer."""
    forms = [re.escape(c), "".join(_BACKSLASHES + _hex_pattern(f"u{unit:04x}") for unit in _utf16_units(c))]
    if c in _SHORT_ESCAPES:
        forms.append(_BACKSLASHES + re.escape(_SHORT_ESCAPES[c]))
    forms.append("".join("%" + _hex_pattern(f"{byte:02x}") for byte in c.encode("utf-8")))
    if c == " ":
        forms.append(r"\+")
    return "(?:" + "|".join(forms) + ")"


def _utf16_units(c: str) -> list[int]:
    """The UTF-16 code units of ``c``: one, or a surrogate pair beyond the BMP (as JSON escapes it)."""
    data = c.encode("utf-16-be")
    return [int.from_bytes(data[i : i + 2], "big") for i in range(0, len(data), 2)]


def _hex_pattern(text: str) -> str:
    """``text`` with each hex letter matching either case (``u00a9`` → ``u00[aA]9``)."""
    return "".join(f"[{ch}{ch.upper()}]" if ch in "abcdef" else re.escape(ch) for ch in text)
