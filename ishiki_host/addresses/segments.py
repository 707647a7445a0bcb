"""File-system-safe directory names for ids that come from outside (profile ids, sids, channel ids).

``escape_segment`` turns any non-empty string into one directory name:

- bytes outside ``[A-Za-z0-9._-]`` become ``%XX`` (UTF-8; lone surrogates kept with ``surrogatepass``), so
  ``/``, ``:``, NUL and ``%`` itself never reach the file system raw and distinct ids stay distinct;
- a leading or trailing dot is escaped, so no name is ``.``, ``..``, hidden, or loses a dot on Windows;
- a Windows device name (``con``, ``nul.txt``, ``COM1``...) gets its first letter escaped;
- a name with an uppercase letter gets ``~`` and 8 hex digits of its hash, so ids differing only in case
  never share a directory on a case-insensitive file system;
- a name longer than ``MAX_SEGMENT`` is cut (never inside an escape) and ends with ``~`` and 16 hex digits
  of the hash of the whole id.

``~`` is always escaped inside ids, so a suffix is unambiguous and ``unescape_segment`` inverts every name
that was not cut.
"""

from __future__ import annotations

import hashlib
import re

__all__ = ["MAX_SEGMENT", "escape_segment", "unescape_segment"]

MAX_SEGMENT = 120
_SAFE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")
_DEVICES = frozenset(
    ["con", "prn", "aux", "nul", "conin$", "conout$"] + [f"{p}{n}" for p in ("com", "lpt") for n in "123456789"]
)
_SUFFIX = re.compile(r"~([0-9a-f]{8}|[0-9a-f]{16})\Z")


def _escape_bytes(text: str) -> str:
    return "".join(f"%{b:02X}" for b in text.encode("utf-8", "surrogatepass"))


def _digest(value: str, size: int) -> str:
    return hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:size]


def escape_segment(value: str) -> str:
    """One file-system-safe directory name for ``value`` (see the module docstring); ``ValueError`` if empty."""
    if not isinstance(value, str) or not value:
        raise ValueError(f"cannot make a directory name of {value!r}")
    out = "".join(ch if ch in _SAFE else _escape_bytes(ch) for ch in value)
    if out.startswith("."):
        out = "%2E" + out[1:]
    if out.endswith("."):
        out = out[:-1] + "%2E"
    if out.split(".", 1)[0].lower() in _DEVICES:
        out = _escape_bytes(out[0]) + out[1:]
    if len(out) > MAX_SEGMENT:
        cut = MAX_SEGMENT - 17
        # Step back over a partial %XX escape so the kept prefix stays decodable.
        cut -= 1 if out[cut - 1] == "%" else 2 if out[cut - 2] == "%" else 0
        return f"{out[:cut]}~{_digest(value, 16)}"
    if any("A" <= ch <= "Z" for ch in value):
        out += f"~{_digest(value, 8)}"
    return out


def unescape_segment(segment: str) -> str:
    """Invert ``escape_segment``; ``ValueError`` for a segment that was cut to length (not invertible)."""
    match = _SUFFIX.search(segment)
    if match and len(match.group(1)) == 16:
        raise ValueError(f"{segment!r} was shortened; the original id is not recoverable from it")
    body = segment[: match.start()] if match else segment
    raw = bytearray()
    i = 0
    while i < len(body):
        if body[i] == "%":
            raw.append(int(body[i + 1 : i + 3], 16))
            i += 3
        else:
            raw.append(ord(body[i]))
            i += 1
    return raw.decode("utf-8", "surrogatepass")
