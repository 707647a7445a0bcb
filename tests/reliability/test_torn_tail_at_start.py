"""A torn fact-log tail is set aside when the host starts, not whenever (if ever) that channel speaks again.

Found by the crash harness: a log that ended with the clean-stop marker and then got a torn line (a write cut
by a power loss, a damaged disk) was not opened at the next start, so the torn line stayed in the log, flagged
nowhere, until new input came to that runtime.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from ishiki_host.addresses.keys import RuntimeKey, runtime_dir
from ishiki_host.channels.inbound import inbound_message
from ishiki_host.core.factlog import FactLog
from ishiki_host.host.resume import needs_attention
from ishiki_host.runtime.tail import STOP_EVENT
from ishiki_host.testing import FakeConnection, profile_yaml
from ishiki_host.testing.host_fixtures import MakeHost

pytestmark = pytest.mark.anyio

TORN = b'{"id": 3, "type": "message", "ts": 1700000000.0, "data": {"role": "assis'


async def clean_log(path: Path) -> None:
    """A log that was answered and stopped cleanly."""
    event = FakeConnection(platform="fake", self_id="bot").event("hello")
    async with await FactLog.open(path) as log:
        await log.append("message", inbound_message(event, "trusted"))
        await log.append("event", {"name": STOP_EVENT, "reason": "shutdown"})


async def test_a_torn_or_unparseable_tail_needs_attention(tmp_path: Path) -> None:
    path = tmp_path / "facts.jsonl"
    await clean_log(path)
    assert not needs_attention(path)
    with path.open("ab") as out:
        out.write(TORN)
    assert needs_attention(path)  # a last line without its newline
    with path.open("ab") as out:
        out.write(b"\n")
    assert needs_attention(path)  # a whole last line that is not an entry
    with path.open("ab") as out:
        out.write(path.read_bytes().splitlines(keepends=True)[1])
    assert not needs_attention(path)  # a bad line in the middle is the reader's business, not a torn tail


async def test_the_host_sets_a_torn_tail_aside_at_start_without_new_input(
    make_host: MakeHost, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = tmp_path / "bot"
    home = runtime_dir(root / "data", RuntimeKey.for_channel("ana", "fake:bot", "private:1"))
    quiet = runtime_dir(root / "data", RuntimeKey.for_channel("ana", "fake:bot", "private:2"))
    await clean_log(home / "facts.jsonl")
    await clean_log(quiet / "facts.jsonl")
    before = (quiet / "facts.jsonl").read_bytes()
    with (home / "facts.jsonl").open("ab") as out:
        out.write(TORN)
    caplog.set_level(logging.WARNING)
    async with make_host(profiles={"ana": profile_yaml()}, root=root):
        pass  # leaving waits for the runtimes resumed at start
    assert (home / "facts.jsonl.corrupt").read_bytes().endswith(TORN + b"\n")
    assert TORN not in (home / "facts.jsonl").read_bytes()
    assert any("set aside a torn tail" in r.getMessage() and str(home) in r.getMessage() for r in caplog.records)
    assert (quiet / "facts.jsonl").read_bytes() == before  # a clean log is not touched
