"""``ishiki status [DIR] [--json]``: ask the host running DIR what it runs, and print it.

The host answers on its control socket, ``<data_dir>/ishiki.sock`` (``ishiki_host.observe.control`` says why a
socket: it works without ``http.listen``, answers at once and only to the user running the host). The report
is ``Host.status()`` with the process, each profile's missing services and errors, and the readiness that
``/readyz`` answers (``ishiki_host.host.report``); ``--json`` prints it whole.

When ``store`` in ``ishiki.yaml`` is a PostgreSQL database, the fleet on it is read from the database itself
(``ishiki_host.store.pg.fleetview``: its hosts, alive or not, its leases, its inbox's lag, its beats) and printed
after the local host's report, or alone when no host runs here (an operator may ask from any machine that has
the config); ``--json`` has it as ``"fleet"``, and prints ``{"fleet": ...}`` alone when no host answers. A
database that does not answer, or psycopg not installed, is a line saying so (naming the server, never its
password), not a failure: the fleet section never changes the exit status.

Exit status: 0 with the report, 1 when no host answers for DIR (none runs; the pid file names a process that
is gone; a host that cannot be reached), even when the fleet was printed, 2 when DIR is not a config directory.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping
from functools import partial
from pathlib import Path
from typing import Any

from ishiki_host.cli._args import add_dir_argument, usable_dir
from ishiki_host.cli._output import print_json, table

__all__ = ["register", "render_fleet", "render_status", "run"]

_PIP_FIX = "pip install 'ishiki-host[postgresql]'"

_FLEET_ANSWER_SECONDS = 5.0  # status answers at once; a database slower than this is reported as not answering


def register(subparsers: Any) -> None:
    """Add the ``status`` command."""
    parser = subparsers.add_parser(
        "status",
        help="show what a running host runs",
        description="Ask the host running DIR (through <data_dir>/ishiki.sock) for its profiles, channels, "
        "runtimes, models and readiness; with a PostgreSQL store, also show the fleet on it (its hosts, leases, "
        "inbox and beats), read from the database. Exit 1 when no host runs for DIR.",
    )
    add_dir_argument(parser)
    parser.add_argument("--json", action="store_true", help="print the whole report as JSON")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Ask the host of ``args.dir``; return the exit status."""
    from ishiki_host.config.host import load_host_config
    from ishiki_host.errors import HostNotAnswering
    from ishiki_host.observe.control import CONTROL_SOCKET, ask_host
    from ishiki_host.store.pg.urls import is_postgres_url  # psycopg-free: a file store's status never needs it

    root = usable_dir("status", args.dir)
    if root is None:
        return 2
    host = load_host_config(root)[0]
    fleet = _read_fleet(host.store, host.fleet.lease_seconds) if is_postgres_url(host.store) else None
    try:
        report = ask_host(host.data_dir / CONTROL_SOCKET, "status")
    except HostNotAnswering as exc:
        if fleet is not None:
            _print(args.json, {"fleet": fleet}, render_fleet(fleet))
        print(f"ishiki status: {_why_not(root, host.data_dir, exc)}", file=sys.stderr)
        return 1
    if fleet is not None:
        report = {**report, "fleet": fleet}
    _print(args.json, report, render_status(report) + (render_fleet(fleet) if fleet is not None else []))
    return 0


def _print(as_json: bool, report: Mapping[str, Any], lines: list[str]) -> None:
    if as_json:
        print_json(report)
    else:
        print("\n".join(lines))


def _read_fleet(url: str, lease_seconds: float) -> dict[str, Any]:
    """The fleet on ``url`` (``fleetview.read_fleet``), or ``{"store", "error"}`` when psycopg is not installed. A host
    that has not beaten for a lease's length is dead: its leases have lapsed by then."""
    from ishiki_host.store.pg.urls import safe_url

    try:
        # psycopg is the optional `postgresql` extra: imported here, so that a file store's status never needs it.
        from ishiki_host.store.pg.fleetview import read_fleet
    except ModuleNotFoundError as exc:
        if exc.name not in ("psycopg", "psycopg_pool"):
            raise
        where = safe_url(url)
        return {"store": where, "error": f"the PostgreSQL store {where} cannot be read without psycopg: {_PIP_FIX}"}
    import anyio

    read = partial(read_fleet, url, alive_seconds=lease_seconds, answer_seconds=_FLEET_ANSWER_SECONDS)
    return anyio.run(read)


def _why_not(root: Path, data_dir: Path, problem: Exception) -> str:
    """Why no answer came, told from the pid file: no host, a stale pid file, or a host that did not answer."""
    from ishiki_host.host.lock import PID_FILE

    pid_file = data_dir / PID_FILE
    try:
        pid = int(pid_file.read_text(encoding="utf-8").strip())
    except FileNotFoundError:
        return f"no host is running for {root} (no {pid_file})"
    except (OSError, ValueError) as exc:
        return f"no host is running for {root} ({pid_file} is unreadable: {exc})"
    if not _alive(pid):
        return f"no host is running for {root}: {pid_file} names pid {pid}, which is not running (left by a crash)"
    return f"the host of {root} (pid {pid}) does not answer: {problem}"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process: alive, if not ours
    return True


def render_status(report: Mapping[str, Any]) -> list[str]:
    """The report as lines for people."""
    host = report.get("host", {})
    lines = [
        f"host: pid {host.get('pid')}, {host.get('phase')} for {_duration(host.get('uptimeSeconds', 0))}, "
        f"ishiki-host {host.get('version')}",
        f"  config {host.get('configDir')}, data {host.get('dataDir')}",
    ]
    ready = report.get("ready", {})
    lines.append("ready: yes" if ready.get("ready") else "ready: no")
    lines += [f"  - {problem}" for problem in ready.get("problems", [])]
    lines += _section("profiles", [_profile_row(pid, p) for pid, p in report.get("profiles", {}).items()])
    lines += _section("channels", [_channel_row(label, c) for label, c in report.get("channels", {}).items()])
    gateway = report.get("gateway", {})
    lines += _section("models", [_member_row(m, b) for m, b in gateway.get("members", {}).items()])
    providers = [
        _provider_row(pid, p, gateway.get("scheduler", {}).get(pid)) for pid, p in gateway.get("providers", {}).items()
    ]
    lines += _section("providers", providers)
    lines.append(_http_line(report.get("http", {})))
    activity = report.get("activity")
    if isinstance(activity, Mapping):
        lines.append(
            f"activity: {activity.get('turnsPerMinute', 0)} turns a minute, {activity.get('turnsLastHour', 0)} in "
            f"the last hour ({activity.get('failedTurnsLastHour', 0)} failed), "
            f"{activity.get('errorsLastHour', 0)} errors logged"
        )
    return lines


def render_fleet(fleet: Mapping[str, Any]) -> list[str]:
    """The fleet (``fleetview.fleet_status`` with its ``store``, or ``{"store", "error"}``) as lines for people."""
    store = fleet.get("store", "the PostgreSQL store")
    if fleet.get("error") or fleet.get("problem"):
        return [f"fleet: {fleet.get('error') or f'{store}: ' + str(fleet['problem'])}"]
    hosts = fleet.get("hosts", [])
    alive = sum(1 for h in hosts if h.get("alive"))
    lines = [f"fleet: {store}, {alive} of {len(hosts)} hosts alive (seen within {fleet.get('aliveSeconds', 0):g} s)"]
    lines += _section("fleet hosts", [_fleet_host_row(h) for h in hosts])
    if fleet.get("hostsHidden"):
        lines.append(f"  and {fleet['hostsHidden']} more, gone for over an hour")
    leases, inbox, beats = fleet.get("leases", {}), fleet.get("inbox", {}), fleet.get("beats", {})
    lines.append(
        f"fleet leases: {leases.get('runtime', 0)} runtime, {leases.get('account', 0)} account, "
        f"{leases.get('other', 0)} other"
    )
    lag = inbox.get("lagSeconds")
    oldest = f", the oldest for {_duration(lag)}" if lag is not None else ""
    lines.append(f"fleet inbox: {inbox.get('waiting', 0)} waiting{oldest}; {inbox.get('taken', 0)} taken, not yet done")
    lines.append(
        f"fleet beats: {beats.get('due', 0)} due, {beats.get('running', 0)} running, "
        f"{beats.get('abandoned', 0)} abandoned by their host"
    )
    return lines


def _fleet_host_row(host: Mapping[str, Any]) -> list[str]:
    state = "alive" if host.get("alive") else "stopped" if host.get("stoppedAt") is not None else "dead"
    seen = f"seen {_duration(host.get('seenSecondsAgo') or 0)} ago, up {_duration(host.get('upSeconds') or 0)}"
    runtimes, accounts = host.get("runtimeLeases", 0), host.get("accountLeases", 0)
    held = f"{runtimes} runtime{'' if runtimes == 1 else 's'}, {accounts} account{'' if accounts == 1 else 's'}"
    pid = f"pid {host['pid']}" if host.get("pid") is not None else "-"
    return [str(host.get("name")), str(host.get("holder")), state, seen, pid, held]


def _section(title: str, rows: list[list[str]]) -> list[str]:
    return [f"{title}: none"] if not rows else [f"{title}:", *table(rows, indent="  ")]


def _profile_row(profile_id: str, profile: Mapping[str, Any]) -> list[str]:
    state = profile.get("state", "?")
    if profile.get("missing"):
        detail = "needs " + ", ".join(profile["missing"])
    elif profile.get("errors"):
        detail = profile["errors"][0] + (
            f" (and {len(profile['errors']) - 1} more)" if len(profile["errors"]) > 1 else ""
        )
    else:
        count = profile.get("runtimes", 0)
        detail = f"{count} runtime{'' if count == 1 else 's'}" if state == "ready" else ""
    return [profile_id, state, detail]


def _channel_row(label: str, channel: Mapping[str, Any]) -> list[str]:
    error = f": {channel['error']}" if channel.get("error") else ""
    counts = f"restarts {channel.get('restarts', 0)}, errors {channel.get('errors', 0)}{error}"
    return [label, str(channel.get("state")), channel.get("sid") or "-", counts]


def _member_row(member: str, breaker: Mapping[str, Any]) -> list[str]:
    state = str(breaker.get("state"))
    failures = breaker.get("failures") or 0
    detail = f"{failures} failure{'' if failures == 1 else 's'} in a row" if failures else ""
    if breaker.get("last_error") and state != "closed":
        detail += f" ({breaker['last_error']})"
    return [member, state, detail]


def _provider_row(provider_id: str, provider: Mapping[str, Any], lane: Mapping[str, Any] | None) -> list[str]:
    tokens = provider.get("tokens", {})
    calls = f"{provider.get('calls', 0)} calls, {provider.get('failures', 0)} failed"
    calls += f", {tokens.get('input', 0):,} tokens in, {tokens.get('output', 0):,} out"
    if provider.get("error"):
        calls += f"; cannot start: {provider['error']}"
    queue = ""
    if lane is not None:
        waiting = lane.get("waiting_interactive", 0) + lane.get("waiting_background", 0)
        queue = f"{lane.get('in_flight', 0)} of {lane.get('max_concurrency', 0)} in flight, {waiting} waiting"
    return [provider_id, calls, queue]


def _http_line(http: Mapping[str, Any]) -> str:
    state = http.get("state", "off")
    if state == "off":
        return "http: off (set http.listen in ishiki.yaml to serve webhooks, /metrics and /readyz)"
    if state == "failed":
        return f"http: failed on {http.get('listen')}: {http.get('error')}"
    mounts = ", ".join(http.get("mounts", [])) or "nothing mounted"
    return f"http: {state} at {http.get('address')} ({mounts}), {http.get('served', 0)} requests served"


def _duration(seconds: float) -> str:
    whole = int(seconds)
    days, rest = divmod(whole, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [f"{days} d" if days else "", f"{hours} h" if hours else "", f"{minutes} min" if minutes else ""]
    shown = [p for p in parts if p][:2]
    return " ".join(shown) if shown else f"{secs} s"
