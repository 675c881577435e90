# iolab: `make lab` to learn, `make test` to check. Both build .venv/ first if needed.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Re-installs whenever a requirements file or the package definition changes.
VENV_STAMP := $(VENV)/.installed
REQUIREMENTS := binder/requirements.txt requirements-dev.txt pyproject.toml
# uv installs the same pinned versions as pip, downloading and unpacking in parallel: a fresh .venv/ in 12 s against
# pip's 60 s, on a CI run's clock. pip stays the fallback, and Binder's installer.
UV_VERSION := 0.13.9

NOTEBOOKS := $(sort $(wildcard notebooks/*.ipynb))
# The lessons, which run; notebooks/glossary.ipynb is a page of words and symbols that runs nothing.
LESSON_NOTEBOOKS := $(sort $(wildcard notebooks/[0-9][0-9]-*.ipynb))
# make regress runs the full lessons; QUICK=1 uses the small CI sizes instead.
QUICK ?= 0
SOLUTIONS ?= 1
# Per-cell limit for make regress: a full-size lesson cell may run minutes, never forever.
CELL_TIMEOUT ?= 900
LAB_ARGS ?=
PYTEST_ARGS ?=
# make test runs the suite in lanes: one pytest-xdist worker per whole usable CPU (a CFS quota counted), at most four,
# each keeping to its own CPU (tests/lanes.py), taking its next test when it is free (xdist would otherwise hand
# each a quarter of the suite at once). LANES=0 runs it in one process; empty means count them.
LANES ?=
COUNT_LANES := import math; from iolab import environment; n = math.floor(environment.usable_cpus()); print(min(n, 4) if n > 1 else 0)

as_bool = $(if $(filter 1 true True yes,$(1)),True,False)

.PHONY: all lab test regress binder-like student bench strip clean distclean venv hub

all: test

venv: $(VENV_STAMP)

$(VENV_STAMP): $(REQUIREMENTS)
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null || { \
	  echo "error: iolab needs Python 3.11 or newer; '$(PYTHON)' is $$($(PYTHON) --version 2>/dev/null || echo 'not found')." >&2; \
	  echo "       Install Python 3.11 and run: make PYTHON=python3.11 $(MAKECMDGOALS)" >&2; \
	  exit 1; }
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@if $(BIN)/python -m pip install --quiet uv==$(UV_VERSION); then \
	  echo "installing the pinned packages with uv $(UV_VERSION)"; \
	  $(BIN)/python -m uv pip install --python $(BIN)/python --compile-bytecode \
	    -r binder/requirements.txt -r requirements-dev.txt && \
	  $(BIN)/python -m uv pip install --python $(BIN)/python --no-deps -e .; \
	else \
	  echo "no uv $(UV_VERSION) for this machine: installing with pip (slower)"; \
	  $(BIN)/python -m pip install -r binder/requirements.txt -r requirements-dev.txt && \
	  $(BIN)/python -m pip install --no-deps -e .; \
	fi
	@touch $@

# Jupyter refuses to run as root unless told; containers and CI machines often are root.
ALLOW_ROOT := $(if $(filter 0,$(shell id -u)),--allow-root)

# The lab's own JupyterLab settings (jupyter/lab-settings/overrides.json: no news prompt), not the user's.
# IOLAB_QUICK=1 make lab runs every lesson at its small sizes, for a demo in class.
lab: $(VENV_STAMP)
	$(BIN)/jupyter lab --ip=127.0.0.1 $(ALLOW_ROOT) --LabApp.app_settings_dir=$(CURDIR)/jupyter/lab-settings $(LAB_ARGS) notebooks/00-start-here.ipynb

test: $(VENV_STAMP)
	$(BIN)/ruff check lib servers tests tools benchmarks
	$(BIN)/mypy
	lanes="$(LANES)"; [ -n "$$lanes" ] || lanes=$$($(BIN)/python -c '$(COUNT_LANES)'); \
	  $(BIN)/python -m pytest -n "$$lanes" --maxschedchunk=1 $(PYTEST_ARGS)

# Executes every lesson, keeps going past a failure, and fails at the end naming each one.
regress: $(VENV_STAMP)
	@mkdir -p build/notebooks build/results
	@failed=""; \
	for nb in $(LESSON_NOTEBOOKS); do \
	  stem=$$(basename $$nb .ipynb); \
	  echo "== $$stem (quick=$(call as_bool,$(QUICK)), solutions=$(call as_bool,$(SOLUTIONS)))"; \
	  rm -f build/results/$$stem.json; \
	  $(BIN)/papermill --cwd notebooks -k python3 --no-progress-bar \
	    --execution-timeout $(CELL_TIMEOUT) \
	    -p quick $(call as_bool,$(QUICK)) -p solutions $(call as_bool,$(SOLUTIONS)) \
	    -p results_path $(CURDIR)/build/results/$$stem.json \
	    $$nb build/notebooks/$$stem.ipynb || { failed="$$failed $$stem"; continue; }; \
	  test -s build/results/$$stem.json || { echo "$$stem wrote no results JSON" >&2; failed="$$failed $$stem"; }; \
	done; \
	if [ -n "$$failed" ]; then echo "regress: failed:$$failed (executed copies in build/notebooks/)" >&2; exit 1; fi; \
	echo "regress: all $(words $(LESSON_NOTEBOOKS)) lessons ran; executed copies in build/notebooks/, results in build/results/"

# Every lesson in a cgroup limited as Binder limits a container: CPUS (a CFS quota) and MEMORY; needs root on Linux.
# Reports each lesson's time and peak memory (benchmarks/binder_like.py); LOCK=/tmp/iolab-measure.lock to share.
CPUS ?= 1
MEMORY ?= 2G
LOCK ?=
binder-like: $(VENV_STAMP)
	$(BIN)/python benchmarks/binder_like.py --cpus $(CPUS) --memory $(MEMORY) $(if $(filter 1 true True yes,$(QUICK)),--quick) \
	  --cell-timeout $(CELL_TIMEOUT) $(if $(LOCK),--lock $(LOCK)) $(LESSONS)

student: $(VENV_STAMP)
	$(BIN)/python tools/make_student.py notebooks build/student

# JupyterHub for a class on this host, as root (hub/serve.py): the lab installed in HUB_ENV where every student can
# read it, the hub on 127.0.0.1:HUB_PORT, a student copy made in each home at first login, solutions off.
# STUDENTS="ana ben cy" is the class list (accounts made for names that have none); HUB_PASSWORD (exported, not on
# the command line, which ps shows) a class password, else each student's Unix password (PAM); QUICK=1 small sizes;
# CPU_LIMIT / MEM_LIMIT are declared to the spawner, which enforces neither (README: For instructors).
HUB_ENV ?= /opt/iolab-hub
HUB_PYTHON ?= /usr/bin/python3
HUB_PORT ?= 8000
HUB_STATE ?= /var/lib/iolab-hub
STUDENTS ?=
HUB_PASSWORD ?=
CPU_LIMIT ?=
MEM_LIMIT ?=
hub: export IOLAB_HUB_PASSWORD = $(HUB_PASSWORD)
hub:
	$(PYTHON) hub/serve.py --env $(HUB_ENV) --base-python $(HUB_PYTHON) \
	  --uv-version $(UV_VERSION) --port $(HUB_PORT) --state $(HUB_STATE) --students "$(STUDENTS)" \
	  $(if $(filter 1 true True yes,$(QUICK)),--quick) --cpu-limit "$(CPU_LIMIT)" --mem-limit "$(MEM_LIMIT)"

bench: $(VENV_STAMP)
	@set -e; for script in $(sort $(wildcard benchmarks/*.py)); do \
	  echo "== $$script"; $(BIN)/python $$script; \
	done

strip: $(VENV_STAMP)
	$(BIN)/python tools/strip_notebooks.py $(NOTEBOOKS)

clean:
	rm -rf build .pytest_cache
	find . -path ./$(VENV) -prune -o -name __pycache__ -type d -exec rm -rf {} +

distclean: clean
	rm -rf $(VENV)
