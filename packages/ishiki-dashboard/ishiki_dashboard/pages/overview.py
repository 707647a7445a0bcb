"""The overview (``/``): the profiles with their state, the channels, the host plugins, how busy the host has
been, this host's part of a fleet, and the Reload button (``POST /reload``, audited). ``/api/overview`` is the
same as JSON.

Everything comes from ``ctx.profiles()`` and ``ctx.status()`` (masked): turns per minute and errors in the last
hour are the report's ``activity`` block, shown as "not reported" by a host whose report has none. A host on a
shared store (``store: postgresql://...``) reports ``fleetHost``, shown as the Fleet panel (absent otherwise), and
a channel account it leaves to another host of the fleet is on ``standby``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ishiki_host import HttpResponse, Json

from ishiki_dashboard.app import json_response
from ishiki_dashboard.html import Safe, badge, button_post, esc, join, masked, section, table, tag

if TYPE_CHECKING:
    from ishiki_host import ProfileStatus

    from ishiki_dashboard.app import Dashboard, DashRequest

__all__ = ["overview_data", "register"]

_STANDBY = "standby (another host of the fleet runs it)"
"""How the overview shows a channel account on ``standby``."""


def register(dash: Dashboard) -> None:
    """``/``, ``/api/overview`` and ``POST /reload``."""

    async def page(req: DashRequest) -> str:
        return render(dash, overview_data(dash))

    async def api(req: DashRequest) -> HttpResponse:
        return json_response(overview_data(dash))

    async def reload(req: DashRequest) -> HttpResponse:
        dash.ctx.request_reload()
        dash.audit("reload", {})
        return json_response({"reloading": True}, 202)

    dash.page("/", page, title="Overview", nav="overview")
    dash.api("/api/overview", api)
    dash.form("/reload", reload)


def _profile(status: ProfileStatus) -> dict[str, Json]:
    return {
        "id": status.id,
        "state": status.state,
        "missing": list(status.missing),
        "errors": [error.describe() for error in status.errors],
        "runtimes": [str(key) for key in status.runtimes],
    }


def overview_data(dash: Dashboard) -> dict[str, Json]:
    """What the overview shows, as JSON (masked)."""
    report = dash.ctx.status()
    host = report.get("host")
    data: dict[str, Json] = {
        "host": host if isinstance(host, Mapping) else {},
        "profiles": [_profile(p) for p in dash.ctx.profiles()],
        "channels": report.get("channels") or {},
        "plugins": report.get("plugins") or {},
        "activity": report.get("activity"),
        "ready": report.get("ready"),
    }
    fleet = report.get("fleetHost")
    if isinstance(fleet, Mapping):
        data["fleetHost"] = fleet
    shown = masked(data)
    assert isinstance(shown, dict)
    return shown


def _details(profile: Mapping[str, Any]) -> Safe:
    if profile["missing"]:
        return join(["waiting for: ", ", ".join(profile["missing"])])
    if profile["errors"]:
        return Safe("".join(tag("div", e, cls="error mono") for e in profile["errors"]))
    return esc("")


def _profiles(profiles: list[Any]) -> Safe:
    rows = [(p["id"], badge(p["state"]), len(p["runtimes"]), _details(p)) for p in profiles]
    return table(["Profile", "State", "Runtimes alive", "Details"], rows, empty="no profile directory")


def _state(state: object) -> Safe:
    return badge(_STANDBY if state == "standby" else state)


def _supervised(entries: Mapping[str, Any], first: str) -> Safe:
    rows = [
        (name, _state(e.get("state", "?")), e.get("restarts", 0), e.get("errors", 0), e.get("error") or "")
        for name, e in sorted(entries.items())
        if isinstance(e, Mapping)
    ]
    return table([first, "State", "Restarts", "Errors", "Last error"], rows, empty="none configured")


def _activity(activity: Any) -> Safe:
    if not isinstance(activity, Mapping):
        return tag("p", "Turns and errors: not reported by this host.", cls="muted")
    cards = [
        ("turnsPerMinute", "turns per minute (15 min)"),
        ("turnsLastHour", "turns in the last hour"),
        ("failedTurnsLastHour", "failed turns in the last hour"),
        ("errorsLastHour", "errors logged in the last hour"),
    ]
    body = "".join(
        f'<div class="card"><div class="value">{esc(activity.get(key, "–"))}</div>'
        f'<div class="label">{esc(label)}</div></div>'
        for key, label in cards
    )
    return Safe(f'<div class="cards">{body}</div>')


def _fleet(fleet: Any) -> Safe:
    if not isinstance(fleet, Mapping):
        return esc("")
    accounts = fleet.get("accountLeases")
    held = ", ".join(str(a) for a in accounts) if isinstance(accounts, list) and accounts else "none"
    row = (
        fleet.get("holder", "?"),
        tag("span", fleet.get("store", "?"), cls="mono"),
        fleet.get("runtimeLeases", "?"),
        held,
        f"{fleet.get('leaseSeconds', '?')} s",
    )
    headers = ["This host", "Store", "Runtime leases", "Channel accounts leased", "Lease period"]
    return section("Fleet", Safe(str(table(headers, [row])) + str(_fleet_hosts(fleet.get("fleet")))))


def _seconds(value: object) -> str:
    return f"{float(value):.0f} s" if isinstance(value, int | float) else "?"


def _fleet_hosts(view: Any) -> Safe:
    """Every host of the fleet as last read by this one, and the inbox's lag (events waiting for their owner)."""
    if not isinstance(view, Mapping) or not isinstance(view.get("hosts"), list):
        return esc("")
    rows = [
        (
            h.get("name", "?"),
            tag("span", h.get("holder", "?"), cls="mono"),
            "alive" if h.get("alive") else "gone",
            f"{_seconds(h.get('seenSecondsAgo'))} ago",
            h.get("runtimeLeases", "?"),
            h.get("accountLeases", "?"),
        )
        for h in view["hosts"]
        if isinstance(h, Mapping)
    ]
    found = view.get("inbox")
    inbox: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    lag = inbox.get("lagSeconds")
    waiting = f"{inbox.get('waiting', 0)} waiting" + (f", the oldest for {_seconds(lag)}" if lag is not None else "")
    headers = ["Host", "Holder", "State", "Seen", "Runtime leases", "Account leases"]
    return Safe(str(table(headers, rows)) + str(tag("p", f"Inbox: {waiting}")))


def render(dash: Dashboard, data: Mapping[str, Any]) -> str:
    """The overview's body."""
    host = data["host"]
    ready = data.get("ready") or {}
    problems = ready.get("problems") or [] if isinstance(ready, Mapping) else []
    summary = join(
        [
            "Host ",
            badge(host.get("phase", "?")),
            f" · version {host.get('version', '?')} · up {host.get('uptimeSeconds', '?')} s",
        ]
    )
    reload = button_post(
        dash.url("/reload"), "Reload config", confirm="Reload the config directory now?", cls="secondary"
    )
    parts = [
        tag("div", Safe(f"{summary} {reload}"), cls="toolbar"),
        Safe("".join(tag("p", p, cls="error") for p in problems)),
        _activity(data.get("activity")),
        _fleet(data.get("fleetHost")),
        section("Profiles", _profiles(data["profiles"])),
        section("Channels", _supervised(data["channels"], "Account")),
        section("Host plugins", _supervised(data["plugins"], "Plugin")),
    ]
    return "".join(parts)
