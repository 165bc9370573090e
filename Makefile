# Two commands for a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test wheel-check install browser-deps service-deps render-deps bench lint docs clean

$(STAMP): setup.cfg pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	# A CPU build that lies on disk; an open range would pull a multi-GB CUDA build.
	$(BIN)/python -m pip install --quiet torch==2.13.0
	# On a GPU machine install the CUDA build of the same version first, by hand, from PyTorch's index
	# for your CUDA (e.g. `$(BIN)/python -m pip install torch==2.13.0 --index-url
	# https://download.pytorch.org/whl/cu126`); the pin above is then met. Check: benchmarks/gpu.py.
	# Every extra (web app, APEC's optimal transport, TensorBoard, PostgreSQL) and the test tools.
	$(BIN)/python -m pip install --quiet -e '.[all,dev]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	WANDB_MODE=offline $(BIN)/rlkit demo

# Debian's headless Chromium for the Playwright tests (a `playwright install` download is not used).
browser-deps:
	@if [ -x /usr/bin/chromium ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver; \
	else echo "no /usr/bin/chromium and not root with apt-get: the browser tests will be skipped"; fi

# Mesa's headless EGL for the DMControl pixel tasks (envs/dmc.py renders with MUJOCO_GL=egl).
render-deps:
	@if dpkg -s libegl1 libopengl0 libegl-mesa0 libgl1-mesa-dri >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libegl1 libopengl0 libegl-mesa0 libgl1-mesa-dri; \
	else echo "no EGL and not root with apt-get: the DMControl pixel tests will fail"; fi

# Debian's PostgreSQL server binaries for the label-store tests (each test session starts its own
# throwaway cluster from /usr/lib/postgresql/*/bin; no system service is used).
service-deps:
	@if ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql; \
	else echo "no PostgreSQL server and not root with apt-get: the PostgreSQL store tests will be skipped"; fi

test: $(STAMP) browser-deps service-deps render-deps wheel-check
	WANDB_MODE=offline $(BIN)/python -m pytest -q

# The built wheel installed in a fresh venv outside the checkout runs `rlkit --help`, every
# `rlkit` command the docs show (with --print-config) and a few for real at tiny budgets
# (.ci/docs_commands.py; the editable install of `make install` would hide a module left out of it).
wheel-check: $(STAMP)
	bash .ci/wheel-check

bench: $(STAMP)
	for b in benchmarks/*.py; do $(BIN)/python $$b || exit 1; done

# ruff, then mypy over rlkit/ and envs/ (its settings: [tool.mypy] in pyproject.toml).
lint: $(STAMP)
	$(BIN)/ruff check rlkit envs tests benchmarks experiments
	$(BIN)/mypy

# The documentation site (mkdocs.yml: docs/*.md and an API reference from the docstrings) into
# site/, strictly: a broken link, a page left out of the nav or a docstring mkdocstrings cannot
# read fails the build. Nothing is fetched (no web fonts, no CDN).
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

clean:
	rm -rf $(VENV) runs wandb
