"""The Docker image's size, estimated without Docker: the venv its final stage holds, built here the same way.

The wheels of the host and every package are built as ``make dist`` builds them (``tools/build_dist.py``); a
fresh venv gets them and their dependencies from pip (pinned to the versions of the venv running this script,
as ``make wheels`` pins them), as the Dockerfile's build stage installs them into ``/opt/ishiki``. Its size
(the bytes of its files, each hard-linked file once, symlinks not followed: what a layer's tar holds) is
compared with a bare venv made in the same run (pip only, what any venv of the image would hold anyway).
The image adds the base, ``python:3.11-slim``, whose published size is ``SLIM_BASE_BYTES``: that figure is
quoted, not measured (there is no Docker engine here).

One run: a size is a level, not a timing. ``--quick`` changes nothing (the installs are the whole cost); pip
needs the package index (or its cache) for the dependencies.

    .venv/bin/python bench/image_size.py [--quick] [--runs N] [--json PATH] [--dir PATH]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from _report import Bench, run

REPO = Path(__file__).resolve().parent.parent
SLIM_BASE_BYTES = 125_000_000
"""The published size of ``python:3.11-slim`` (unpacked, about 125 MB): quoted, not measured."""
LARGEST = 8


def tree_bytes(root: Path) -> int:
    """The bytes of the files under ``root``, each inode once, symlinks not followed."""
    seen: set[tuple[int, int]] = set()
    total = 0
    for folder, _, files in os.walk(root):
        for name in files:
            info = os.lstat(os.path.join(folder, name))
            if (info.st_dev, info.st_ino) not in seen:
                seen.add((info.st_dev, info.st_ino))
                total += info.st_size
    return total


def checked(command: list[str], what: str) -> subprocess.CompletedProcess[str]:
    """Run ``command``; ``SystemExit`` naming ``what`` with the end of its output when it fails."""
    done = subprocess.run(command, capture_output=True, text=True, timeout=1800, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{what} exited {done.returncode}:\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    return done


def fresh_venv(path: Path) -> Path:
    """A new venv at ``path`` (with pip, as ``python -m venv`` makes it); its python."""
    checked([sys.executable, "-m", "venv", str(path)], "python -m venv")
    return path / "bin" / "python"


def pins(path: Path) -> Path:
    """The versions installed beside this script (editable installs left out), as a constraints file."""
    frozen = checked([sys.executable, "-m", "pip", "freeze", "--exclude-editable"], "pip freeze").stdout
    lines = [line for line in frozen.splitlines() if line and not line.startswith("#") and " @ " not in line]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def largest(site: Path) -> list[str]:
    """The biggest entries of ``site`` (site-packages), as ``name size`` texts."""
    sizes = [(tree_bytes(p) if p.is_dir() else p.lstat().st_size, p.name) for p in site.iterdir()]
    return [f"{name} {size / 1e6:.1f} MB" for size, name in sorted(sizes, reverse=True)[:LARGEST]]


def measure(bench: Bench) -> None:
    """Build, install, measure (see the module docstring)."""
    with tempfile.TemporaryDirectory(prefix="ishiki-image-", dir=bench.args.dir) as work:
        base = Path(work)
        checked([sys.executable, str(REPO / "tools" / "build_dist.py"), "--out", str(base / "dist")], "make dist")
        wheels = sorted(str(p) for p in (base / "dist").glob("*.whl"))
        bare = tree_bytes(fresh_venv(base / "bare").parent.parent)
        python = fresh_venv(base / "image")
        install = [str(python), "-m", "pip", "install", "--quiet", "--no-input", "--disable-pip-version-check"]
        checked([*install, "--constraint", str(pins(base / "pins.txt")), *wheels], "pip install the wheels")
        venv = tree_bytes(base / "image")
        site = next((base / "image" / "lib").glob("python*/site-packages"))
        bench.note(f"{len(wheels)} wheels; the biggest in site-packages: {', '.join(largest(site))}")
    bench.note(f"python:3.11-slim is quoted at its published {SLIM_BASE_BYTES / 1e6:.0f} MB, not measured")
    bare_venv = {"baseline": "a bare venv (pip only)", "baseline_samples": [bare]}
    bench.add("venv of the image (/opt/ishiki)", "B", [venv], **bare_venv)
    bench.add("estimated image: the venv + python:3.11-slim (quoted)", "B", [venv + SLIM_BASE_BYTES])


def arguments(parser: argparse.ArgumentParser) -> None:
    """``--dir``: where the wheels and the venvs are made (default: the temporary directory)."""
    parser.add_argument("--dir", default=None, help="where the wheels and venvs go (default: $TMPDIR)")


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark (see the module docstring)."""
    return run(measure, __doc__, argv, arguments=arguments)


if __name__ == "__main__":
    sys.exit(main())
