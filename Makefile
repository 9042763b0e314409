# Two commands matter: `make demo` (main job on the embedded default) and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# The CPU torch wheel lies in /opt/wheels on these machines; elsewhere pip finds it on PyPI.
FIND_LINKS := $(if $(wildcard /opt/wheels),--find-links /opt/wheels,)
export DAGSTER_HOME ?= $(CURDIR)/dagster_home
export HF_HUB_OFFLINE ?= 1
export TOKENIZERS_PARALLELISM ?= false
# The browser test drives Debian's Chromium; `make test` installs it when missing (as root or via sudo -n),
# and Debian's PostgreSQL server for the tests that run Dagster's instance on it.
CHROMIUM := /usr/bin/chromium

.PHONY: install demo test ui lint bench clean postgres

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q $(FIND_LINKS) -e '.[dev]'
	touch $@

install: $(BIN)/.installed

demo: install
	@$(BIN)/nexus-memory ingest nexus_memory/sample_data/events.jsonl --format jsonl
	@HF_HUB_DISABLE_PROGRESS_BARS=1 $(BIN)/nexus-memory pipeline
	@echo; echo 'Example: nexus-memory recall "Why did the Atlas launch move?" --sources --max-results 3'
	@HF_HUB_DISABLE_PROGRESS_BARS=1 $(BIN)/nexus-memory recall "Why did the Atlas launch move?" --sources --max-results 3
	@echo; echo "Next: make ui, then open http://127.0.0.1:3000 (asset lineage, partitions, run logs)"

test: install $(CHROMIUM) postgres
	$(BIN)/python -m pytest -q

$(CHROMIUM):
	@bash scripts/ensure-chromium.sh $@

postgres:
	@bash scripts/ensure-postgres.sh

ui: install
	$(BIN)/dagster dev -h 127.0.0.1 -p 3000 -w workspace.yaml

lint: install
	$(BIN)/ruff check . && $(BIN)/ruff format --check . && $(BIN)/lint-imports --no-cache

clean:
	rm -rf $(VENV) data dagster_home/storage dagster_home/history dagster_home/schedules dagster_home/logs
