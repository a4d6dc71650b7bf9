# Two commands on a fresh clone: `make demo` and `make test`. Both bootstrap what they need.
SHELL := /bin/bash
VENV ?= $(CURDIR)/.venv
PY := $(VENV)/bin/python
export ROS_HOME := $(CURDIR)/.ros
export ROS_LOG_DIR := $(CURDIR)/.ros/log
export ROS_AUTOMATIC_DISCOVERY_RANGE ?= LOCALHOST
export QT_QPA_PLATFORM ?= offscreen

.PHONY: setup sweep-setup test-setup llm demo test docs lock bench rqt clean

setup:
	@VENV=$(VENV) bash scripts/bootstrap.sh

# setup plus the optional `sweep` extra (Ray, locked in requirements-sweep.lock) for `task-learning sweep`.
sweep-setup:
	@VENV=$(VENV) SWEEP=1 bash scripts/bootstrap.sh

# What `make test` needs: the sweep extra and Debian's Chromium for the web panel's browser tests.
test-setup:
	@VENV=$(VENV) SWEEP=1 BROWSER=1 bash scripts/bootstrap.sh

demo: setup
	@$(VENV)/bin/task-learning demo

# The local language model (docs/llm.md): Gemma 3 270M and llama.cpp's server, installed once per
# machine into ${TASK_LEARNING_CACHE:-~/.cache/task_learning} (the first run compiles llama-server,
# about 20 min on 2 cores; later runs, from any clone, check the cache in seconds).
llm: setup
	@$(VENV)/bin/task-learning llm install

# Lint (rules in ruff.toml), type check (mypy.ini: task_learning/ and nodes/), build the docs site (seconds;
# a warning fails it), then every test (pytest.ini), printing the 25 slowest: where the suite's
# time goes. TEST_WORKERS pytest-xdist workers take one test file each at a time (a module's
# shared graph stays in one worker); TEST_WORKERS=0: serial.
# The core tests alone, in seconds: .venv/bin/python -m pytest -m "not ros and not slow"
# The test set-up (test-setup) includes the sweep extra (Ray): test_sweep_ray.py runs real sweeps;
# and the local model (make llm): the tests marked `llm` run the real model through llama-server.
TEST_WORKERS ?= 2
test: test-setup llm
	@$(VENV)/bin/ruff check --quiet task_learning nodes sim test bench scripts
	@$(VENV)/bin/mypy --no-error-summary
	@$(MKDOCS_BUILD)
	@$(PY) -m pytest -q --durations=25 -n $(TEST_WORKERS) --dist loadfile test

# The documentation site (mkdocs.yml; docs/ and the reference pages scripts/docs_reference.py
# generates from msg/, interfaces/ and nodes/) into build/site. --strict: a warning (a broken link,
# a nav entry without its page) fails the build.
MKDOCS_BUILD = $(VENV)/bin/mkdocs build --strict --quiet
docs: setup
	@$(MKDOCS_BUILD)
	@echo "docs: build/site/index.html"

# requirements.lock from requirements.txt, resolved in a clean venv, then requirements-sweep.lock
# (the sweep extra, requirements-sweep.txt) on top of it (scripts/lock.sh; a minute or two with a
# warm pip cache). UPGRADE=1: newest versions instead of keeping the locked ones.
lock:
	@UPGRADE=$(UPGRADE) bash scripts/lock.sh

# rqt with the operator plugin (rqt's own venv, made on first use). The offscreen default above is
# for the tests: with a display, rqt opens a window unless QT_QPA_PLATFORM was set by the caller.
rqt: setup
	@$(if $(and $(filter file,$(origin QT_QPA_PLATFORM)),$(DISPLAY)$(WAYLAND_DISPLAY)),env -u QT_QPA_PLATFORM) \
	  $(VENV)/bin/task-learning operator --rqt

bench: setup
	@for b in bench/bench_*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

clean:
	rm -rf build .ros artifacts .venv-rqt
