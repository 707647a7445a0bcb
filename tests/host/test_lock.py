"""The lock of a data directory: one holder at a time (two hosts of one process too), the pid file written only
by the holder, everything released at exit."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ishiki_host.errors import ConfigDirLocked
from ishiki_host.host.lock import LOCK_FILE, PID_FILE, claim_data_dir
from ishiki_host.testing import profile_yaml
from ishiki_host.testing.host_fixtures import MakeHost

pytestmark = pytest.mark.anyio


def test_a_held_data_dir_is_refused_with_the_holders_pid_and_left_as_it_was(tmp_path: Path) -> None:
    data = tmp_path / "data"
    claim = claim_data_dir(data)
    assert (data / PID_FILE).read_text() == f"{os.getpid()}\n"
    (data / PID_FILE).write_text("4242\n")  # whatever is there stays: a refused claim writes nothing
    with pytest.raises(ConfigDirLocked) as refused:
        claim_data_dir(data)
    assert refused.value.pid == os.getpid()
    assert refused.value.path == str(data / LOCK_FILE)
    assert str(refused.value) == f"another host (pid {os.getpid()}) is running on {data}"
    assert (data / PID_FILE).read_text() == "4242\n"
    claim.release()
    assert (data / PID_FILE).read_text() == "4242\n"  # not this process's pid file any more: kept
    claim.release()  # idempotent
    again = claim_data_dir(data)
    assert again.held
    again.release()
    assert not again.held
    assert not (data / PID_FILE).exists()
    assert (data / LOCK_FILE).read_text() == ""  # the lock file stays, naming no holder


def test_a_lock_file_naming_no_pid_still_refuses(tmp_path: Path) -> None:
    data = tmp_path / "data"
    claim = claim_data_dir(data)
    (data / LOCK_FILE).write_text("")  # as between a holder's lock and its writing of the pid
    with pytest.raises(ConfigDirLocked, match=r"another host \(another process\) is running") as refused:
        claim_data_dir(data)
    assert refused.value.pid is None
    claim.release()


async def test_a_second_host_on_one_config_dir_fails_to_start_and_the_first_runs_on(
    make_host: MakeHost, tmp_path: Path
) -> None:
    profiles = {"ana": profile_yaml()}
    async with make_host(profiles=profiles, root=tmp_path / "bot") as first:
        pid_file = first.root / "data" / PID_FILE
        with pytest.raises(ConfigDirLocked, match="another host"):
            async with make_host(profiles=profiles, root=tmp_path / "bot"):
                pass
        assert pid_file.read_text() == f"{os.getpid()}\n"
        assert first.host.channel("fake:bot") is not None
    assert not pid_file.exists()
    async with make_host(profiles=profiles, root=tmp_path / "bot"):  # free once the first has stopped
        assert pid_file.exists()
