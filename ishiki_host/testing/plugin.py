"""The pytest plugin of Ishiki Host (entry point ``pytest11``): fixtures for host and plugin authors.

Each fixture module is listed in ``pytest_plugins`` so plugin authors get every fixture by installing the host.
The plugin also registers the network guard's ini option and marker (``ishiki_network_guard``): the guard is
off unless a project turns it on (see ``ishiki_host.testing.network_guard``).
"""

from __future__ import annotations

import pytest

from ishiki_host.testing.network_guard import GUARD_NAME

pytest_plugins = [
    "ishiki_host.testing.channel_fixtures",
    "ishiki_host.testing.core_fixtures",
    "ishiki_host.testing.fixtures",
    "ishiki_host.testing.harness_fixtures",
    "ishiki_host.testing.host_fixtures",
    "ishiki_host.testing.model_fixtures",
]


def pytest_addoption(parser: pytest.Parser) -> None:
    """Register the ini option ``ishiki_network_guard`` (a bool, false unless set)."""
    parser.addini(
        GUARD_NAME,
        "fail every test whose httpx requests reach beyond loopback (Ishiki Host's network guard)",
        type="bool",
        default=False,
    )


def pytest_configure(config: pytest.Config) -> None:
    """Register the marker ``ishiki_network_guard``."""
    config.addinivalue_line(
        "markers", f"{GUARD_NAME}: fail the test if its httpx requests reach beyond loopback (Ishiki Host)"
    )
