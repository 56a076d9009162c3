# `make test` and `make eval` set themselves up: the first run creates .venv and installs
# everything (~2 min); later runs reinstall only when pyproject.toml changed.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
export HF_HUB_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

.PHONY: setup test eval notebooks clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	# torch first, pinned: pip then takes the local CPU wheel instead of a multi-GB CUDA build
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e '.[all]'
	touch $(STAMP)

test: $(STAMP)
	$(PY) -m pytest

eval: $(STAMP)
	$(PY) -m powercontext.eval sweep --all

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis results
