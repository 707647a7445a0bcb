"""``ishiki memory clear``, run as a real subprocess."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from ishiki_host.store import MemoryStore
from ishiki_host.store.db import connect, memory_db_files

ISHIKI = [sys.executable, "-m", "ishiki_host"]


def _ishiki(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run([*ISHIKI, *args], input=stdin, capture_output=True, text=True, timeout=60, check=False)


def _database(path: Path) -> list[Path]:
    """A real memory database with one row; returns its files."""
    conn = connect(path)
    conn.execute(
        "INSERT INTO memories (type, content, search_text, profile, runtime_key, created_at) "
        "VALUES ('fact', 'x', 'x', 'p', 'p/main', 0)"
    )
    conn.close()
    return memory_db_files(path)


def test_yes_deletes_every_file(tmp_path: Path) -> None:
    files = _database(tmp_path / "data" / "memory.db")
    result = _ishiki("memory", "clear", str(tmp_path), "--yes")
    assert result.returncode == 0, result.stderr
    assert not any(p.exists() for p in files)
    assert f"Deleted {files[0]}" in result.stdout


def test_it_asks_first(tmp_path: Path) -> None:
    files = _database(tmp_path / "data" / "memory.db")
    for answer in ("n\n", "", "maybe\n"):
        result = _ishiki("memory", "clear", str(tmp_path), stdin=answer)
        assert result.returncode == 1
        assert "Delete? [y/N]" in result.stdout
        assert "Nothing deleted." in result.stdout
        assert files[0].exists()
    result = _ishiki("memory", "clear", str(tmp_path), stdin="y\n")
    assert result.returncode == 0, result.stderr
    assert not files[0].exists()


def test_dir_defaults_to_the_current_directory(tmp_path: Path) -> None:
    files = _database(tmp_path / "data" / "memory.db")
    result = subprocess.run(
        [*ISHIKI, "memory", "clear", "-y"], cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    assert not files[0].exists()


def test_data_dir_comes_from_ishiki_yaml(tmp_path: Path) -> None:
    (tmp_path / "ishiki.yaml").write_text("log_level: info\ndata_dir: state/here\n", encoding="utf-8")
    decoy = _database(tmp_path / "data" / "memory.db")
    files = _database(tmp_path / "state" / "here" / "memory.db")
    result = _ishiki("memory", "clear", str(tmp_path), "--yes")
    assert result.returncode == 0, result.stderr
    assert not files[0].exists()
    assert decoy[0].exists()


def test_nothing_to_delete(tmp_path: Path) -> None:
    result = _ishiki("memory", "clear", str(tmp_path), "--yes")
    assert result.returncode == 0
    assert "nothing to delete" in result.stdout


@pytest.mark.parametrize(
    ("yaml_text", "message"),
    [
        ("data_dir: [1, 2\n", "ishiki.yaml:2: invalid YAML"),
        ("data_dir: " + "[" * 600 + "]" * 600 + "\n", "ishiki.yaml:1: nested deeper than 64 levels"),
        ("data_dir: &a [*a]\n", "ishiki.yaml:1: alias '*a' refers to itself"),
        ("log_level: info\ndata_dir: 42\n", "ishiki.yaml:2: data_dir: must be a directory path, got 42"),
        ("- a list\n", "ishiki.yaml:1: must be a mapping of settings"),
    ],
)
def test_a_bad_ishiki_yaml_is_a_clear_error(tmp_path: Path, yaml_text: str, message: str) -> None:
    (tmp_path / "ishiki.yaml").write_text(yaml_text, encoding="utf-8")
    result = _ishiki("memory", "clear", str(tmp_path), "--yes")
    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_a_missing_dir_is_a_clear_error(tmp_path: Path) -> None:
    result = _ishiki("memory", "clear", str(tmp_path / "nope"), "--yes")
    assert result.returncode == 2
    assert "nope: not a directory" in result.stderr


@pytest.mark.anyio
async def test_a_database_in_use_is_not_deleted(tmp_path: Path) -> None:
    path = tmp_path / "data" / "memory.db"
    async with await MemoryStore.open(path) as store:
        await store.memories.add("fact", "still needed", profile="p", runtime_key="p/main")
        result = await anyio.run_process([*ISHIKI, "memory", "clear", str(tmp_path), "--yes"], check=False)
        assert result.returncode == 1
        assert "in use by a running host" in result.stderr.decode()
        assert await store.memories.count("p") == 1
    assert path.exists()


def test_wal_files_are_deleted_too_and_a_corrupt_file_can_be_cleared(tmp_path: Path) -> None:
    path = tmp_path / "data" / "memory.db"
    path.parent.mkdir()
    path.write_bytes(b"garbage" * 100)
    (path.parent / "memory.db-wal").write_bytes(b"stale")
    result = _ishiki("memory", "clear", str(tmp_path), "--yes")
    assert result.returncode == 0, result.stderr
    assert list(path.parent.iterdir()) == []


def test_help_without_an_action() -> None:
    result = _ishiki("memory")
    assert result.returncode == 2
    assert "clear" in result.stderr
