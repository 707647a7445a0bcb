"""The plugins page (``/plugins``): what is installed (with load errors), the host plugins' states, and per
profile its tools, extensions and channel accounts with on/off switches; the learned skills with theirs.

The switches are the ones ``/tools``, ``/extensions`` and ``/channels`` set in chat: rows of
``services.memory.plugin_settings`` for the profile, read live (a switch applies from the next turn).
``POST /plugins/switch`` (``kind``, ``name``, ``profile``, ``enabled``) and ``POST /plugins/skill``
(``name``, ``enabled``) change them, audited. The kernel tools a reply needs (``ALWAYS_ON``) cannot be
switched off. A profile's tools are those of one of its live runtimes (``ctx.tools``); with none alive the
page says so.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ishiki_host import OPEN_TOOLS, HttpResponse, PluginKind

from ishiki_dashboard.app import Problem, json_response
from ishiki_dashboard.html import Safe, badge, button_post, esc, section, table, tag

if TYPE_CHECKING:
    from ishiki_host import ProfileStatus

    from ishiki_dashboard.app import Dashboard, DashRequest

__all__ = ["ALWAYS_ON", "KINDS", "register"]

ALWAYS_ON = OPEN_TOOLS
"""The kernel tools a reply needs, never switched off (the host's ``OPEN_TOOLS``, which its face lacks)."""

KINDS: tuple[PluginKind, ...] = ("tool", "extension", "channel")


def register(dash: Dashboard) -> None:
    """``/plugins``, ``/api/plugins``, ``POST /plugins/switch`` and ``POST /plugins/skill``."""

    async def page(req: DashRequest) -> str:
        return await render(dash)

    async def api(req: DashRequest) -> HttpResponse:
        return json_response(await plugins_data(dash))

    async def switch(req: DashRequest) -> HttpResponse:
        return json_response(await set_switch(dash, req.form()))

    async def skill(req: DashRequest) -> HttpResponse:
        return json_response(await set_skill(dash, req.form()))

    dash.page("/plugins", page, title="Plugins", nav="plugins")
    dash.api("/api/plugins", api)
    dash.form("/plugins/switch", switch)
    dash.form("/plugins/skill", skill)


def _kind(text: str) -> PluginKind:
    for kind in KINDS:
        if kind == text:
            return kind
    raise Problem(400, f"kind is one of {', '.join(KINDS)}", field="kind")


def _enabled(form: Mapping[str, str]) -> bool:
    value = form.get("enabled", "").lower()
    if value not in ("on", "off", "true", "false", "1", "0"):
        raise Problem(400, "enabled is on or off", field="enabled")
    return value in ("on", "true", "1")


async def set_switch(dash: Dashboard, form: Mapping[str, str]) -> dict[str, Any]:
    """Turn one tool, extension or channel account of a profile on or off (audited)."""
    kind, name, profile_id = _kind(form.get("kind", "")), form.get("name", ""), form.get("profile", "")
    status = next((p for p in dash.ctx.profiles() if p.id == profile_id), None)
    if status is None:
        raise Problem(400, f"no profile {profile_id!r}", field="profile")
    if not name:
        raise Problem(400, "name the tool, extension or channel", field="name")
    enabled = _enabled(form)
    if kind == "tool" and name in ALWAYS_ON and not enabled:
        raise Problem(400, f"{name} is a kernel tool a reply needs: it is always on", field="name")
    known = _names(status, kind)
    if known is not None and name not in known:
        raise Problem(400, f"the profile {profile_id} has no {kind} {name!r}", field="name")
    await dash.memory(", so nothing can be switched").plugin_settings.set(kind, name, enabled, profile=profile_id)
    change = {"kind": kind, "name": name, "profile": profile_id, "enabled": enabled}
    dash.audit("switch", change)
    return change


def _names(status: ProfileStatus, kind: str) -> set[str] | None:
    """The profile's extensions or channel accounts; ``None`` for tools (known only from a live runtime)."""
    if status.profile is None or kind == "tool":
        return None
    if kind == "extension":
        return {use.name for use in status.profile.extends}
    return set(status.profile.claims.by_sid)


async def set_skill(dash: Dashboard, form: Mapping[str, str]) -> dict[str, Any]:
    """Enable or disable a learned skill (audited)."""
    name = form.get("name", "")
    enabled = _enabled(form)
    if not await dash.memory(", so nothing can be switched").skills.set_enabled(name, enabled):
        raise Problem(400, f"no skill {name!r}", field="name")
    change = {"name": name, "enabled": enabled}
    dash.audit("skill", change)
    return change


async def _profile_data(dash: Dashboard, status: ProfileStatus) -> dict[str, Any]:
    store = dash.ctx.services.memory
    switches = {
        kind: (await store.plugin_settings.effective(kind, profile=status.id) if store else {}) for kind in KINDS
    }
    tools = await dash.ctx.tools(status.runtimes[0]) if status.runtimes else None
    profile = status.profile
    return {
        "id": status.id,
        "state": status.state,
        "tools": None
        if tools is None
        else [
            {
                "name": t.name,
                "description": t.description,
                "on": t.name in ALWAYS_ON or switches["tool"].get(t.name, True),
                "always_on": t.name in ALWAYS_ON,
            }
            for t in sorted(tools, key=lambda t: t.name)
        ],
        "extensions": [
            {"name": use.name, "on": switches["extension"].get(use.name, True)}
            for use in (profile.extends if profile else ())
        ],
        "channels": [
            {"name": sid, "on": switches["channel"].get(sid, True)}
            for sid in sorted(profile.claims.by_sid if profile else ())
        ],
    }


async def plugins_data(dash: Dashboard) -> dict[str, Any]:
    """What the page shows, as JSON."""
    store = dash.ctx.services.memory
    skills = await store.skills.all() if store is not None else []
    report = dash.ctx.status()
    return {
        "installed": [
            {
                "group": p.group,
                "name": p.name,
                "target": p.target,
                "distribution": p.distribution,
                "version": p.version,
                "error": p.error,
            }
            for p in dash.ctx.installed()
        ],
        "host_plugins": report.get("plugins") or {},
        "profiles": [await _profile_data(dash, status) for status in dash.ctx.profiles()],
        "skills": [{"name": s.name, "description": s.description, "on": s.enabled} for s in skills],
        "memory": store is not None,
    }


def _toggle(dash: Dashboard, url: str, on: bool, fields: Mapping[str, str], *, locked: bool = False) -> Safe:
    if locked:
        return Safe(f"{badge('on')} {tag('small', 'kernel, always on', cls='muted')}")
    body = {**fields, "enabled": "off" if on else "on"}
    button = button_post(dash.url(url), "Turn off" if on else "Turn on", body=body, cls="secondary")
    return Safe(f"{badge('on' if on else 'off')} {button}")


def _profile_section(dash: Dashboard, p: Mapping[str, Any]) -> Safe:
    def switch(kind: str, name: str, on: bool, locked: bool = False) -> Safe:
        return _toggle(dash, "/plugins/switch", on, {"kind": kind, "name": name, "profile": p["id"]}, locked=locked)

    if p["tools"] is None:
        tools: Safe = tag(
            "p", "No runtime of this profile is alive: its tools are listed once it has run.", cls="muted"
        )
    else:
        tools = table(
            ["Tool", "Description", "State"],
            [(t["name"], t["description"], switch("tool", t["name"], t["on"], t["always_on"])) for t in p["tools"]],
        )
    extensions = table(
        ["Extension", "State"],
        [(e["name"], switch("extension", e["name"], e["on"])) for e in p["extensions"]],
        empty="none",
    )
    channels = table(
        ["Channel account", "State"],
        [(c["name"], switch("channel", c["name"], c["on"])) for c in p["channels"]],
        empty="none",
    )
    title = Safe(f"{esc(p['id'])} {badge(p['state'])}")
    return section(title, Safe(f"<h3>Tools</h3>{tools}<h3>Extensions</h3>{extensions}<h3>Channels</h3>{channels}"))


async def render(dash: Dashboard) -> str:
    """The page's body."""
    data = await plugins_data(dash)
    installed = table(
        ["Group", "Name", "Target", "Distribution", "Error"],
        [
            (
                p["group"],
                p["name"],
                tag("code", p["target"]),
                f"{p['distribution'] or ''} {p['version'] or ''}",
                tag("span", p["error"], cls="error") if p["error"] else "",
            )
            for p in data["installed"]
        ],
    )
    host_plugins = table(
        ["Plugin", "State", "Restarts", "Last error"],
        [
            (n, badge(e.get("state", "?")), e.get("restarts", 0), e.get("error") or "")
            for n, e in sorted(data["host_plugins"].items())
            if isinstance(e, Mapping)
        ],
    )
    skills = table(
        ["Skill", "Description", "State"],
        [
            (s["name"], s["description"], _toggle(dash, "/plugins/skill", s["on"], {"name": s["name"]}))
            for s in data["skills"]
        ],
        empty="no learned skill",
    )
    note = "" if data["memory"] else tag("p", "The host has no memory database: switches are off.", cls="error")
    profiles = "".join(_profile_section(dash, p) for p in data["profiles"])
    return "".join(
        [
            note,
            section("Host plugins", host_plugins),
            profiles,
            section("Skills", skills),
            section("Installed", installed),
        ]
    )
