"""The Dockerfile, read as Docker would (there is no Docker engine here to build it): what it copies exists and
reaches the build through ``.dockerignore``, the image runs ``ishiki run /config`` as a user without privileges,
with the config and data directories as volumes, a health check, and SIGTERM to stop."""

from __future__ import annotations

import fnmatch
import json
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import pytest

REPO = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Instruction:
    """One instruction of a Dockerfile: its keyword (upper case) and the rest of its (joined) lines."""

    keyword: str
    args: str

    def words(self) -> list[str]:
        """The arguments: a JSON array (exec form) or shell words."""
        text = self.args.strip()
        if text.startswith("["):
            words: list[str] = json.loads(text)
            return words
        return shlex.split(text)


def instructions(text: str) -> list[Instruction]:
    """The instructions of a Dockerfile: comments dropped, ``\\`` continuations joined."""
    found: list[Instruction] = []
    pending = ""
    for line in text.splitlines():
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        whole = (pending + line).strip()
        pending = ""
        keyword, _, args = whole.partition(" ")
        found.append(Instruction(keyword.upper(), args.strip()))
    return found


def stages(found: list[Instruction]) -> list[list[Instruction]]:
    """The instructions of each stage, its ``FROM`` first."""
    result: list[list[Instruction]] = []
    for instruction in found:
        if instruction.keyword == "FROM":
            result.append([])
        if result:
            result[-1].append(instruction)
    return result


def options(words: list[str]) -> tuple[dict[str, str], list[str]]:
    """``--name=value`` options and the other words of a COPY."""
    flags = dict(w[2:].split("=", 1) for w in words if w.startswith("--"))
    return flags, [w for w in words if not w.startswith("--")]


def ignored(path: str, patterns: list[str]) -> bool:
    """Whether ``.dockerignore``'s ``patterns`` leave ``path`` out of the build context (the last match wins;
    a pattern matching a parent folder matches what is under it; ``**/`` matches at any depth)."""
    parts = PurePosixPath(path).parts
    windows = ["/".join(parts[i : j + 1]) for i in range(len(parts)) for j in range(i, len(parts))]
    prefixes = ["/".join(parts[: j + 1]) for j in range(len(parts))]
    result = False
    for raw in patterns:
        pattern = raw.lstrip("!")
        if pattern.startswith("**/"):
            hit = any(fnmatch.fnmatchcase(w, pattern[3:]) for w in windows)
        else:
            hit = any(fnmatch.fnmatchcase(p, pattern) for p in prefixes)
        if hit:
            result = not raw.startswith("!")
    return result


@pytest.fixture(scope="module")
def dockerfile() -> list[list[Instruction]]:
    return stages(instructions((REPO / "Dockerfile").read_text(encoding="utf-8")))


@pytest.fixture(scope="module")
def ignore_patterns() -> list[str]:
    lines = (REPO / ".dockerignore").read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]


def final(dockerfile: list[list[Instruction]], keyword: str) -> list[Instruction]:
    return [i for i in dockerfile[-1] if i.keyword == keyword]


def test_two_stages_on_the_same_slim_python(dockerfile: list[list[Instruction]]) -> None:
    text = (REPO / "Dockerfile").read_text(encoding="utf-8")
    args = [i.args for i in instructions(text) if i.keyword == "ARG"]
    assert args[0] in ("PYTHON_VERSION=3.11", "PYTHON_VERSION=3.12")
    assert args[1:] == ['PACKAGES="packages/*/"']  # every package unless the build says otherwise
    bases = [stage[0].words()[0] for stage in dockerfile]
    assert bases == ["python:${PYTHON_VERSION}-slim"] * 2  # the venv's python links into the base: the same one
    build_runs = " ".join(i.args for i in dockerfile[0] if i.keyword == "RUN")
    assert "pip wheel --no-deps --wheel-dir /wheels . ${PACKAGES} " in build_runs
    assert not [i for i in dockerfile[-1] if i.keyword == "RUN" and "pip" in i.args]  # no pip cache in the image


def test_every_copy_source_exists_and_reaches_the_build(
    dockerfile: list[list[Instruction]], ignore_patterns: list[str]
) -> None:
    copies = [options(i.words()) for stage in dockerfile for i in stage if i.keyword in ("COPY", "ADD")]
    from_context = [words[:-1] for flags, words in copies if "from" not in flags]
    sources = [source for group in from_context for source in group]
    assert sources, "the Dockerfile copies nothing from the checkout"
    for source in sources:
        assert (REPO / source).exists(), f"COPY {source}: no such file in the checkout"
        assert not ignored(source, ignore_patterns), f"COPY {source}: .dockerignore leaves it out"
    assert [words for flags, words in copies if "from" in flags] == [["/opt/ishiki", "/opt/ishiki"]]


def test_dockerignore_keeps_every_tracked_file_of_the_projects(ignore_patterns: list[str]) -> None:
    listed = subprocess.run(
        ["git", "ls-files", "ishiki_host", "packages"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.split()
    assert len(listed) > 100
    left_out = [path for path in listed if ignored(path, ignore_patterns)]
    assert left_out == []
    assert ignored(".venv/bin/python", ignore_patterns)
    assert ignored("packages/ishiki-ext-mcp/ishiki_ext_mcp.egg-info/PKG-INFO", ignore_patterns)
    assert ignored("ishiki_host/__pycache__/x.pyc", ignore_patterns)


def test_the_image_runs_ishiki_on_config_as_a_user_without_privileges(dockerfile: list[list[Instruction]]) -> None:
    (entry,) = final(dockerfile, "ENTRYPOINT")
    (command,) = final(dockerfile, "CMD")
    assert (entry.words(), command.words()) == (["ishiki"], ["run", "/config"])
    (user,) = final(dockerfile, "USER")
    assert user.words()[0].split(":")[0] not in ("root", "0")
    (volume,) = final(dockerfile, "VOLUME")
    assert volume.words() == ["/config", "/data"]
    env = " ".join(i.args for i in final(dockerfile, "ENV"))
    assert "ISHIKI_DATA_DIR=/data" in env
    assert "PATH=/opt/ishiki/bin:$PATH" in env
    (stop,) = final(dockerfile, "STOPSIGNAL")
    assert stop.args == "SIGTERM"


def test_the_health_check_runs_the_copied_script(dockerfile: list[list[Instruction]]) -> None:
    (check,) = final(dockerfile, "HEALTHCHECK")
    _, _, command = check.args.partition(" CMD ")
    assert json.loads(command) == ["python", "/opt/ishiki/healthcheck.py", "/config"]
    copies = [options(i.words())[1] for i in final(dockerfile, "COPY")]
    assert ["deploy/healthcheck.py", "/opt/ishiki/healthcheck.py"] in copies
