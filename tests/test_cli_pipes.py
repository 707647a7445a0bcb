"""Every ``ishiki`` command whose reader has gone (``ishiki check DIR | head``): no traceback, exit 141.

The pipe's read end is closed before the command starts, so its first write to stdout (or its last flush) meets
EPIPE whatever the machine's speed: the same as a ``head`` that has read its lines and left. Both buffering
modes run: block-buffered stdout (a user's shell) meets EPIPE at the last flush, ``PYTHONUNBUFFERED=1`` (set
in many container images) at the first write, where argparse (``--help``, ``--version``) and the console of
``ishiki run`` drop what they cannot write themselves and exit as usual.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from ishiki_host.cli import EPIPE_STATUS

EXAMPLE_FILES = ("ishiki.yaml", "models.yaml", "demo.rules.yaml")


@pytest.fixture
def example(tmp_path: Path, repo_root: Path) -> Path:
    """A copy of the repository's example config directory."""
    root = tmp_path / "example"
    root.mkdir()
    for name in EXAMPLE_FILES:
        shutil.copy(repo_root / name, root / name)
    shutil.copytree(repo_root / "profiles", root / "profiles")
    return root


HIDDEN = ("PYTHONPATH", "PYTHONUNBUFFERED", "OPENAI_API_KEY", "OPENAI_MODEL")


def run_into_a_closed_pipe(ishiki_bin: Path, *args: str, unbuffered: bool, stdin: str = "") -> tuple[int, str]:
    """Run ``ishiki args`` with stdout a pipe nobody reads any more; ``(exit status, stderr)``."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    env = {k: v for k, v in os.environ.items() if k not in HIDDEN}
    if unbuffered:
        env["PYTHONUNBUFFERED"] = "1"
    env["OPENAI_BASE_URL"] = "http://127.0.0.1:9/v1"  # nothing listens on the discard port: the demo answers
    try:
        done = subprocess.run(
            [str(ishiki_bin), *args],
            input=stdin.encode(),
            stdout=write_end,
            stderr=subprocess.PIPE,
            env=env,
            timeout=120,
            check=False,
        )
    finally:
        os.close(write_end)
    return done.returncode, done.stderr.decode(errors="replace")


@pytest.mark.parametrize(
    "args",
    [
        ["check", "{dir}"],
        ["check", "{dir}", "--json"],
        ["models", "{dir}"],
        ["models", "{dir}", "--json"],
        ["plugins"],
        ["plugins", "--json"],
        ["memory", "clear", "{dir}", "--yes"],
        ["init", "{dir}/fresh"],
        ["new", "plugin", "extension", "shout", "--dir", "{dir}/new"],
        ["--version"],
        ["--help"],
        ["check", "--help"],
    ],
)
@pytest.mark.parametrize("unbuffered", [False, True])
def test_a_command_whose_reader_left_exits_141_without_a_traceback(
    ishiki_bin: Path, example: Path, args: list[str], unbuffered: bool
) -> None:
    argv = [arg.replace("{dir}", str(example)) for arg in args]
    code, err = run_into_a_closed_pipe(ishiki_bin, *argv, unbuffered=unbuffered)
    argparse_own = "--help" in args or "--version" in args
    assert (code, err) == (0 if unbuffered and argparse_own else EPIPE_STATUS, "")


@pytest.mark.slow
@pytest.mark.parametrize("unbuffered", [False, True])
def test_a_run_whose_reader_left_serves_on_without_a_traceback(
    ishiki_bin: Path, example: Path, unbuffered: bool
) -> None:
    code, err = run_into_a_closed_pipe(
        ishiki_bin, "run", str(example), stdin="hello\nwho are you?\n", unbuffered=unbuffered
    )
    assert code == (0 if unbuffered else EPIPE_STATUS)
    assert "Traceback" not in err
    assert "Exception ignored" not in err
    assert "stopping: end of console input" in err  # it served both lines, then stopped as usual
