"""The pytest plugin of Ishiki Host (entry point ``pytest11``): fixtures for host and plugin authors.

Each fixture module is listed in ``pytest_plugins`` so plugin authors get every fixture by installing the host.
"""

pytest_plugins = [
    "ishiki_host.testing.channel_fixtures",
    "ishiki_host.testing.core_fixtures",
    "ishiki_host.testing.fixtures",
    "ishiki_host.testing.host_fixtures",
    "ishiki_host.testing.model_fixtures",
]
