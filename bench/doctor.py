"""What ``ishiki doctor`` costs over ``ishiki check`` on the example config.

Times the real ``ishiki doctor DIR --json`` and ``ishiki check DIR --json`` commands on a copy of the example
config (the repository root), interleaved in every run: once with its model server up (the fake
OpenAI-compatible server in a process of its own, answering at once) and once with it down (a port nothing
listens on: the connection is refused at once). Doctor does all that check does, then probes each model,
checks each channel account, the ingress, the data dir, the lock and the clock; the ratio is what those cost.
No target: it is a command a person waits for, and this says how long.

    .venv/bin/python bench/doctor.py [--quick] [--runs N] [--json PATH]
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _fake_server import fake_model_process
from _report import Bench, run

REPO = Path(__file__).resolve().parent.parent


def copy_example(target: Path) -> Path:
    """A copy of the example config under ``target``."""
    target.mkdir()
    for name in ("ishiki.yaml", "models.yaml", "demo.rules.yaml"):
        shutil.copy(REPO / name, target / name)
    shutil.copytree(REPO / "profiles", target / "profiles")
    return target


def closed_port() -> int:
    """A port nothing listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def timed(ishiki: Path, command: str, root: Path, env: dict[str, str]) -> float:
    """Seconds one ``ishiki COMMAND ROOT --json`` takes (it must print its report)."""
    start = time.perf_counter()
    done = subprocess.run([str(ishiki), command, str(root), "--json"], capture_output=True, text=True, env=env)
    elapsed = time.perf_counter() - start
    if done.returncode not in (0, 1) or not done.stdout.startswith("{"):
        raise SystemExit(f"ishiki {command} failed on {root}: {done.stderr}")
    return elapsed


def measure(bench: Bench) -> None:
    """Check and doctor with the model up, then down, interleaved in each run (see the module docstring)."""
    runs = bench.runs(quick=3, full=9)
    ishiki = Path(sys.executable).parent / "ishiki"
    base = {k: v for k, v in os.environ.items() if k not in ("OPENAI_BASE_URL", "OPENAI_MODEL", "PYTHONPATH")}
    with tempfile.TemporaryDirectory() as tmp, fake_model_process() as url:
        root = copy_example(Path(tmp) / "example")
        cases = {
            "up": {**base, "OPENAI_BASE_URL": url, "OPENAI_MODEL": "fake-model"},
            "down": {**base, "OPENAI_BASE_URL": f"http://127.0.0.1:{closed_port()}/v1"},
        }
        for env in cases.values():  # warm the OS caches and the byte-code once
            timed(ishiki, "check", root, env)
            timed(ishiki, "doctor", root, env)
        samples: dict[str, list[float]] = {k: [] for k in ("check", "up", "down")}
        for _ in range(runs):
            samples["check"].append(timed(ishiki, "check", root, cases["up"]))
            samples["up"].append(timed(ishiki, "doctor", root, cases["up"]))
            samples["down"].append(timed(ishiki, "doctor", root, cases["down"]))
    check = samples["check"]
    bench.add("ishiki check, example config", "s", check)
    for case, words in (("up", "its model up"), ("down", "its model down")):
        bench.add(f"ishiki doctor, {words}", "s", samples[case], baseline="ishiki check", baseline_samples=check,
                  paired=True)  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark (see the module docstring)."""
    return run(measure, __doc__, argv)


if __name__ == "__main__":
    sys.exit(main())
