"""A SIGTERM or SIGINT while ``ishiki run`` starts is a clean stop, never the default action (issue 20, item 21).

Before, Python's default SIGTERM action killed a host that was still loading its config or importing plugins
(a busy machine takes a while there): exit -15, whatever it was writing torn. The start is held, with no timing
involved, by a plugin whose import waits on a FIFO the test controls.
"""

from __future__ import annotations

import os
import select
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ishiki_host.testing import FakeOpenAIServer, profile_yaml, write_config
from ishiki_host.testing.host import models_yaml

StartIshiki = Callable[..., Any]  # the ``start_ishiki`` fixture of conftest.py

pytestmark = pytest.mark.slow

PLUGIN = '''\
"""Holds the import until the test opens the "go" FIFO; says it got here by opening the "ready" one."""
import os

with open(os.environ["HOLD_READY"], "w") as ready:
    ready.write("importing\\n")
with open(os.environ["HOLD_GO"]) as go:
    go.readline()

from ishiki_host import Extension


class Held(Extension):
    """Nothing: only its import matters."""
'''


def held_site(tmp_path: Path) -> Path:
    """A plugin distribution whose extension ``held`` blocks its own import (see ``PLUGIN``)."""
    site = tmp_path / "held-site"
    info = site / "ishiki_held-0.1.dist-info"
    info.mkdir(parents=True)
    (site / "ishiki_held.py").write_text(PLUGIN, encoding="utf-8")
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: ishiki-held\nVersion: 0.1\n", encoding="utf-8")
    (info / "entry_points.txt").write_text("[ishiki.ext]\nheld = ishiki_held:Held\n", encoding="utf-8")
    return site


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_stop_while_the_plugins_import_exits_0_without_starting(
    start_ishiki: StartIshiki, host_site: Path, fake_openai: FakeOpenAIServer, tmp_path: Path, signum: int
) -> None:
    ready, go = tmp_path / "ready", tmp_path / "go"
    os.mkfifo(ready)
    os.mkfifo(go)
    root = write_config(
        tmp_path / "bot",
        profiles={"ana": profile_yaml("console:local: ['*']", extra="extends:\n  held: {}\n")},
        models=models_yaml(fake_openai),
    )
    site = held_site(tmp_path)
    paths = os.pathsep.join([str(host_site), str(site)])
    ready_fd, go_fd = os.open(ready, os.O_RDWR), os.open(go, os.O_RDWR)  # open ends: the plugin never blocks on open
    running = start_ishiki("run", str(root), env={"HOLD_READY": str(ready), "HOLD_GO": str(go), "PYTHONPATH": paths})
    try:
        said, _, _ = select.select([ready_fd], [], [], 300)  # a cap as a last resort, not a measure
        if not said:
            pytest.fail(f"timed out: the plugin's import never began; stderr: {running.finish(timeout=10)[2]}")
        assert os.read(ready_fd, 64) == b"importing\n"  # the host is loading its plugins now
        running.signal(signum)
        os.write(go_fd, b"go\n")  # let the import go on (the test holds both ends: nothing here can block)
        code, out, err = running.finish(input="hello\n")
    finally:
        os.close(ready_fd)
        os.close(go_fd)
    assert (code, out) == (0, ""), err
    assert f"{signal.Signals(signum).name} before the host started" in err
    assert "Traceback" not in err
    assert not (root / "data" / "runtimes").exists()  # nothing started, nothing written
    assert fake_openai.requests == []
