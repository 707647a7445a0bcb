"""``ishiki service install [DIR] [--user] [--print]``: a systemd unit that runs ``ishiki run DIR``.

The unit runs this interpreter's ``ishiki`` (the venv the command runs from) on the absolute DIR, in DIR:
``Restart=on-failure`` (exit 1: a failed start; exit 2, not a config directory, is not retried),
``KillSignal=SIGTERM`` (a clean stop: running turns get ``shutdown_grace_seconds`` of ishiki.yaml, then the
runtimes close), ``TimeoutStopSec`` that grace plus ``STOP_MARGIN_SECONDS`` (closing the runtimes, channels and
stores after the grace), ``ExecReload`` sending SIGHUP (the host reloads its config) and the variables of
``DIR/ishiki.env`` when that file exists (the secrets ``${VAR}`` in the config reads).

A system unit (``/etc/systemd/system``) runs as the owner of DIR (``--as-user`` names another) with a few
sandboxing settings; a ``--user`` unit goes to ``$XDG_CONFIG_HOME/systemd/user`` (``~/.config/...``).
``--unit-dir`` writes elsewhere. ``--print`` prints the unit on stdout and writes nothing. The command never
runs ``systemctl``: it prints the commands that enable and start the unit.

Exit status: 0 when written (or unchanged, or printed), 1 when the file cannot be written or another unit of
that name exists (``--force`` replaces it), 2 when DIR is not a config directory or a name is unusable.
"""

from __future__ import annotations

import argparse
import math
import os
import pwd
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ishiki_host.cli._args import add_dir_argument, usable_dir

__all__ = ["ENV_FILE", "STOP_MARGIN_SECONDS", "UnitSpec", "register", "render_unit", "run", "unit_directory"]

STOP_MARGIN_SECONDS = 30
"""Seconds ``TimeoutStopSec`` adds to the shutdown grace: after the grace the host still closes its runtimes
(fact logs flushed), channels and stores, which systemd must not cut short with SIGKILL."""
ENV_FILE = "ishiki.env"
"""The file of DIR (``NAME=value`` lines) whose variables the unit passes to the host, when it exists."""
SYSTEM_UNIT_DIR = Path("/etc/systemd/system")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.@-]*")
_SAFE_PATH = re.compile(r"/[A-Za-z0-9/._@+:,=~-]*")


@dataclass(frozen=True, slots=True)
class UnitSpec:
    """What a unit file says: the config dir, the command, the stop timeout; ``user`` is ``None`` for a user
    unit (it runs as the user whose systemd runs it)."""

    config_dir: Path
    executable: Path
    stop_timeout_seconds: int
    user: str | None


def register(subparsers: Any) -> None:
    """Add the ``service`` command and its ``install`` subcommand."""
    parser = subparsers.add_parser(
        "service",
        help="write a systemd unit for a config directory",
        description="Write a systemd unit that runs `ishiki run DIR` with this interpreter.",
    )
    parser.set_defaults(handler=lambda _args: _usage(parser))
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    install = actions.add_parser(
        "install",
        help="write the unit (or print it)",
        description="Write NAME.service for DIR: Restart=on-failure, SIGTERM stops it cleanly, `systemctl reload` "
        "sends SIGHUP, DIR/ishiki.env holds the secrets. Prints the systemctl commands to run; runs none.",
    )
    add_dir_argument(install)
    install.add_argument("--user", action="store_true", help="a user unit (~/.config/systemd/user), not a system one")
    install.add_argument("--print", action="store_true", help="print the unit on stdout; write nothing")
    install.add_argument("--name", default="ishiki", help="the unit's name, without .service (default: ishiki)")
    install.add_argument("--unit-dir", metavar="PATH", help="write the unit here instead of systemd's directory")
    install.add_argument("--as-user", metavar="USER", help="the account a system unit runs as (default: DIR's owner)")
    install.add_argument("--force", action="store_true", help="replace a different unit of the same name")
    install.set_defaults(handler=run)


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help(sys.stderr)
    return 2


def render_unit(spec: UnitSpec) -> str:
    """The text of the unit file for ``spec``."""
    root = str(spec.config_dir)
    lines = [
        "# Written by `ishiki service install`; see docs/deploy.md.",
        "[Unit]",
        f"Description=Ishiki Host ({spec.config_dir})",
        "Wants=network-online.target",
        "After=network-online.target",
        "",
        "[Service]",
        "Type=simple",
        f"WorkingDirectory={root}",
        f"EnvironmentFile=-{spec.config_dir / ENV_FILE}",
        f"ExecStart={spec.executable} run {root}",
        "ExecReload=/bin/kill -HUP $MAINPID",
        "KillSignal=SIGTERM",
        "KillMode=mixed",
        f"TimeoutStopSec={spec.stop_timeout_seconds}",
        "Restart=on-failure",
        "RestartSec=5",
        "RestartPreventExitStatus=2",
    ]
    if spec.user is not None:
        lines += [f"User={spec.user}", "NoNewPrivileges=yes", "PrivateTmp=yes", "ProtectSystem=full"]
    lines += ["", "[Install]", f"WantedBy={'multi-user.target' if spec.user is not None else 'default.target'}"]
    return "\n".join(lines) + "\n"


def _unit_safe(path: Path) -> bool:
    """Whether ``path`` can stand in a unit file as it is: no space, quote, ``$`` or ``%`` for systemd to read
    as a separator, a variable or a specifier."""
    return _SAFE_PATH.fullmatch(str(path)) is not None


def unit_directory(user: bool, environ: dict[str, str] | None = None) -> Path:
    """Where systemd reads units: ``/etc/systemd/system``, or the user's ``$XDG_CONFIG_HOME/systemd/user``."""
    if not user:
        return SYSTEM_UNIT_DIR
    env = os.environ if environ is None else environ
    config_home = env.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(config_home) / "systemd" / "user"


def run(args: argparse.Namespace) -> int:
    """Write or print the unit of ``args.dir``; return the exit status."""
    found = usable_dir("service install", args.dir)
    if found is None:
        return 2
    if not _NAME.fullmatch(args.name):
        print(f"ishiki service install: --name {args.name!r} is no unit name (letters, digits, _.@-)", file=sys.stderr)
        return 2
    spec = _spec(found.resolve(), args)
    if spec is None:
        return 2
    text = render_unit(spec)
    unit = f"{args.name}.service"
    if args.print:
        sys.stdout.write(text)
        where = unit_directory(args.user) / unit if args.unit_dir is None else Path(args.unit_dir) / unit
        print(f"ishiki service install: save it as {where}, then:", file=sys.stderr)
        for line in _next_steps(unit, args.user):
            print(f"  {line}", file=sys.stderr)
        return 0
    target = (unit_directory(args.user) if args.unit_dir is None else Path(args.unit_dir)) / unit
    return _write(target, text, args)


def _spec(root: Path, args: argparse.Namespace) -> UnitSpec | None:
    from ishiki_host.config.host import load_host_config

    grace = load_host_config(root)[0].shutdown_grace_seconds
    user: str | None = None
    if not args.user:
        user = args.as_user or _owner(root)
        if user is None:
            print(f"ishiki service install: {root} has no named owner: say --as-user USER", file=sys.stderr)
            return None
    spec = UnitSpec(root, _executable(), math.ceil(grace) + STOP_MARGIN_SECONDS, user)
    for path in (spec.config_dir, spec.executable):
        if not _unit_safe(path):
            print(
                f"ishiki service install: {path} holds a space, quote, $ or %, which a unit file would misread; "
                "use a path without them (or edit deploy/ishiki.service by hand)",
                file=sys.stderr,
            )
            return None
    return spec


def _owner(path: Path) -> str | None:
    try:
        return pwd.getpwuid(path.stat().st_uid).pw_name
    except KeyError:
        return None


def _executable() -> Path:
    """This venv's ``ishiki`` script. The interpreter's path is kept as it is (not resolved): a venv's python is
    a symlink to the base interpreter, which would run outside the venv."""
    script = Path(os.path.abspath(sys.executable)).parent / "ishiki"
    if script.exists():
        return script
    raise SystemExit(f"ishiki service install: {script} is missing; run it with the ishiki of the venv to use")


def _write(target: Path, text: str, args: argparse.Namespace) -> int:
    old = target.read_text(encoding="utf-8") if target.is_file() else None
    if old == text:
        print(f"{target} is up to date")
    elif old is not None and not args.force:
        print(f"ishiki service install: {target} exists and differs; --force replaces it", file=sys.stderr)
        return 1
    else:
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        except OSError as exc:
            hint = "" if args.user else " (a system unit needs root: sudo, or --user)"
            print(f"ishiki service install: cannot write {target}: {exc.strerror}{hint}", file=sys.stderr)
            return 1
        print(f"wrote {target}")
    print("now run:")
    for line in _next_steps(target.name, args.user):
        print(f"  {line}")
    return 0


def _next_steps(unit: str, user: bool) -> list[str]:
    """The commands that load, enable and start ``unit``, and follow its logs."""
    if user:
        steps = [
            ("systemctl --user daemon-reload", ""),
            (f"systemctl --user enable --now {unit}", ""),
            (f"journalctl --user -u {unit} -f", "its logs"),
            ('loginctl enable-linger "$USER"', "keeps it running while you are logged out"),
        ]
    else:
        steps = [
            ("sudo systemctl daemon-reload", ""),
            (f"sudo systemctl enable --now {unit}", ""),
            (f"journalctl -u {unit} -f", "its logs"),
        ]
    width = max(len(command) for command, _ in steps) + 2
    return [f"{command:<{width}}# {why}" if why else command for command, why in steps]
