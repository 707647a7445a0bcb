"""Plugins for the tests of Ishiki Host: each module is one kind; ``broken`` and ``oddities`` fail on purpose."""
