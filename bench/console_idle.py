"""The console's CPU while idle: ``ishiki run`` with its prompt on a terminal, against the same host on a pipe.

Two real ``ishiki run`` processes on one config (a profile claiming only the console; its model a port nothing
listens on, never called): one with stdin and stdout on a pty (the prompt_toolkit prompt, its history and
completion), one with stdin a pipe nobody writes to (the piped console, its reader blocked). Once both are up
they are left alone for the same seconds, side by side, and the CPU time each used meanwhile is read from
``/proc/<pid>/task/*/schedstat``, in microseconds of CPU per second of wall time (1000 µs/s would be 0.1 %
of a core). The host's own idle work (its reaper, the config
watcher) is in both; the ratio is what the prompt adds while no turn runs. Target: ~1 (the prompt sleeps
on its terminal while idle: no refresh timer runs).

    .venv/bin/python bench/console_idle.py [--quick] [--runs N] [--json PATH]
"""

from __future__ import annotations

import os
import pty
import select
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _report import Bench, run

from ishiki_host.testing.host import write_config

PROFILE = "model: default\nchannels:\n  console:local: ['*']\nsession: {summarizer: off}\n"
HOST = "reload_interval_seconds: 2\n"


def closed_port() -> int:
    """A port nothing listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def models(port: int) -> str:
    """A models.yaml whose one model no one answers for (it is never called: nobody types)."""
    return (
        f"providers:\n  off:\n    api: openai-completions\n    base_url: http://127.0.0.1:{port}/v1\n"
        "    models:\n      - id: idle\ngroups:\n  default:\n    models: [off:idle]\n"
    )


def thread_cpu(pid: int) -> dict[str, int]:
    """The CPU time of each thread of process ``pid`` so far, in ns: the scheduler's own count
    (``/proc/<pid>/task/*/schedstat``), far finer than the 10 ms ticks of ``/proc/<pid>/stat``."""
    times = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            times[task.name] = int((task / "schedstat").read_text().split()[0])
        except (FileNotFoundError, ProcessLookupError):  # a thread that ended meanwhile
            continue
    return times


def cpu_between(before: dict[str, int], after: dict[str, int]) -> float:
    """Seconds of CPU the threads alive at ``after`` used since ``before`` (a thread that ended in between
    is left out: its count went with it)."""
    return sum(ns - before.get(tid, 0) for tid, ns in after.items()) / 1e9


def wait_for(fd: int, marker: bytes, timeout: float = 60.0) -> None:
    """Read ``fd`` until ``marker`` shows (``SystemExit`` when it does not in time)."""
    seen, deadline = b"", time.monotonic() + timeout
    while marker not in seen:
        ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            raise SystemExit(f"{marker!r} did not show within {timeout:g} s; got {seen[-500:]!r}")
        seen += os.read(fd, 65536)


def idle_pair(ishiki: Path, root: Path, seconds: float) -> tuple[float, float]:
    """Start both hosts, let them idle ``seconds`` side by side; their CPU µs per second (terminal, pipe)."""
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_BASE_URL", "OPENAI_MODEL", "PYTHONPATH")}
    env["PROMPT_TOOLKIT_NO_CPR"] = "1"  # a bare pty has no terminal emulator to answer cursor position requests
    main, child = pty.openpty()
    command = [str(ishiki), "run", str(root)]
    on_tty = subprocess.Popen(command, stdin=child, stdout=child, stderr=subprocess.PIPE, env=env)
    os.close(child)
    piped_root = root.parent / f"{root.name}-piped"  # its own data dir: one host per config dir
    if not piped_root.exists():
        write_config(piped_root, profiles={"ana": PROFILE}, models=models(closed_port()), host=HOST)
    piped = subprocess.Popen(
        [str(ishiki), "run", str(piped_root)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, env=env,
    )  # fmt: skip
    try:
        wait_for(main, "› ".encode())
        assert on_tty.stderr is not None
        assert piped.stderr is not None
        wait_for(on_tty.stderr.fileno(), b"channel console is up")
        wait_for(piped.stderr.fileno(), b"channel console is up")
        time.sleep(1.0)  # start-up's own work (the first reload poll, the heartbeat sync) is not idleness
        before = (thread_cpu(on_tty.pid), thread_cpu(piped.pid), time.monotonic())
        time.sleep(seconds)  # the measurement itself: both hosts idle
        after = (thread_cpu(on_tty.pid), thread_cpu(piped.pid), time.monotonic())
    finally:
        for process in (on_tty, piped):
            process.kill()
            process.communicate(timeout=30)
        os.close(main)
    wall = after[2] - before[2]
    return 1e6 * cpu_between(before[0], after[0]) / wall, 1e6 * cpu_between(before[1], after[1]) / wall


def measure(bench: Bench) -> None:
    """Idle pairs of hosts, one run each (see the module docstring)."""
    runs = bench.runs(quick=1, full=3)
    seconds = 4.0 if bench.quick else 10.0
    ishiki = Path(sys.executable).parent / "ishiki"
    terminal: list[float] = []
    piped: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        root = write_config(Path(tmp) / "bot", profiles={"ana": PROFILE}, models=models(closed_port()), host=HOST)
        for _ in range(runs):
            on_tty, on_pipe = idle_pair(ishiki, root, seconds)
            terminal.append(on_tty)
            piped.append(on_pipe)
    bench.note(f"{seconds:g} s idle per run; CPU time of every thread, from /proc/<pid>/task/*/schedstat")
    bench.add("console on a terminal, idle", "µs/s", terminal, baseline="the same host, piped", baseline_samples=piped,
              paired=True, target="~1")  # fmt: skip
    bench.add("the same host, piped, idle", "µs/s", piped)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark (see the module docstring)."""
    return run(measure, __doc__, argv)


if __name__ == "__main__":
    sys.exit(main())
