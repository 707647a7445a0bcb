"""The lifeline between ``ishiki run --reload`` and the host it runs: the host stops when its supervisor is gone.

The supervisor opens a pipe (``open_lifeline``) and keeps its write end to itself; each child host inherits the
read end, whose number it finds in ``LIFELINE_ENV`` (``lifeline_env``). Nothing is ever written to the pipe, so
the read end turns readable only at end of file, which the kernel delivers once every write end is closed: when
the supervisor exits by any means, SIGKILL and the OOM killer included. The host then stops as on SIGTERM (its
turns drain), logging ``stopping: the --reload supervisor is gone`` (``watch_lifeline``, started by ``ishiki
run``). A host run without ``--reload`` has no ``LIFELINE_ENV`` and watches nothing.

Why a pipe, not Linux's ``PR_SET_PDEATHSIG``: a pipe works on every POSIX system (macOS too); the death signal
needs a ``preexec_fn`` (which ``subprocess`` warns is unsafe in a process that runs threads, as the supervisor
does) or a ``prctl`` in the child that races the parent's death, and it fires when the forking *thread* exits,
not the process. The pipe is a descriptor of its own: the child's stdin, stdout and stderr stay the
supervisor's, so the console works as before.
"""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Callable

import anyio
from anyio.abc import TaskStatus

__all__ = ["GONE", "LIFELINE_ENV", "lifeline_env", "open_lifeline", "watch_lifeline"]

LIFELINE_ENV = "ISHIKI_RELOAD_LIFELINE_FD"
"""The environment variable that names the inherited read end of the lifeline in a ``--reload`` child."""
GONE = "the --reload supervisor is gone"
"""The reason the host gives (``stopping: ...``) when the lifeline breaks."""

logger = logging.getLogger("ishiki_host.cli")


def open_lifeline() -> tuple[int, int]:
    """``(read end, write end)`` of a new lifeline; both close-on-exec (a child gets the read end through
    ``pass_fds`` only, and never the write end)."""
    return os.pipe()


def lifeline_env(read_end: int) -> dict[str, str]:
    """This process's environment plus ``LIFELINE_ENV`` naming ``read_end``, for a child host."""
    return {**os.environ, LIFELINE_ENV: str(read_end)}


async def watch_lifeline(
    request_stop: Callable[[str], None], *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED
) -> None:
    """Under ``--reload``: wait until the supervisor is gone, then ``request_stop(GONE)``. Without a lifeline it
    returns at once. ``LIFELINE_ENV`` is taken out of the environment before ``task_status.started()``, so no
    process the host starts afterwards believes it has a lifeline."""
    fd = _inherited()
    task_status.started()
    if fd is None:
        return
    try:
        await anyio.wait_readable(fd)
        while os.read(fd, 512):  # the supervisor writes nothing; should anything come, it is not the end yet
            await anyio.wait_readable(fd)
    finally:
        os.close(fd)
    request_stop(GONE)


def _inherited() -> int | None:
    """The read end named by ``LIFELINE_ENV`` (removed from the environment), ``None`` without one; a value that
    names no open pipe is logged and ignored (the host then runs as without ``--reload``)."""
    value = os.environ.pop(LIFELINE_ENV, None)
    if value is None:
        return None
    try:
        fd = int(value)
        if not stat.S_ISFIFO(os.fstat(fd).st_mode):
            raise ValueError("not a pipe")
    except (ValueError, OSError) as exc:
        logger.warning("%s=%r names no inherited pipe (%s); no supervisor is watched", LIFELINE_ENV, value, exc)
        return None
    os.set_inheritable(fd, False)
    return fd
