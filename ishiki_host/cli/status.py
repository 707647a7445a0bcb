"""``ishiki status [DIR] [--json]``: ask the host running DIR what it runs, and print it.

The host answers on its control socket, ``<data_dir>/ishiki.sock`` (``ishiki_host.observe.control`` says why a
socket: it works without ``http.listen``, answers at once and only to the user running the host). The report
is ``Host.status()`` with the process, each profile's missing services and errors, and the readiness that
``/readyz`` answers (``ishiki_host.host.report``); ``--json`` prints it whole.

Exit status: 0 with the report, 1 when no host answers for DIR (none runs; the pid file names a process that
is gone; a host that cannot be reached), 2 when DIR is not a config directory.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ishiki_host.cli._args import add_dir_argument, usable_dir
from ishiki_host.cli._output import print_json, table

__all__ = ["register", "render_status", "run"]


def register(subparsers: Any) -> None:
    """Add the ``status`` command."""
    parser = subparsers.add_parser(
        "status",
        help="show what a running host runs",
        description="Ask the host running DIR (through <data_dir>/ishiki.sock) for its profiles, channels, "
        "runtimes, models and readiness. Exit 1 when no host runs for DIR.",
    )
    add_dir_argument(parser)
    parser.add_argument("--json", action="store_true", help="print the whole report as JSON")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Ask the host of ``args.dir``; return the exit status."""
    from ishiki_host.config.host import load_host_config
    from ishiki_host.errors import HostNotAnswering
    from ishiki_host.observe.control import CONTROL_SOCKET, ask_host

    root = usable_dir("status", args.dir)
    if root is None:
        return 2
    data_dir = load_host_config(root)[0].data_dir
    try:
        report = ask_host(data_dir / CONTROL_SOCKET, "status")
    except HostNotAnswering as exc:
        print(f"ishiki status: {_why_not(root, data_dir, exc)}", file=sys.stderr)
        return 1
    if args.json:
        print_json(report)
    else:
        print("\n".join(render_status(report)))
    return 0


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
