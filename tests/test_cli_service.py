"""``ishiki service install``: the systemd unit for a config directory, printed or written, by the real command."""

from __future__ import annotations

import os
import pwd
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ishiki_host.cli.service import UnitSpec, render_unit

RunIshiki = Callable[..., Any]  # the ``run_ishiki`` fixture of conftest.py
REPO = Path(__file__).resolve().parent.parent
VENV_ISHIKI = Path(os.path.abspath(sys.executable)).parent / "ishiki"


def config_dir(tmp_path: Path, host: str = "") -> Path:
    root = tmp_path / "bot"
    (root / "profiles").mkdir(parents=True)
    (root / "ishiki.yaml").write_text(host, encoding="utf-8")
    return root


def settings(unit: str) -> dict[str, str]:
    """The ``Key=value`` lines of a unit (each key once in these units)."""
    parts = [line.partition("=") for line in unit.splitlines() if "=" in line and not line.startswith("#")]
    return {key: value for key, _, value in parts}


def test_print_shows_a_system_unit_for_this_dir_and_this_venv(run_ishiki: RunIshiki, tmp_path: Path) -> None:
    root = config_dir(tmp_path, "shutdown_grace_seconds: 12.5\n")
    done = run_ishiki("service", "install", str(root), "--print")
    assert done.returncode == 0, done.stderr
    unit = settings(done.stdout)
    assert unit["ExecStart"] == f"{VENV_ISHIKI} run {root.resolve()}"
    assert unit["WorkingDirectory"] == str(root.resolve())
    assert unit["EnvironmentFile"] == f"-{root.resolve()}/ishiki.env"
    assert unit["Restart"] == "on-failure"
    assert unit["KillSignal"] == "SIGTERM"
    assert unit["TimeoutStopSec"] == "43"  # above the grace of 12.5 s: ceil(12.5) + 30
    assert unit["ExecReload"] == "/bin/kill -HUP $MAINPID"
    assert unit["User"] == pwd.getpwuid(root.stat().st_uid).pw_name
    assert unit["WantedBy"] == "multi-user.target"
    assert "save it as /etc/systemd/system/ishiki.service" in done.stderr
    assert "sudo systemctl enable --now ishiki.service" in done.stderr
    assert not (root / "ishiki.service").exists()


def test_user_unit_goes_to_xdg_config_home_and_names_the_systemctl_commands(
    run_ishiki: RunIshiki, tmp_path: Path
) -> None:
    root = config_dir(tmp_path)
    home = tmp_path / "xdg"
    done = run_ishiki("service", "install", str(root), "--user", "--name", "ana", env={"XDG_CONFIG_HOME": str(home)})
    assert done.returncode == 0, done.stderr
    written = home / "systemd" / "user" / "ana.service"
    assert done.stdout.splitlines()[:4] == [
        f"wrote {written}",
        "now run:",
        "  systemctl --user daemon-reload",
        "  systemctl --user enable --now ana.service",
    ]
    unit = settings(written.read_text(encoding="utf-8"))
    assert "User" not in unit
    assert unit["WantedBy"] == "default.target"
    assert unit["TimeoutStopSec"] == "40"  # the default grace of 10 s + 30

    again = run_ishiki("service", "install", str(root), "--user", "--name", "ana", env={"XDG_CONFIG_HOME": str(home)})
    assert (again.returncode, again.stdout.splitlines()[0]) == (0, f"{written} is up to date")


def test_a_different_unit_of_that_name_is_kept_unless_forced(run_ishiki: RunIshiki, tmp_path: Path) -> None:
    root = config_dir(tmp_path)
    units = tmp_path / "units"
    units.mkdir()
    (units / "ishiki.service").write_text("[Service]\nExecStart=/bin/true\n", encoding="utf-8")
    done = run_ishiki("service", "install", str(root), "--unit-dir", str(units), "--as-user", "nobody")
    assert done.returncode == 1
    assert done.stderr == f"ishiki service install: {units}/ishiki.service exists and differs; --force replaces it\n"
    done = run_ishiki("service", "install", str(root), "--unit-dir", str(units), "--as-user", "nobody", "--force")
    assert done.returncode == 0, done.stderr
    assert settings((units / "ishiki.service").read_text(encoding="utf-8"))["User"] == "nobody"


def test_bad_input_is_one_clear_line(run_ishiki: RunIshiki, tmp_path: Path) -> None:
    done = run_ishiki("service", "install", str(tmp_path), "--print")
    assert done.returncode == 2
    assert done.stderr.startswith(f"ishiki service install: {tmp_path} is not a config directory")
    root = config_dir(tmp_path)
    done = run_ishiki("service", "install", str(root), "--print", "--name", "my unit")
    assert (done.returncode, done.stderr) == (
        2,
        "ishiki service install: --name 'my unit' is no unit name (letters, digits, _.@-)\n",
    )
    spaced = tmp_path / "my bot"
    root.rename(spaced)
    done = run_ishiki("service", "install", str(spaced), "--print")
    assert done.returncode == 2
    assert "holds a space, quote, $ or %" in done.stderr
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the unit folder should be", encoding="utf-8")
    done = run_ishiki("service", "install", str(spaced.rename(root)), "--user", "--unit-dir", str(blocked / "x"))
    assert done.returncode == 1
    assert done.stderr.startswith(f"ishiki service install: cannot write {blocked}/x/ishiki.service: ")


def test_the_documented_unit_file_is_what_the_command_writes() -> None:
    documented = (REPO / "deploy" / "ishiki.service").read_text(encoding="utf-8")
    written = render_unit(UnitSpec(Path("/srv/ishiki"), Path("/opt/ishiki/bin/ishiki"), 40, "ishiki"))

    def lines(text: str) -> list[str]:
        return [line for line in text.splitlines() if not line.startswith("#")]

    assert lines(documented) == lines(written)
