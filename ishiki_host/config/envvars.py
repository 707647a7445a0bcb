"""``${VAR}`` and ``${VAR:-default}`` expansion of configuration strings.

Expansion applies to the string values (never the keys) of ``models.yaml`` and ``ishiki.yaml``; profiles are
not expanded. ``${VAR:-default}`` uses the default when ``VAR`` is unset or empty, like the shell. ``$${``
writes a literal ``${``. A lone ``$`` is kept as it is.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

__all__ = ["expand_vars", "variables"]

_TOKEN = re.compile(r"\$\$\{|\$\{(?:([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\})?")


def variables(text: str) -> list[str]:
    """The names of the variables ``text`` refers to, in order, each once (``$${`` refers to none)."""
    names = [match.group(1) for match in _TOKEN.finditer(text) if match.group(1)]
    return list(dict.fromkeys(names))


def expand_vars(text: str, env: Mapping[str, str]) -> tuple[str, list[str]]:
    """``text`` with every reference replaced, and one problem message per reference that cannot be.

    A reference to an unset variable without a default, or a ``${`` that does not form a reference, is a
    problem; the reference is left as written in the returned text.
    """
    if "$" not in text:
        return text, []
    problems: list[str] = []

    def replace(match: re.Match[str]) -> str:
        token = match.group(0)
        if token == "$${":
            return "${"
        name, default = match.group(1), match.group(2)
        if name is None:
            problems.append("malformed variable reference: write ${NAME} or ${NAME:-default} ($${ for a literal)")
            return token
        value = env.get(name)
        if value:
            return value
        if default is not None:
            return default
        if value is None:
            problems.append(f"environment variable {name} is not set (write ${{{name}:-default}} to give a default)")
            return token
        return value

    return _TOKEN.sub(replace, text), problems
