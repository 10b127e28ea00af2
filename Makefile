# Tributary: `make install` sets up everything, `make test` runs the tests, `sudo make run` starts the WAN.
SHELL := /bin/bash
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEB_PACKAGES := cpp gcc libc6-dev mininet iproute2 iputils-ping iperf iperf3 ethtool procps psmisc libpcap0.8 openmpi-bin libopenmpi-dev
PYTEST_ARGS ?=

.PHONY: install debs test test-fast lint run clean help experiments

help:
	@echo "make install   create .venv, install Tributary and p4kit (and, as root, the Debian packages)"
	@echo "make test      install, then run the whole test suite (root runs the Mininet tests too)"
	@echo "make test-fast the tests that need neither root nor Mininet"
	@echo "make lint      ruff"
	@echo "sudo make run  bring up the nine-city WAN with P4 switches and open the Mininet CLI"
	@echo "make clean     remove leftovers of a crashed run (namespaces, interfaces, processes)"
	@echo "sudo make experiments  run every experiment of docs/results.md (under 30 min) and regenerate it (docs/results-data.json keeps the measurements)"

install: debs $(STAMP) mininet-link

# Debian packages are only installed when missing, and only as root (a user without root gets a hint).
debs:
	@missing=""; for p in $(DEB_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = "0" ]; then \
	    echo "installing Debian packages:$$missing"; \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing) >/dev/null \
	      || { echo "apt-get install failed for:$$missing" >&2; exit 1; }; \
	  else \
	    echo "note: Debian packages missing:$$missing (run 'sudo make install' to add them; needed for the WAN)"; \
	  fi; \
	fi

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV) || python3 -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip >/dev/null 2>&1 || true
	$(BIN)/pip install -q -e '.[dev]'
	@touch $(STAMP)
	@$(MAKE) --no-print-directory mininet-link

# Debian's Mininet lives in /usr/lib/python3/dist-packages; link only that package into the venv
# (putting the whole folder on the path would drag in Debian's other Python packages).
.PHONY: mininet-link
mininet-link:
	@site=$$($(BIN)/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])'); \
	if [ -d /usr/lib/python3/dist-packages/mininet ] && [ ! -e "$$site/mininet" ]; then \
	  ln -s /usr/lib/python3/dist-packages/mininet "$$site/mininet"; fi

# pytest's exit 5 (no test collected) is not a failure of the code under test.
test: install
	@$(BIN)/python -m pytest $(PYTEST_ARGS); rc=$$?; if [ $$rc -eq 5 ]; then exit 0; fi; exit $$rc

test-fast: install
	$(BIN)/python -m pytest -m "not mininet and not root" $(PYTEST_ARGS)

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

run: install
	@if [ "$$(id -u)" != "0" ]; then echo "tributary run needs root for Mininet: use 'sudo make run'" >&2; exit 1; fi
	$(BIN)/tributary run

# EXPERIMENTS_ARGS="--only train-3,amdahl" runs a subset (scripts/experiments.py --list names them);
# docs/results.md is rendered from scripts/results_template.md and docs/results-data.json.
experiments: install
	$(BIN)/python scripts/experiments.py $(EXPERIMENTS_ARGS)

clean:
	-@test -x $(BIN)/tributary && $(BIN)/tributary clean || true
