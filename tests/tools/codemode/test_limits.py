"""Limits: defaults from the issue, camelCase config keys, clear refusals of bad values."""

from __future__ import annotations

import pytest

from ishiki_host.tools.codemode import LIMIT_KEYS, Limits


def test_defaults() -> None:
    limits = Limits()
    assert limits.timeout_ms == 30_000
    assert limits.memory_limit_bytes == 256 * 1024 * 1024
    assert limits.max_result_bytes == 64 * 1024


def test_limits_from_the_config_keys() -> None:
    limits = Limits.from_mapping({"timeout_ms": 500, "max_tool_input_bytes": 10, "max_jobs": 7, "unrelated": True})
    assert (limits.timeout_ms, limits.max_tool_input_bytes, limits.max_jobs) == (500, 10, 7)
    assert limits.memory_limit_bytes == Limits().memory_limit_bytes
    assert LIMIT_KEYS == (
        "timeout_ms",
        "memory_limit_bytes",
        "max_jobs",
        "max_tool_input_bytes",
        "max_tool_output_bytes",
        "max_result_bytes",
        "max_concurrent_tool_calls",
        "max_tool_calls",
        "max_log_bytes",
    )


@pytest.mark.parametrize("value", [0, -1, 1.5, True, "10"])
def test_a_limit_that_is_not_a_positive_integer_is_refused_by_its_config_key(value: object) -> None:
    with pytest.raises(ValueError, match=r"codemode limit max_result_bytes must be a positive integer, got"):
        Limits.from_mapping({"max_result_bytes": value})
