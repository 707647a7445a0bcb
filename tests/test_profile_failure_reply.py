"""``failure_reply`` in profile.yml: what a sender is told when their turn fails, and every bad way to write it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from ishiki_host.config.models_loader import load_models
from ishiki_host.config.profile import ProfileLoad, load_profile
from ishiki_host.config.schemas import load_schema
from ishiki_host.plugins.discovery import PluginRegistry

WriteConfig = Callable[..., Path]
ProfileFiles = Callable[..., dict[str, str]]
DEFAULT = "Sorry, something went wrong on my side; please try again in a moment."


@pytest.fixture
def load(
    write_config: WriteConfig, profile_files: ProfileFiles, echo_models: str, plugin_registry: PluginRegistry
) -> Callable[[str], ProfileLoad]:
    """Load a profile whose profile.yml is ``model: default`` plus the given lines."""

    def run(lines: str) -> ProfileLoad:
        root = write_config({"models.yaml": echo_models, **profile_files("p", f"model: default\n{lines}")})
        models, _ = load_models(root, {}, catalog=plugin_registry)
        return load_profile(root / "profiles" / "p", "profiles/p", plugin_registry, models)

    return run


@pytest.mark.parametrize(
    ("lines", "value"),
    [
        ("", DEFAULT),
        ('failure_reply: "Oops. Again in a minute?"\n', "Oops. Again in a minute?"),
        ("failure_reply: null\n", None),
        ('failure_reply: ""\n', None),
        ("failure_reply: |\n  Something broke.\n  Try again later.\n", "Something broke.\nTry again later.\n"),
        (f"failure_reply: {'x' * 300}\n", "x" * 300),
    ],
)
def test_the_reply_its_default_and_switching_it_off(load: Callable[[str], ProfileLoad], lines: str, value: str) -> None:
    result = load(lines)
    assert result.errors == ()
    assert result.profile is not None
    assert result.profile.failure_reply == value
    assert load_schema("profile")["properties"]["failure_reply"]["default"] == DEFAULT


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        ("failure_reply: 5\n", "expected a string or null, got integer (5)"),
        ("failure_reply: [sorry]\n", "expected a string or null, got array"),
        ('failure_reply: "   "\n', 'must say something (or be null or "" to say nothing)'),
        (f"failure_reply: {'x' * 301}\n", "must be at most 300 characters long; got 301"),
    ],
)
def test_a_reply_that_is_not_short_text_is_an_error(
    load: Callable[[str], ProfileLoad], lines: str, message: str
) -> None:
    result = load(lines)
    assert result.profile is None
    ((line, path, text),) = [(e.line, e.path, e.message) for e in result.errors]
    assert (line, path) == (2, "failure_reply")
    assert message in text
