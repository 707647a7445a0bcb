"""Tool names checked before a profile runs (``ishiki check``, activation).

Extensions offer their tools at run time (``ishiki_tools`` is asked every turn), so only a running runtime
knows a profile's tools for sure; a clash there fails the turn with ``ToolConflictError``. Before that, the
host can check what extension classes declare in ``tool_names``:

- two enabled extensions of a profile declaring the same name;
- an extension declaring a name the host gives its own tools: ``read``, ``send_message``, ``finish``, ``wait``,
  and ``codemode`` / ``search`` when the profile turns codemode / toolsearch on;
- when every enabled extension declares its names, a ``codemode.direct`` or ``toolsearch.resident`` entry that
  names no tool at all (a typo the runtime would silently ignore).

An extension that declares nothing (``tool_names = None``: its tools come from elsewhere, like MCP servers) is
left out of the first two checks and turns the third off. Each problem makes the profile ``invalid``.

What the declarations cannot show is a warning (``static_tool_warnings``; the profile still runs, ``ishiki
check`` prints it and keeps its exit status):

- a ``codemode.direct`` or ``toolsearch.resident`` entry that no declared tool has, while some extension
  declares nothing (it may be one of that extension's tools, or a typo: only a turn will tell);
- an extension that declares nothing while another enabled extension declares nothing either: two unknown
  sets of names may clash, and nothing before a turn can say.

Running an extension to ask its tools is not an option here: ``create`` may start processes, open
connections or write files, and a check must not. So ``ishiki new plugin extension`` declares ``tool_names``
and its generated test keeps the declaration equal to what the instance offers.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from ishiki_host.config.validation import did_you_mean
from ishiki_host.config.yamlio import Key, format_path
from ishiki_host.errors import ConfigError, ProfileInvalid

if TYPE_CHECKING:
    from ishiki_host.config.profile import ProfileLoad
    from ishiki_host.config.profile_types import Profile
    from ishiki_host.config.services import ServiceCatalog

__all__ = [
    "CODEMODE_TOOL",
    "KERNEL_TOOLS",
    "SEARCH_TOOL",
    "host_tool_names",
    "static_tool_problems",
    "static_tool_warnings",
]

KERNEL_TOOLS = ("read", "send_message", "finish", "wait")
CODEMODE_TOOL = "codemode"
SEARCH_TOOL = "search"


def host_tool_names(profile: Profile) -> tuple[str, ...]:
    """The names the host's own tools take in a runtime of ``profile``."""
    names = list(KERNEL_TOOLS)
    if profile.codemode is not None:
        names.append(CODEMODE_TOOL)
    if profile.toolsearch is not None:
        names.append(SEARCH_TOOL)
    return tuple(names)


def static_tool_problems(load: ProfileLoad, catalog: ServiceCatalog) -> list[ConfigError]:
    """The tool-name problems of a loaded profile that the declarations show (see the module docstring)."""
    profile = load.profile
    if profile is None:
        return []
    owner = dict.fromkeys(host_tool_names(profile), "the host")
    problems: list[ConfigError] = []
    every_declared = True
    for use in profile.extends:
        spec = catalog.spec(use.service)
        if spec is None or spec.tool_names is None:
            every_declared = False
            continue
        for name in spec.tool_names:
            if name in owner:
                message = f"extension {use.name!r} offers a tool named {name!r}, as {owner[name]} does"
                problems.append(_problem(load, ("extends", use.name), message))
            else:
                owner[name] = f"extension {use.name!r}"
    if every_declared:
        problems.extend(_unknown_names(load, profile, tuple(owner)))
    return problems


def static_tool_warnings(load: ProfileLoad, catalog: ServiceCatalog) -> list[ConfigError]:
    """What the declarations of a loaded profile's extensions cannot show (see the module docstring)."""
    profile = load.profile
    if profile is None:
        return []
    specs = [(use.name, catalog.spec(use.service)) for use in profile.extends]
    undeclared = [name for name, spec in specs if spec is not None and spec.tool_names is None]
    if not undeclared:
        return []
    declared = (name for _, spec in specs if spec is not None for name in spec.tool_names or ())
    known = (*host_tool_names(profile), *declared)
    listed = ", ".join(repr(name) for name in undeclared)
    who = f"extension {listed} declares" if len(undeclared) == 1 else f"extensions {listed} declare"
    why = f"{who} no tool names (tool_names), so only a turn will tell"
    warnings = [
        _problem(load, path, f"no declared tool is named {name!r}{did_you_mean(name, known)}; {why}")
        for path, name in _unknown_entries(profile, known)
    ]
    if len(undeclared) > 1:
        for name in undeclared:
            others = ", ".join(repr(other) for other in undeclared if other != name)
            message = f"extension {name!r} declares no tool names (tool_names), nor does {others}: a clash among "
            warnings.append(_problem(load, ("extends", name), message + "their tools shows only when a turn runs"))
    return warnings


def _unknown_names(load: ProfileLoad, profile: Profile, known: tuple[str, ...]) -> Iterator[ConfigError]:
    for path, name in _unknown_entries(profile, known):
        yield _problem(load, path, f"no tool is named {name!r}{did_you_mean(name, known)}")


def _unknown_entries(profile: Profile, known: tuple[str, ...]) -> Iterator[tuple[tuple[Key, ...], str]]:
    """The key path and name of each ``codemode.direct`` / ``toolsearch.resident`` entry not in ``known``."""
    lists: list[tuple[str, str, tuple[str, ...]]] = []
    if profile.codemode is not None:
        lists.append(("codemode", "direct", tuple(profile.codemode.direct)))
    if profile.toolsearch is not None:
        lists.append(("toolsearch", "resident", tuple(profile.toolsearch.resident)))
    for section, key, names in lists:
        for index, name in enumerate(names):
            if name not in known:
                yield (section, key, index), name


def _problem(load: ProfileLoad, path: tuple[Key, ...], message: str) -> ConfigError:
    return ProfileInvalid(message, file=load.file, line=load.line(path), path=format_path(path))
