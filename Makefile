# Two commands for a fresh machine: `make plan` and `make test`. Both create .venv when missing.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STACK  ?= dev

.PHONY: plan render test bench clean

$(VENV)/.installed: requirements.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	touch $@

plan: $(VENV)/.installed
	$(PY) -m infra.offline plan --stack $(STACK)

render: $(VENV)/.installed
	$(PY) -m infra.offline render --stack $(STACK) --out build/render/$(STACK)

test: $(VENV)/.installed
	$(PY) -m pytest -q

clean:
	rm -rf $(VENV) build .pytest_cache

bench: $(VENV)/.installed
	$(PY) -m infra.offline.bench
