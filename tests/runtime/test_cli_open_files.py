"""``ishiki run`` raises the soft limit on open files to the hard one at start, and says so; once the host runs it
freezes the start-up heap."""

from __future__ import annotations

import os
import resource
import subprocess
from pathlib import Path

from ishiki_host.testing import FakeOpenAIServer, profile_yaml, write_config
from ishiki_host.testing.host import models_yaml


def test_ishiki_run_raises_the_open_files_limit_says_so_and_freezes_the_start_up_heap(
    ishiki_bin: Path, host_site: Path, fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    root = write_config(tmp_path / "bot", profiles={"ana": profile_yaml("console:local: ['*']")},
                        models=models_yaml(fake_openai), host="reload_interval_seconds: 0\n")  # fmt: skip
    environ = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "OPENAI_BASE_URL", "OPENAI_MODEL")}
    environ["PYTHONPATH"] = str(host_site)
    done = subprocess.run(
        [str(ishiki_bin), "run", str(root), "--log-level", "debug"],
        input="",  # the console's input ends at once: the host starts, then stops
        env=environ,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (100, 200)),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("open files: soft limit raised from 100 to 200 (hard limit 200)") == 1
    assert "objects of the start-up frozen" in done.stderr
