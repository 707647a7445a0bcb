"""Blocking file helpers for the built-in schemes (call them through ``anyio.to_thread``).

Writes are atomic (a temporary file beside the target, fsync, rename, fsync of the directory) so a crash never
leaves half a file where a reader expects a whole one.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import IO, Any

from ishiki_host.config.jsonio import load_json
from ishiki_host.errors import ConfigError, ResourceError

__all__ = ["TMP_PREFIX", "discard", "finish", "new_temp", "place", "read_json", "read_limited", "write_atomic"]

TMP_PREFIX = ".tmp-"


def _fsync_dir(directory: Path) -> None:
    if os.name != "posix":
        return
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def new_temp(directory: Path) -> tuple[Path, IO[bytes]]:
    """A new temporary file in ``directory`` (created with its parents), open for binary writing."""
    directory.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(dir=directory, prefix=TMP_PREFIX)
    return Path(name), os.fdopen(fd, "wb")


def finish(handle: IO[bytes]) -> None:
    """Flush, fsync and close a temporary file."""
    try:
        handle.flush()
        os.fsync(handle.fileno())
    finally:
        handle.close()


def place(temp: Path, target: Path) -> None:
    """Rename a finished temporary file over ``target`` and make the rename durable."""
    os.replace(temp, target)
    _fsync_dir(target.parent)


def discard(temp: Path, handle: IO[bytes]) -> None:
    """Close and remove a temporary file that will not be used."""
    handle.close()
    with contextlib.suppress(FileNotFoundError):
        temp.unlink()


def write_atomic(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically."""
    temp, handle = new_temp(path.parent)
    try:
        handle.write(data)
        finish(handle)
    except BaseException:
        discard(temp, handle)
        raise
    place(temp, path)


def read_limited(path: Path, limit: int, what: str) -> bytes:
    """The bytes of ``path``; ``too_large`` if over ``limit``, ``not_found`` if missing."""
    try:
        with path.open("rb") as handle:
            data = handle.read(limit + 1)
    except FileNotFoundError:
        raise ResourceError("not_found", f"{what} has no content on disk") from None
    if len(data) > limit:
        raise ResourceError("too_large", f"{what} is larger than {limit} bytes")
    return data


def read_json(path: Path) -> dict[str, Any] | None:
    """A JSON object file, or ``None`` when it does not exist."""
    if not path.exists():
        return None
    try:
        value = load_json(path, path.name, ConfigError).data
    except ConfigError as exc:
        raise ResourceError("read_failed", exc.message) from exc
    if not isinstance(value, dict):
        raise ResourceError("read_failed", f"{path.name} is not a JSON object")
    return value
