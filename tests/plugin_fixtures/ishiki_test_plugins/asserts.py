"""A module whose import fails an assertion."""

SETTINGS: dict[str, str] = {}
assert "configured" in SETTINGS, "ishiki-test-plugins: not configured"
