"""A module that fails when imported."""

raise RuntimeError("ishiki-test-plugins: broken on purpose")
