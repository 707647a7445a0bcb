"""Resource URLs and workspace paths cannot leave their roots: ``local://``, ``workspace://``, ``artifact://``,
``asset://`` and the workspace's file tools.

Each known way out is tried as a model would try it, through a real host (so trust and the tools' own checks
apply too): ``..`` plain and encoded, absolute paths, encoded separators, backslashes, NUL, a symlink to a
directory outside, a symlink to a file outside, a symlink loop, the host's own fact log, asset and artifact ids
with a path walked up from them; then the workspace's ``read_file``, ``list_files``, ``search_files``,
``write_file``, ``edit_file`` and ``delete_file`` with the same ways out. Every read of the outside is refused
(an error result naming a ``ResourceError`` code), nothing of the outside shows in any result or in the log,
and the outside directory is byte for byte what it was. The same host reads and writes inside its roots (so a
refusal is the roots' doing, not a tool missing or a trust level too low). ``tests/fuzz`` tries many more URLs.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import anyio
import pytest

from ishiki_host.testing import FakeOpenAIServer, RecordedRequest, Reply, ScriptedCall
from ishiki_host.testing.host_fixtures import MakeHost

pytestmark = pytest.mark.anyio

MARK = "OUTSIDE-MARK-7f3a"
# What the model asks for, matching MARK without spelling it (so MARK in the log can only come from the outside).
PATTERN, PIECE = "OUTSIDE-MARK-[0-9a-f]{4}", "MARK-7f"
CODES = ("invalid_resource_uri", "not_found", "unknown_scheme", "access_denied", "read_only", "not_a_file")
ESCAPES = [
    "local://../outside/secret.txt", "local://%2e%2e/outside/secret.txt", "local://a/%2E%2E/%2e%2e/outside",
    "local:///etc/passwd", "local://%2Fetc%2Fpasswd", "local://..%5C..%5Coutside", "local://dirlink/secret.txt",
    "local://dirlink", "local://filelink", "local://loop", "local://facts.jsonl", "local://FACTS.jsonl",
    "local://facts.jsonl.corrupt", "local://notes.txt%00.png", "local://notes.txt/../../outside",
    "workspace://root/../outside/secret.txt", "workspace://root/%2e%2e/outside", "workspace://root/dirlink",
    "workspace://root/dirlink/secret.txt", "workspace://root/filelink", "workspace://../outside",
    "workspace://root//etc/passwd", "workspace://nomount/secret.txt",
    "artifact://../outside/secret.txt", "artifact://%2e%2e/%2e%2e/outside", "asset://../../outside/secret.txt",
    "asset://%2e%2e/secret.txt", "file:///etc/passwd", "http://127.0.0.1:9/secret",
]  # fmt: skip
# Workspace paths out of the root; "{outside}" is the outside directory's absolute path.
WS_OUT = [
    "../outside/secret.txt", "{outside}/secret.txt", "dirlink/secret.txt", "filelink", "sub/../../outside/secret.txt",
    "workspace://root/../outside/secret.txt", "workspace://root/dirlink/secret.txt", "workspace://root/filelink",
    "loop",
]  # fmt: skip
WS_DIRS_OUT = ["..", "{outside}", "dirlink", "workspace://root/dirlink", "workspace://root/.."]
WS_NEW_OUT = ["../outside/new.txt", "{outside}/new.txt", "dirlink/new.txt", "workspace://root/dirlink/new.txt"]
INSIDE = [("read", {"url": "local://notes.txt"}), ("read", {"url": "workspace://root/inside.txt"}),
          ("read_file", {"path": "inside.txt"}), ("search_files", {"pattern": "inside-ws"})]  # fmt: skip
LINKS = ("filelink", "loop")  # deleting one of these deletes the link itself, inside the root: allowed
PROFILE = (
    "model: default\nchannels:\n  fake:bot: ['*']\ntrust:\n  owners: ['fake:1']\n"
    "extends:\n  workspace:\n    config: {root: '{root}'}\n"
)


def phases(outside: Path) -> list[list[tuple[str, dict[str, Any]]]]:
    """The calls of each step: reads and listings, then writes and edits, then deletes (one kind a step, so
    a delete cannot make a read of the same path fail for another reason)."""

    def out(path: str) -> str:
        return path.replace("{outside}", str(outside))

    reads = [("read", {"url": url}) for url in ESCAPES]
    reads += [("read_file", {"path": out(p)}) for p in WS_OUT]
    reads += [("search_files", {"pattern": PATTERN, "path": out(p)}) for p in WS_OUT + WS_DIRS_OUT]
    reads += [("list_files", {"path": out(p), "depth": 3}) for p in WS_DIRS_OUT]
    # The whole workspace, listed and searched: the links show as links, never what they lead to.
    reads += [("list_files", {"path": ".", "depth": 3}), ("search_files", {"pattern": PATTERN})]
    writes = [("write_file", {"path": out(p), "content": "PWNED"}) for p in WS_OUT + WS_NEW_OUT]
    writes += [("edit_file", {"path": out(p), "old": PIECE, "new": "PWNED"}) for p in WS_OUT]
    deletes = [("delete_file", {"path": out(p)}) for p in WS_OUT if p.rpartition("/")[2] not in LINKS]
    return [reads, writes, deletes]


def scripted(steps: list[list[tuple[str, dict[str, Any]]]]) -> Any:
    """The model: the calls of step n at the turn's n-th model call (the inside checks first), then ``finish``."""
    calls = [INSIDE + steps[0], *steps[1:]]

    def answer(request: RecordedRequest) -> Reply:
        step = sum(1 for m in request.json["messages"] if m["role"] == "assistant")
        if step >= len(calls):
            return Reply(tool_calls=(ScriptedCall("finish", {}),))
        return Reply(tool_calls=tuple(ScriptedCall(name, args) for name, args in calls[step]))

    return answer


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` (not following symlinks) with its bytes."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def text_of(result: dict[str, Any]) -> str:
    """The text of a tool result entry."""
    return "".join(p.get("text", "") for p in result["parts"])


async def test_no_url_or_path_leaves_its_root(
    make_host: MakeHost, fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    outside, workspace = tmp_path / "outside", tmp_path / "ws"
    (outside / "deeper").mkdir(parents=True)
    workspace.mkdir()
    (outside / "secret.txt").write_text(f"{MARK}\n", "utf-8")
    (outside / "deeper" / "more.txt").write_text(f"{MARK} again\n", "utf-8")
    (workspace / "inside.txt").write_text("inside-ws\n", "utf-8")
    (workspace / "sub").mkdir()
    before = snapshot(outside)
    steps = phases(outside)
    fake_openai.default = scripted(steps)
    th = make_host(profiles={"ana": PROFILE.replace("{root}", str(workspace))})
    async with th:
        runtime = await th.host.runtime_for("ana", "fake:bot", "private:1")
        for inside in (runtime.context.home, workspace):
            os.symlink(outside, inside / "dirlink")
            os.symlink(outside / "secret.txt", inside / "filelink")
            os.symlink(inside / "loop", inside / "loop")
        (runtime.context.home / "notes.txt").write_text("inside-home\n", "utf-8")
        delivery = await th.channel().say("read these", user_id="1")
        with anyio.fail_after(30):
            await delivery.settled()
        log = (runtime.context.home / "facts.jsonl").read_bytes()
    entries = [json.loads(line)["data"] for line in log.split(b"\n") if line]
    results = [e for e in entries if e.get("role") == "tool" and e.get("tool_name") != "finish"]
    calls = INSIDE + [call for step in steps for call in step]
    assert [r["tool_name"] for r in results] == [name for name, _ in calls]
    inside, outside_results = results[: len(INSIDE)], results[len(INSIDE) :]
    for (name, args), result in zip(INSIDE, inside, strict=True):
        assert not result.get("is_error"), f"{name} {args} inside its root failed: {text_of(result)}"
        assert "inside-" in text_of(result)
    for (name, args), result in zip(calls[len(INSIDE) :], outside_results, strict=True):
        text = text_of(result)
        assert MARK not in text, f"{name} {args} showed the outside: {text[:300]}"
        if name in ("list_files", "search_files") and not result.get("is_error"):
            assert "secret.txt" not in text, f"{name} {args} listed the outside: {text}"
            assert "more.txt" not in text, f"{name} {args} listed the outside: {text}"
            continue
        assert result.get("is_error"), f"{name} {args} was not refused: {text[:300]}"
        assert any(code in text for code in CODES), f"{name} {args}: no ResourceError code in {text[:300]}"
    assert MARK.encode() not in log
    assert snapshot(outside) == before
    assert os.readlink(workspace / "filelink") == str(outside / "secret.txt")
