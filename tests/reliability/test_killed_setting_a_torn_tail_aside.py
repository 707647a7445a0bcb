"""A host killed while it sets a torn tail aside has said so, or says so at its next start: never a silent repair.

Found by the crash harness (``test_crash_consistency``, WhatsApp, once in a full run: "no life after 17 warned
that it set a torn tail aside"). Opening a log copied the torn tail into ``facts.jsonl.corrupt``, cut it off the
log, fsynced, and only then logged the warning; a SIGKILL in those few milliseconds (a busy machine, many logs
opening at start while webhooks are confirmed) left the tail cut away and nothing in any host log. The warning
now goes out before the cut: a kill after the cut finds it already written, a kill before it leaves the tail in
place to be set aside (a second copy in ``.corrupt``) and announced again by the next open.
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest

from ishiki_host.core.factlog import FactLog

pytestmark = pytest.mark.anyio

CHILD = Path(__file__).parent / "children" / "kill_at_cut.py"
TORN = b'{"id": 3, "type": "message", "ts": 1700000000.0, "data": {"role": "assis'
WARNING = "set aside a torn tail of"


async def torn_log(path: Path) -> None:
    """A log of two entries and a torn third line."""
    async with await FactLog.open(path) as log:
        for text in ("one", "two"):
            await log.append("message", {"role": "user", "parts": [{"type": "text", "text": text}]})
    with path.open("ab") as out:
        out.write(TORN)


async def kill_at_cut(path: Path, moment: str, stderr: Path) -> None:
    """Open ``path`` in a child that stops at the cut (``before`` or ``after`` it) and SIGKILL it there."""
    with anyio.fail_after(30), stderr.open("wb") as err:
        command = [sys.executable, str(CHILD), str(path), moment]
        async with await anyio.open_process(command, stderr=err) as child:
            assert child.stdout is not None
            said = b""
            async for chunk in child.stdout:
                said += chunk
                if b"at cut" in said:
                    break
            child.kill()
            assert await child.wait() == -9


async def test_a_kill_right_after_the_cut_finds_the_warning_already_written(tmp_path: Path) -> None:
    path = tmp_path / "facts.jsonl"
    await torn_log(path)
    await kill_at_cut(path, "after", tmp_path / "child.log")
    assert WARNING in (tmp_path / "child.log").read_text()
    assert not path.read_bytes().endswith(TORN)  # the cut was made: no later open would warn of it
    assert path.with_name("facts.jsonl.corrupt").read_bytes().endswith(TORN + b"\n")
    async with await FactLog.open(path) as log:
        assert (log.warnings, log.last_id) == ([], 2)


async def test_a_kill_before_the_cut_leaves_the_tail_to_be_set_aside_and_announced_again(tmp_path: Path) -> None:
    path = tmp_path / "facts.jsonl"
    await torn_log(path)
    await kill_at_cut(path, "before", tmp_path / "child.log")
    assert WARNING in (tmp_path / "child.log").read_text()
    assert path.read_bytes().endswith(TORN)
    async with await FactLog.open(path) as log:
        (warning,) = log.warnings
        assert WARNING in warning
        assert log.last_id == 2
    assert path.with_name("facts.jsonl.corrupt").read_bytes().count(TORN) == 2  # once per open that copied it
