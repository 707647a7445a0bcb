"""Settings shared by every test suite of the repository (the host's and each package's).

Hypothesis runs derandomized, so every run of ``make test`` tries the same examples (tests are deterministic;
a search for new failing inputs is a separate, deliberate run: ``--hypothesis-profile=explore``), without
deadlines (a loaded machine must not fail a test by being slow) and without writing an example database.
``pytester`` is on for every suite: a plugin of pytest's own, only used by tests that ask for its fixture.
"""

from hypothesis import settings

pytest_plugins = ["pytester"]  # the test kit's own tests run pytest sessions (tests/testing/test_plugin_options.py)

settings.register_profile("ci", derandomize=True, deadline=None, database=None, print_blob=True)
settings.register_profile("explore", deadline=None, database=None, max_examples=1000, print_blob=True)
settings.load_profile("ci")
