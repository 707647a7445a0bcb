"""Configuration: defaults, paths, and the mistakes refused with the key that holds them."""

from __future__ import annotations

from pathlib import Path

import pytest
from ishiki_ext_workspace import settings_from_config

from ishiki_host.config.profile import load_profile
from ishiki_host.errors import ProfileInvalid
from ishiki_host.testing import discover

KEY = "extends.workspace.config"


def _settings(tmp_path: Path, config: dict[str, object], data_dir: Path | None = None):
    return settings_from_config(config, home=tmp_path / "home", config_dir=tmp_path / "conf", data_dir=data_dir)


def test_defaults_create_the_root_in_the_runtime_home(tmp_path: Path) -> None:
    settings = _settings(tmp_path, {})
    assert [(m.name, m.mode) for m in settings.mounts] == [("root", "rw")]
    assert settings.root.path == str(tmp_path / "home" / "workspace")
    assert Path(settings.root.path).is_dir()
    assert (settings.max_file_bytes, settings.timeout_seconds, settings.shell) == (1024 * 1024, 30.0, False)
    assert (settings.max_output_bytes, settings.max_results, dict(settings.shell_env)) == (65536, 200, {})


def test_relative_paths_are_relative_to_the_config_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "conf" / "shared").mkdir(parents=True)
    (tmp_path / "user" / "books").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    config = {"root": "ws", "mounts": [{"name": "shared", "path": "shared"}, {"name": "books", "path": "~/books"}]}
    settings = _settings(tmp_path, config)
    assert settings.root.path == str(tmp_path / "conf" / "ws")
    assert Path(settings.root.path).is_dir()
    expected = [str(tmp_path / "conf" / "shared"), str(tmp_path / "user" / "books")]
    assert [m.path for m in settings.mounts[1:]] == expected
    assert [m.mode for m in settings.mounts[1:]] == ["ro", "ro"]


@pytest.mark.parametrize(
    ("mounts", "path", "message"),
    [
        ([{"name": "docs", "path": "missing"}], f"{KEY}.mounts[0].path", "No such file or directory"),
        ([{"name": "docs", "path": "file.txt"}], f"{KEY}.mounts[0].path", "is not a directory"),
        ([{"name": "root", "path": "d"}], f"{KEY}.mounts[0].name", "'root' is the workspace root's name"),
        ([{"name": "a", "path": "d"}, {"name": "a", "path": "d"}], f"{KEY}.mounts[1].name", "already used"),
        ([{"name": "inner", "path": "ws/inner"}], f"{KEY}.mounts", "lies inside read-write mount 'root'"),
        (
            [{"name": "out", "path": "d", "mode": "rw"}, {"name": "sub", "path": "d/sub"}],
            f"{KEY}.mounts",
            "read-only mount 'sub'",
        ),
    ],
)
def test_mount_mistakes_name_their_key(tmp_path: Path, mounts: list[dict[str, str]], path: str, message: str) -> None:
    conf = tmp_path / "conf"
    (conf / "d" / "sub").mkdir(parents=True)
    (conf / "ws" / "inner").mkdir(parents=True)
    (conf / "file.txt").write_text("x")
    with pytest.raises(ProfileInvalid) as caught:
        _settings(tmp_path, {"root": "ws", "mounts": mounts})
    assert caught.value.path == path
    assert message in caught.value.message


def test_a_read_write_mount_inside_a_read_only_one_is_fine(tmp_path: Path) -> None:
    (tmp_path / "conf" / "lib" / "out").mkdir(parents=True)
    config = {"mounts": [{"name": "lib", "path": "lib"}, {"name": "out", "path": "lib/out", "mode": "rw"}]}
    assert [m.mode for m in _settings(tmp_path, config).mounts] == ["rw", "ro", "rw"]


def test_no_mount_may_contain_the_host_data_directory(tmp_path: Path) -> None:
    data = tmp_path / "conf" / "data"
    data.mkdir(parents=True)
    with pytest.raises(ProfileInvalid, match="contains the host's data directory") as caught:
        _settings(tmp_path, {"mounts": [{"name": "all", "path": "."}]}, data_dir=data)
    assert caught.value.path == f"{KEY}.mounts"
    with pytest.raises(ProfileInvalid, match="contains the host's data directory") as caught:
        _settings(tmp_path, {"root": "."}, data_dir=data)
    assert caught.value.path == f"{KEY}.root"
    # The default root lives inside the data directory, which is fine.
    assert _settings(tmp_path, {}, data_dir=tmp_path / "home").root.name == "root"


def _profile(tmp_path: Path, extends: str) -> Path:
    directory = tmp_path / "profiles" / "p"
    directory.mkdir(parents=True)
    (directory / "profile.yml").write_text(f"model: default\nextends:\n{extends}")
    (directory / "persona.md").write_text("You are a test persona.\n")
    return directory


def test_the_profile_loader_checks_the_block_with_the_installed_schema(tmp_path: Path) -> None:
    directory = _profile(tmp_path, "  workspace:\n    config:\n      maxFileByte: 10\n      shell: yes please\n")
    load = load_profile(directory, "profiles/p", discover())
    messages = [f"{e.path}: {e.message}" for e in load.errors]
    assert any("extends.workspace.config.maxFileByte" in m and "did you mean 'max_file_bytes'" in m for m in messages)
    assert any("extends.workspace.config.shell" in m for m in messages)


def test_the_profile_loader_fills_the_defaults(tmp_path: Path) -> None:
    directory = _profile(tmp_path, "  workspace:\n    config:\n      mounts: [{name: docs, path: /srv/docs}]\n")
    load = load_profile(directory, "profiles/p", discover())
    assert load.profile is not None, load.errors
    use = load.profile.extension("workspace")
    assert use is not None
    assert use.config["mounts"] == [{"name": "docs", "path": "/srv/docs", "mode": "ro"}]
    assert (use.config["max_file_bytes"], use.config["shell"], use.config["timeout_ms"]) == (1048576, False, 30000)
