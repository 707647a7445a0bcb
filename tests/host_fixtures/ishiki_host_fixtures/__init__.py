"""Plugins for the runtime tests of Ishiki Host (see pyproject.toml)."""
