"""``ishiki pairing list [DIR]``, ``ishiki pairing approve CODE [DIR] [--level LEVEL]`` and ``ishiki pairing
revoke SENDER [DIR] --profile P``: DM pairing.

A profile with ``trust.unlisted: pairing`` gives an unlisted sender who writes in a direct chat a short code
and nothing else. ``list`` shows the open requests (code, profile, sender, where they asked, until when the
code holds) and the senders approved so far; ``approve`` lists the sender of a code at ``--level``
(``untrusted`` by default, or ``trusted`` or ``owner``) for the profile they asked; ``revoke`` removes the
approval of SENDER (``platform:userId``) for profile P. All read and write the memory database of DIR
(``store.repos.pairing``) and work while a host runs: the running host sees an approval at the sender's next
message, welcomes them, and serves them at that level; after a revocation it refuses their next message (a
direct one gets a new code).

Exit status: 0 when done, 1 when the code is wrong (``no pending request with code X``), expired (``code X
expired at ...``), there is no such approval (``S is not approved for profile P``) or the database cannot be
used, 2 when DIR is not a config directory.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ishiki_host.cli._args import add_dir_argument, usable_dir
from ishiki_host.cli._output import print_json, table

if TYPE_CHECKING:
    from ishiki_host.core.tools import TrustLevel
    from ishiki_host.store.repos.pairing import PairedSender, PairingRequest

__all__ = ["register"]

LEVELS = ("untrusted", "trusted", "owner")


def register(subparsers: Any) -> None:
    """Add ``pairing`` and its ``list``, ``approve`` and ``revoke`` actions to the ``ishiki`` parser."""
    parser = subparsers.add_parser(
        "pairing",
        help="list, approve and revoke DM pairing requests",
        description="List and approve the pairing requests of unlisted senders (profiles with "
        "trust.unlisted: pairing), and revoke an approval.",
    )
    actions = parser.add_subparsers(dest="pairing_action", metavar="ACTION")
    listing = actions.add_parser("list", help="the open pairing requests and the approved senders")
    add_dir_argument(listing)
    listing.add_argument("--json", action="store_true", help="print them as JSON")
    listing.set_defaults(pairing_handler=_list)
    approve = actions.add_parser("approve", help="let the sender of a pairing code in")
    approve.add_argument("code", metavar="CODE", help="the code the sender was given")
    add_dir_argument(approve)
    approve.add_argument(
        "--level", choices=LEVELS, default="untrusted", help="the sender's trust level (default: untrusted)"
    )
    approve.set_defaults(pairing_handler=_approve)
    revoke = actions.add_parser("revoke", help="remove a sender's approval: the host refuses them again")
    revoke.add_argument("sender", metavar="SENDER", help="the approved sender, platform:userId (telegram:99)")
    add_dir_argument(revoke)
    revoke.add_argument("--profile", required=True, help="the profile the sender was approved for")
    revoke.set_defaults(pairing_handler=_revoke)
    parser.set_defaults(handler=lambda args: _run(parser, args))


def _run(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    handler = getattr(args, "pairing_handler", None)
    if handler is None:
        parser.print_help(sys.stderr)
        return 2
    code: int = handler(args)
    return code


def _database(dir_arg: str) -> Path | None:
    from ishiki_host.config.host import load_host_config
    from ishiki_host.store.db import memory_db_path

    root = usable_dir("pairing", dir_arg)
    return None if root is None else memory_db_path(load_host_config(root)[0].data_dir)


def _list(args: argparse.Namespace) -> int:
    import anyio

    from ishiki_host.errors import StoreError

    db = _database(args.dir)
    if db is None:
        return 2
    if not db.exists():
        requests: list[PairingRequest] = []
        approved: list[PairedSender] = []
    else:
        try:
            requests, approved = anyio.run(_read, db)
        except StoreError as exc:
            return _fail(str(exc))
    if args.json:
        print_json({"requests": [r.to_json() for r in requests], "approved": [p.to_json() for p in approved]})
    else:
        print("\n".join(_render(requests, approved)))
    return 0


def _approve(args: argparse.Namespace) -> int:
    import anyio

    from ishiki_host.errors import StoreError
    from ishiki_host.store.repos.pairing import normalize_code

    db = _database(args.dir)
    if db is None:
        return 2
    if not db.exists():
        return _fail(f"no pending request with code {normalize_code(args.code)}")
    try:
        paired = anyio.run(_write, db, args.code, args.level)
    except StoreError as exc:  # PairingCodeError included: its message says which code and why
        return _fail(str(exc))
    print(f"Approved {paired.sender} for profile {paired.profile} as {paired.level} (code {paired.code}).")
    print("They are served from their next message; the host welcomes them then.")
    return 0


def _revoke(args: argparse.Namespace) -> int:
    import anyio

    from ishiki_host.errors import StoreError

    db = _database(args.dir)
    if db is None:
        return 2
    try:
        removed = anyio.run(_remove, db, args.profile, args.sender) if db.exists() else None
    except StoreError as exc:
        return _fail(str(exc))
    if removed is None:
        return _fail(f"{args.sender} is not approved for profile {args.profile} (ishiki pairing list shows who is)")
    print(f"Revoked {removed.sender} for profile {removed.profile} (was {removed.level}).")
    print("The host refuses them from their next message; in a direct chat they get a new pairing code.")
    return 0


async def _read(db: Path) -> tuple[list[PairingRequest], list[PairedSender]]:
    from ishiki_host.store.memory_store import MemoryStore

    async with await MemoryStore.open(db, check=False) as store:  # the full check is `ishiki check`'s
        return await store.pairing.requests(), await store.pairing.all_approved()


async def _write(db: Path, code: str, level: TrustLevel) -> PairedSender:
    from ishiki_host.store.memory_store import MemoryStore

    async with await MemoryStore.open(db, check=False) as store:
        return await store.pairing.approve(code, level)


async def _remove(db: Path, profile: str, sender: str) -> PairedSender | None:
    from ishiki_host.store.memory_store import MemoryStore

    async with await MemoryStore.open(db, check=False) as store:
        return await store.pairing.revoke(profile, sender)


def _render(requests: list[PairingRequest], approved: list[PairedSender]) -> list[str]:
    from ishiki_host.store.repos.pairing import format_time

    lines = ["Pending pairing requests:" if requests else "No pending pairing requests."]
    rows = [["CODE", "PROFILE", "SENDER", "NAME", "WHERE", "EXPIRES"]]
    rows += [[r.code, r.profile, r.sender, r.name or "-", r.channel, format_time(r.expires_at)] for r in requests]
    lines += table(rows, indent="  ") if requests else []
    if approved:
        lines.append("Approved senders:")
        rows = [["PROFILE", "SENDER", "LEVEL", "APPROVED"]]
        rows += [[p.profile, p.sender, p.level, format_time(p.approved_at)] for p in approved]
        lines += table(rows, indent="  ")
    if requests:
        lines.append("Approve one with: ishiki pairing approve CODE [DIR] [--level trusted]")
    if approved:
        lines.append("Revoke one with: ishiki pairing revoke SENDER [DIR] --profile PROFILE")
    return lines


def _fail(message: str) -> int:
    print(f"ishiki pairing: {message}", file=sys.stderr)
    return 1
