# Two commands set up a fresh machine: `make run` and `make test` (see README.md).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PACKAGES := $(sort $(wildcard packages/*))
STAMP := $(VENV)/.installed

.PHONY: setup run test lint typecheck pytest wheels dist bench docs clean

# The venv (below), then the editable installs of packages whose folder is gone are uninstalled, so a deleted
# package stops logging load errors (tools/prune_editables.py). That runs at every `make setup`: a deletion
# leaves the stamp newer than every pyproject.toml that is left.
setup: $(STAMP)
	@$(BIN)/python tools/prune_editables.py

# Editable installs of the host and every package beside it, so a change to any of them is live at once.
$(STAMP): pyproject.toml $(wildcard packages/*/pyproject.toml)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]' $(foreach p,$(PACKAGES),-e $(p))
	touch $(STAMP)

run: setup
	$(BIN)/ishiki run .

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports --no-cache

typecheck: setup
	$(BIN)/mypy

pytest: setup
	$(BIN)/python -m pytest tests $(foreach p,$(PACKAGES),$(wildcard $(p)/tests))

test: lint typecheck pytest

# make wheels [ONLY="ishiki-ext-mcp ..."]: each package's tests against the host's wheel and its own, in a fresh
# venv with no source tree on sys.path (tools/check_wheels.py; CI runs it after `make test`).
wheels: setup
	$(BIN)/python tools/check_wheels.py $(if $(ONLY),--only $(ONLY))

# make dist: the wheels of the host and every package in dist/ (tools/build_dist.py; docs/deploy.md installs them).
dist: setup
	$(BIN)/python tools/build_dist.py

# make bench [QUICK=1] [ONLY="factlog codemode"] [COMPARE=bench/results/<earlier>.json]; see docs/benchmarks.md.
bench: setup
	$(BIN)/python -m bench $(if $(QUICK),--quick) $(if $(ONLY),--only $(ONLY)) $(if $(COMPARE),--compare $(COMPARE))

docs: setup
	$(BIN)/python -m ishiki_host.config.reference docs/reference
	$(BIN)/python -m ishiki_host.plugins.reference docs
	$(BIN)/python -m ishiki_host.engines.docs docs/engines
	$(BIN)/python -m ishiki_host.scaffold.docs docs/plugins

clean:
	rm -rf $(VENV) build dist *.egg-info
