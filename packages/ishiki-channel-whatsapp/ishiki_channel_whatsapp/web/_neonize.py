"""neonize, imported through here: what its import does to the process is undone at once.

Importing neonize (any part of it: ``neonize/__init__`` imports its client) loads its Go core, whose runtime
starts its own threads, and starts a daemon thread that forwards whatsmeow's log lines to ``logging``. Two more
things it does are not left to stand:

- it runs ``uname -a`` with ``os.popen`` and never closes the pipe, so the child would be reaped by whatever code
  next starts a subprocess, with a ``ResourceWarning`` there; for the import, ``os.popen`` gives the output read
  whole, the pipe closed and the child waited for;
- it calls ``logging.basicConfig``, which gives the root logger neonize's handler and the INFO level when it had
  no handler yet; both are put back, so the host's logging stays the host's.

neonize's warning that ffmpeg is missing is quieted too: only neonize's own message builders need ffmpeg, and
this package builds its messages without them (``protos``). Only modules that need neonize import this one (the
client module, ``protos``, the test kit), and only when a ``web`` account runs or a test asks: the cloud
backend never loads the Go core.
"""

from __future__ import annotations

import io
import logging
import os
from typing import Any
from unittest import mock

_handlers, _level = list(logging.root.handlers), logging.root.level
_popen = os.popen


def _popen_closed(command: str, mode: str = "r", buffering: int = -1) -> Any:
    """``os.popen``'s output, read whole with the pipe closed and the child waited for."""
    with _popen(command, mode, buffering) as pipe:
        return io.StringIO(pipe.read())


with mock.patch("os.popen", _popen_closed):
    from neonize.aioze import client as aioze
    from neonize.exc import NeonizeError
    from neonize.proto import Neonize_pb2 as neo
    from neonize.proto.waCommon import WACommon_pb2 as common
    from neonize.proto.waCompanionReg.WAWebProtobufsCompanionReg_pb2 import DeviceProps
    from neonize.proto.waE2E import WAWebProtobufsE2E_pb2 as e2e
    from neonize.utils import enum

for _handler in logging.root.handlers:
    if _handler not in _handlers:
        logging.root.removeHandler(_handler)
        logging.root.setLevel(_level)
logging.getLogger("neonize.utils.ffmpeg").setLevel(logging.ERROR)

__all__ = ["DeviceProps", "NeonizeError", "aioze", "common", "e2e", "enum", "neo"]
