"""The real ``ishiki`` command in a subprocess: check, plugins, init; bad input never shows a traceback."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

RunIshiki = Callable[..., subprocess.CompletedProcess[str]]
WriteConfig = Callable[..., Path]
ProfileFiles = Callable[..., dict[str, str]]

CONSOLE = "model: default\nchannels:\n  console:local: ['*']\n"


def check_json(run_ishiki: RunIshiki, root: Path, plugins: bool = True) -> tuple[int, dict[str, Any]]:
    done = run_ishiki("check", str(root), "--json", plugins=plugins)
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, json.loads(done.stdout)


def test_check_ready_config_exits_0(
    run_ishiki: RunIshiki, write_config: WriteConfig, profile_files: ProfileFiles, echo_models: str
) -> None:
    root = write_config({"models.yaml": echo_models, **profile_files("p", CONSOLE)})
    code, report = check_json(run_ishiki, root)
    assert code == 0
    assert set(report) == {"ok", "profiles", "models", "host", "plugins", "heartbeats", "skills", "extensions"}
    assert report["heartbeats"] == {"file": str(root / "heartbeats.json"), "found": False, "beats": 0, "errors": []}
    assert report["ok"] is True
    assert report["profiles"] == [{"id": "p", "state": "ready", "errors": [], "missing": [], "warnings": []}]
    text = run_ishiki("check", str(root), plugins=True)
    assert text.returncode == 0
    assert "p  ready" in text.stdout


def test_check_defaults_to_the_current_directory(
    run_ishiki: RunIshiki, write_config: WriteConfig, profile_files: ProfileFiles, echo_models: str
) -> None:
    root = write_config({"models.yaml": echo_models, **profile_files("p", CONSOLE)})
    done = run_ishiki("check", "--json", cwd=root, plugins=True)
    assert done.returncode == 0
    assert json.loads(done.stdout)["profiles"][0]["id"] == "p"


def test_check_reports_waiting_and_invalid_with_exit_1(
    run_ishiki: RunIshiki, write_config: WriteConfig, profile_files: ProfileFiles, echo_models: str
) -> None:
    root = write_config(
        {
            "models.yaml": echo_models,
            **profile_files("a", "model: default\nextends: {notinstalled: {}}\n"),
            **profile_files("b", "model: default\nmdoe: cross\n"),
        }
    )
    code, report = check_json(run_ishiki, root)
    assert code == 1
    assert report["ok"] is False
    a, b = report["profiles"]
    assert (a["state"], a["missing"]) == ("waiting", ["ishiki.ext.notinstalled"])
    assert b["state"] == "invalid"
    assert b["errors"] == [
        {
            "file": f"{root}/profiles/b/profile.yml",
            "line": 2,
            "path": "mdoe",
            "message": "unknown key 'mdoe'; did you mean 'mode'?",
        }
    ]
    text = run_ishiki("check", str(root), plugins=True).stdout
    assert f"{root}/profiles/b/profile.yml:2: mdoe: unknown key 'mdoe'; did you mean 'mode'?" in text
    assert "not ok: 0 of 2 enabled profiles ready" in text


def test_check_exit_2_when_dir_is_not_a_config_dir(run_ishiki: RunIshiki, tmp_path: Path) -> None:
    for target in (tmp_path / "missing", tmp_path):
        done = run_ishiki("check", str(target))
        assert done.returncode == 2
        assert str(target) in done.stderr
        assert "Traceback" not in done.stderr
    done = run_ishiki("check", str(tmp_path), "--json")
    report = json.loads(done.stdout)
    assert report["ok"] is False
    assert report["error"].startswith(f"{tmp_path} is not a config directory")


BAD_INPUTS: dict[str, bytes | str] = {
    "malformed": "model: [default\n",
    "binary": os.urandom(256) + b"\0",
    "latin1": "model: caf\xe9\n".encode("latin-1"),
    "deep": "model: " + "[" * 5000 + "]" * 5000 + "\n",
    "bomb": "a: &a [x,x,x,x,x,x,x,x,x,x]\n"
    + "".join(f"{c}: &{c} [{','.join([f'*{p}'] * 10)}]\n" for p, c in zip("abcdefgh", "bcdefghi", strict=True)),
    "alist": "- model: default\n",
    "types": "model: 1\nmode: 2\nchannels: 3\nextends: 4\ncontext: 5\nsession: {compact_threshold: high}\n",
    "empty": "",
}


def test_bad_input_is_each_profiles_own_error(
    run_ishiki: RunIshiki, write_config: WriteConfig, echo_models: str, tmp_path: Path
) -> None:
    files: dict[str, str | bytes] = {"models.yaml": echo_models}
    for pid, content in BAD_INPUTS.items():
        files[f"profiles/{pid}/profile.yml"] = content
        files[f"profiles/{pid}/persona.md"] = "x"
    files["profiles/good/profile.yml"] = CONSOLE
    files["profiles/good/persona.md"] = "x"
    root = write_config(files)
    (root / "profiles" / "huge").mkdir()
    with (root / "profiles" / "huge" / "profile.yml").open("wb") as sparse:
        sparse.truncate(50 * 1024 * 1024)
    (root / "profiles" / "huge" / "persona.md").write_text("x")
    code, report = check_json(run_ishiki, root)
    assert code == 1
    by_id = {p["id"]: p for p in report["profiles"]}
    assert by_id.pop("good")["state"] == "ready"
    assert set(by_id) == {*BAD_INPUTS, "huge"}
    for pid, profile in by_id.items():
        assert profile["state"] == "invalid", pid
        assert profile["errors"], pid
        assert all(e["file"].startswith(f"{root}/profiles/{pid}/") and e["message"] for e in profile["errors"]), pid
    assert "file too large" in by_id["huge"]["errors"][0]["message"]
    assert "alias bomb" in by_id["bomb"]["errors"][0]["message"]


def test_plugins_lists_every_service(run_ishiki: RunIshiki) -> None:
    done = run_ishiki("plugins", "--json", plugins=True)
    assert done.returncode == 1
    services = {s["service"]: s for s in json.loads(done.stdout)["services"]}
    assert services["ishiki.engine.context.standard"]["distribution"] == "ishiki-host"
    broken = services["ishiki.ext.broken"]
    assert (broken["status"], broken["distribution"], broken["version"]) == ("error", "ishiki-test-plugins", "0.3.1")
    assert broken["error"] == "RuntimeError: ishiki-test-plugins: broken on purpose"
    assert set(broken) == {"service", "group", "name", "target", "distribution", "version", "status", "error"}
    text = run_ishiki("plugins", plugins=True).stdout
    assert "ishiki.ext.missing" in text
    assert "No module named 'ishiki_test_plugins.nowhere'" in text
    clean = run_ishiki("plugins")
    assert clean.returncode == 0
    assert "ishiki.channel.console" in clean.stdout
    assert "testchat" not in clean.stdout


def test_init_writes_a_config_that_checks(run_ishiki: RunIshiki, tmp_path: Path) -> None:
    target = tmp_path / "mybot"
    done = run_ishiki("init", str(target))
    assert done.returncode == 0, done.stderr
    assert (target / "profiles" / "assistant" / "persona.md").read_text().startswith("You are assistant")
    plugins = json.loads(run_ishiki("plugins", "--json").stdout)["services"]
    have_api = any(s["service"] == "ishiki.provider.openai-completions" and s["status"] == "ok" for s in plugins)
    code, report = check_json(run_ishiki, target, plugins=False)
    assert report["models"] == {"errors": [], "warnings": []}
    assert report["host"] == {"errors": [], "warnings": []}
    profile = report["profiles"][0]
    if have_api:
        assert (code, profile["state"]) == (0, "ready")
    else:  # before the gateway's model APIs are installed, only that API is missing
        assert (code, profile["state"], profile["missing"]) == (1, "waiting", ["ishiki.provider.openai-completions"])


def test_init_never_overwrites_without_force(run_ishiki: RunIshiki, tmp_path: Path) -> None:
    assert run_ishiki("init", str(tmp_path), "--profile", "bot").returncode == 0
    (tmp_path / "models.yaml").write_text("# mine\n")
    again = run_ishiki("init", str(tmp_path), "--profile", "bot")
    assert again.returncode == 2
    assert "would overwrite" in again.stderr
    assert (tmp_path / "models.yaml").read_text() == "# mine\n"
    assert run_ishiki("init", str(tmp_path), "--profile", "bot", "--force").returncode == 0
    assert (tmp_path / "models.yaml").read_text() != "# mine\n"
    bad = run_ishiki("init", str(tmp_path / "x"), "--profile", "../up")
    assert bad.returncode == 2


@pytest.mark.parametrize("args", [[], ["--help"], ["check", "--help"], ["--version"]])
def test_help_and_version(run_ishiki: RunIshiki, args: list[str]) -> None:
    done = run_ishiki(*args)
    assert "Traceback" not in done.stderr
    assert done.returncode in (0, 2)


def test_check_reports_tool_names_two_extensions_both_declare(
    run_ishiki: RunIshiki, write_config: WriteConfig, profile_files: ProfileFiles, echo_models: str
) -> None:
    text = CONSOLE + "extends:\n  notes: {}\n  jotter: {}\n"
    root = write_config({"models.yaml": echo_models, **profile_files("p", text)})
    code, report = check_json(run_ishiki, root)
    assert code == 1
    assert report["profiles"][0]["state"] == "invalid"
    assert report["profiles"][0]["errors"][0]["path"] == "extends.jotter"
    shown = run_ishiki("check", str(root), plugins=True).stdout
    assert "extension 'jotter' offers a tool named 'note_add', as extension 'notes' does" in shown
