"""Tool names as models see them: ``<server>__<tool>``, made acceptable to every provider.

Providers accept tool names matching ``^[a-zA-Z0-9_-]{1,64}$``; MCP tool and server names may hold dots,
slashes, spaces or non-ASCII letters and be longer. The mapping is:

1. every character outside ``[A-Za-z0-9_-]`` becomes ``_`` (in the server name and in the tool name);
2. the server part is cut to 32 characters, the whole name to 64;
3. a name that was cut, or that another tool of the server already took (``a.b`` and ``a_b`` both give
   ``a_b``), ends in ``-`` and 6 hex digits of a hash of the original server and tool names instead, so it
   stays unique and the same from one run to the next. Names that needed no change are assigned first, so
   they keep their plain form.

The extension keeps the map from offered name to the server's own tool name; nothing parses names back.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

__all__ = ["MAX_NAME", "SEPARATOR", "sanitize", "server_prefix", "tool_names"]

MAX_NAME = 64
SEPARATOR = "__"
_MAX_PREFIX = 32
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def sanitize(text: str) -> str:
    """``text`` with every character a provider refuses replaced by ``_`` (``_`` for an empty text)."""
    return _UNSAFE.sub("_", text) or "_"


def _digest(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:6]


def server_prefix(server: str) -> str:
    """The part before ``__`` for ``server``'s tools."""
    safe = sanitize(server)
    if len(safe) <= _MAX_PREFIX:
        return safe
    return safe[: _MAX_PREFIX - 7] + "-" + _digest(server)


def tool_names(server: str, tools: Iterable[str]) -> dict[str, str]:
    """Offered name → the server's tool name, for every tool of ``server`` (see the module docstring)."""
    prefix = server_prefix(server) + SEPARATOR
    unique = list(dict.fromkeys(tools))
    plain = [t for t in unique if sanitize(t) == t]
    changed = sorted(t for t in unique if sanitize(t) != t)
    offered: dict[str, str] = {}
    for tool in plain + changed:
        name = prefix + sanitize(tool)
        if len(name) > MAX_NAME or name in offered:
            name = name[: MAX_NAME - 7] + "-" + _digest(server, tool)
        offered[name] = tool
    return offered
