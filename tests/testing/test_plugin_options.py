"""The network guard is opt-in: off in a fresh session, on with the ini option or the marker.

Each test runs a pytest session of its own (``pytester``, in this process) with the host's plugin loaded from its
entry point, as a plugin author's project gets it. The inner tests never reach a network: with the guard on the
request is refused before a socket is opened; with it off they only look at whether httpx's transport was
replaced (this repository's own guard, on for the outer test, is in place at their import and stays so).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

PROBE = """
import httpx
import pytest

from ishiki_host.testing import NetworkGuardError

AT_IMPORT = httpx.HTTPTransport.handle_request


def guarded():
    return httpx.HTTPTransport.handle_request is not AT_IMPORT


def test_unmarked():
    assert guarded() is GUARDED_UNMARKED


@pytest.mark.ishiki_network_guard
def test_marked():
    assert guarded()


@pytest.mark.ishiki_network_guard
def test_marked_request_is_refused_and_the_test_failed():
    with pytest.raises(NetworkGuardError), httpx.Client() as client:
        client.get("http://203.0.113.9/")  # TEST-NET-3: never routed
"""


def _probe(pytester: pytest.Pytester, *, guarded_unmarked: bool) -> None:
    pytester.makepyfile(test_probe=PROBE.replace("GUARDED_UNMARKED", str(guarded_unmarked)))


def _assert_outcome(result: pytest.RunResult) -> None:
    """Every probe passes; the refused request fails its test at teardown, naming the address."""
    result.assert_outcomes(passed=3, errors=1)
    result.stdout.fnmatch_lines(["*the test tried to reach non-loopback hosts: http://203.0.113.9/*"])


def test_the_guard_is_off_in_a_fresh_session(pytester: pytest.Pytester) -> None:
    _probe(pytester, guarded_unmarked=False)
    _assert_outcome(pytester.runpytest("--strict-markers", "--strict-config"))


def test_the_ini_option_turns_it_on_for_every_test(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nishiki_network_guard = true\n")
    _probe(pytester, guarded_unmarked=True)
    _assert_outcome(pytester.runpytest("--strict-markers", "--strict-config"))


def test_the_pyproject_table_turns_it_on(pytester: pytest.Pytester) -> None:
    pytester.makepyprojecttoml("[tool.pytest.ini_options]\nishiki_network_guard = true\n")
    _probe(pytester, guarded_unmarked=True)
    _assert_outcome(pytester.runpytest("--strict-markers", "--strict-config"))


def test_false_keeps_it_off(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nishiki_network_guard = false\n")
    _probe(pytester, guarded_unmarked=False)
    _assert_outcome(pytester.runpytest("--strict-markers", "--strict-config"))


def test_the_option_and_the_marker_are_documented(pytester: pytest.Pytester) -> None:
    markers = pytester.runpytest("--markers")
    markers.stdout.fnmatch_lines(["@pytest.mark.ishiki_network_guard: *loopback*"])
    ini = pytester.runpytest("--help")
    ini.stdout.fnmatch_lines(["*ishiki_network_guard (bool):*"])


def test_this_repository_runs_with_the_guard_on(request: pytest.FixtureRequest) -> None:
    assert request.config.getini("ishiki_network_guard") is True


def test_the_documented_conftest_turns_it_on_for_its_directory(pytester: pytest.Pytester) -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "testing.md").read_text(encoding="utf-8")
    (conftest,) = [b for b in re.findall(r"```python\n(.*?)```", doc, re.DOTALL) if "modifyitems" in b]
    guarded = pytester.mkpydir("guarded")
    (guarded / "conftest.py").write_text(conftest)
    (guarded / "test_probe.py").write_text(PROBE.replace("GUARDED_UNMARKED", "True"))
    (pytester.mkpydir("free") / "test_probe.py").write_text(PROBE.replace("GUARDED_UNMARKED", "False"))
    result = pytester.runpytest("--strict-markers", "--strict-config", "--import-mode=importlib")
    result.assert_outcomes(passed=6, errors=2)
