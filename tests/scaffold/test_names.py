"""The names a scaffold derives from KIND and NAME, and the names it refuses."""

from __future__ import annotations

import pytest

from ishiki_host.cli import new
from ishiki_host.errors import ScaffoldError
from ishiki_host.plugins.base import GROUPS
from ishiki_host.scaffold import KINDS, plugin_names


def test_every_group_has_a_kind_whose_base_is_the_groups_base_class() -> None:
    assert {kind.group for kind in KINDS.values()} == set(GROUPS)
    assert all(GROUPS[kind.group].__name__ == kind.base for kind in KINDS.values())
    assert tuple(KINDS) == new._KINDS


@pytest.mark.parametrize(
    ("kind", "name", "distribution", "package", "class_name", "service"),
    [
        ("extension", "weather", "ishiki-ext-weather", "ishiki_ext_weather", "WeatherExtension", "ishiki.ext.weather"),
        ("context", "my-window", "ishiki-context-my-window", "ishiki_context_my_window", "MyWindowContextEngine",
         "ishiki.engine.context.my-window"),
        ("wakeup", "mood_2", "ishiki-wakeup-mood-2", "ishiki_wakeup_mood_2", "Mood2WakeupEngine",
         "ishiki.engine.wakeup.mood_2"),
        ("toolcall", "yaml", "ishiki-toolcall-yaml", "ishiki_toolcall_yaml", "YamlToolcallEngine",
         "ishiki.engine.toolcall.yaml"),
        ("channel", "matrix", "ishiki-channel-matrix", "ishiki_channel_matrix", "MatrixChannel",
         "ishiki.channel.matrix"),
        ("provider", "gemini", "ishiki-provider-gemini", "ishiki_provider_gemini", "GeminiAPI",
         "ishiki.provider.gemini"),
        ("host", "dashboard", "ishiki-host-dashboard", "ishiki_host_dashboard", "DashboardPlugin",
         "ishiki.host.dashboard"),
    ],
)  # fmt: skip
def test_names_follow_the_scheme(
    kind: str, name: str, distribution: str, package: str, class_name: str, service: str
) -> None:
    names = plugin_names(kind, name)
    assert (names.distribution, names.package, names.class_name, names.service) == (
        distribution,
        package,
        class_name,
        service,
    )
    assert names.target == f"{package}:{class_name}"


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("", "it is empty"),
        ("Weather", "use lower case ('weather')"),
        ("my ext", "use lower-case ASCII letters"),
        ("2fast", "starting with a letter"),
        ("a.b", "use lower-case ASCII letters"),
        ("a:b", "use lower-case ASCII letters"),
        ("trailing-", "use lower-case ASCII letters"),
        ("double--dash", "use lower-case ASCII letters"),
        ("météo", "use lower-case ASCII letters"),
        ("x" * 25, "longer than 24 characters"),
    ],
)
def test_bad_names_are_refused_with_the_reason(name: str, reason: str) -> None:
    with pytest.raises(ScaffoldError, match="bad plugin name") as refused:
        plugin_names("extension", name)
    assert reason in str(refused.value)


def test_an_unknown_kind_is_refused() -> None:
    with pytest.raises(ScaffoldError, match="unknown plugin kind 'engine' \\(one of: context, wakeup"):
        plugin_names("engine", "x")


@pytest.mark.parametrize("name", ["hooks", "healthz", "readyz", "metrics"])
def test_a_host_plugin_may_not_be_named_after_a_path_the_host_serves(name: str) -> None:
    with pytest.raises(ScaffoldError, match=f"the host serves /{name} itself"):
        plugin_names("host", name)
    assert plugin_names("extension", name).name == name  # only a host plugin is served at /<name>
