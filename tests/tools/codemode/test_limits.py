"""Limits: defaults from the issue, camelCase config keys, clear refusals of bad values."""

from __future__ import annotations

import pytest

from ishiki_host.tools.codemode import LIMIT_KEYS, Limits


def test_defaults() -> None:
    limits = Limits()
    assert limits.timeout_ms == 30_000
    assert limits.memory_limit_bytes == 256 * 1024 * 1024
    assert limits.max_result_bytes == 64 * 1024


def test_limits_from_camel_case_config_keys() -> None:
    limits = Limits.from_mapping({"timeoutMs": 500, "maxToolInputBytes": 10, "maxJobs": 7, "unrelated": True})
    assert (limits.timeout_ms, limits.max_tool_input_bytes, limits.max_jobs) == (500, 10, 7)
    assert limits.memory_limit_bytes == Limits().memory_limit_bytes
    assert LIMIT_KEYS == (
        "timeoutMs",
        "memoryLimitBytes",
        "maxJobs",
        "maxToolInputBytes",
        "maxToolOutputBytes",
        "maxResultBytes",
        "maxConcurrentToolCalls",
        "maxToolCalls",
        "maxLogBytes",
    )


@pytest.mark.parametrize("value", [0, -1, 1.5, True, "10"])
def test_a_limit_that_is_not_a_positive_integer_is_refused_by_its_config_key(value: object) -> None:
    with pytest.raises(ValueError, match=r"codemode limit maxResultBytes must be a positive integer, got"):
        Limits.from_mapping({"maxResultBytes": value})
