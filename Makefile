# Two commands on a fresh clone: `make demo` and `make test`. Both bootstrap what they need.
SHELL := /bin/bash
VENV ?= $(CURDIR)/.venv
PY := $(VENV)/bin/python
export ROS_HOME := $(CURDIR)/.ros
export ROS_LOG_DIR := $(CURDIR)/.ros/log
export ROS_AUTOMATIC_DISCOVERY_RANGE ?= LOCALHOST
export QT_QPA_PLATFORM ?= offscreen

.PHONY: setup llm demo test bench rqt clean

setup:
	@VENV=$(VENV) bash scripts/bootstrap.sh

demo: setup
	@$(VENV)/bin/task-learning demo

# The local language model (docs/llm.md): Gemma 3 270M and llama.cpp's server, installed once per
# machine into ${TASK_LEARNING_CACHE:-~/.cache/task_learning} (the first run compiles llama-server,
# about 20 min on 2 cores; later runs, from any clone, check the cache in seconds).
llm: setup
	@$(VENV)/bin/task-learning llm install

# Lint (rules in ruff.toml), type check (mypy.ini: task_learning/), then every test (pytest.ini),
# printing the 25 slowest: where the suite's time goes. TEST_WORKERS pytest-xdist workers take one
# test file each at a time (a module's shared graph stays in one worker); TEST_WORKERS=0: serial.
# The core tests alone, in seconds: .venv/bin/python -m pytest -m "not ros and not slow"
# The tests marked `llm` run the real model through llama-server: `make test` installs it first.
TEST_WORKERS ?= 2
test: setup llm
	@$(VENV)/bin/ruff check --quiet task_learning nodes test bench scripts
	@$(VENV)/bin/mypy --no-error-summary
	@$(PY) -m pytest -q --durations=25 -n $(TEST_WORKERS) --dist loadfile test

# rqt with the operator plugin (rqt's own venv, made on first use). The offscreen default above is
# for the tests: with a display, rqt opens a window unless QT_QPA_PLATFORM was set by the caller.
rqt: setup
	@$(if $(and $(filter file,$(origin QT_QPA_PLATFORM)),$(DISPLAY)$(WAYLAND_DISPLAY)),env -u QT_QPA_PLATFORM) \
	  $(VENV)/bin/task-learning operator --rqt

bench: setup
	@for b in bench/bench_*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

clean:
	rm -rf build .ros artifacts .venv-rqt
