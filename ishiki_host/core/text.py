"""Text every store of the host can hold: ``clean_text`` and ``clean_json``.

A Python string may hold what UTF-8 cannot encode: a lone UTF-16 surrogate (half an emoji, as platforms
written in JavaScript send when they cut a message in the middle of a pair) is a valid ``str`` but makes
``str.encode("utf-8")`` raise, and with it every write of the fact log, every SQLite bind and every JSON body
sent as UTF-8. A NUL is valid UTF-8 but ends a string for SQLite's FTS5. So text from outside is cleaned once,
where it comes in (the host's ingest, ``ishiki_host.channels.inbound``), and the fact log cleans a line it
cannot encode as a last resort, so one such character never stops a bot.

Cleaning keeps what it can: a surrogate pair split into two code points is joined back into its character,
a surrogate without its other half becomes U+FFFD (the replacement character), NULs are dropped. Text that
needs none of this is returned as it is (the same object), so the common case costs one encode.
"""

from __future__ import annotations

from ishiki_host.jsontypes import Json

__all__ = ["clean_json", "clean_text"]


def clean_text(text: str) -> str:
    """``text`` without NULs and lone surrogates (see the module docstring)."""
    if "\x00" in text:
        text = text.replace("\x00", "")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        # Through UTF-16, where a pair of surrogates is one character again and a lone one is an error.
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text


def clean_json(value: Json) -> Json:
    """``value`` with every string in it (keys too) passed through ``clean_text``; the same object when
    nothing needed cleaning."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, list):
        items = [clean_json(item) for item in value]
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    if isinstance(value, dict):
        pairs = [(clean_json(key), clean_json(item)) for key, item in value.items()]
        same = all(k is k0 and v is v0 for (k, v), (k0, v0) in zip(pairs, value.items(), strict=True))
        return value if same else dict(pairs)
    return value
