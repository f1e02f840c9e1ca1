# One command builds the book, one runs every test; each creates .venv and installs everything first.
#   make book   -- install, then build the HTML book (chapters execute at the `book` profile) into _build/html
#   make test   -- install, then run the unit tests and execute every chapter at the `ci` profile (papermill+nbval)
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
CI_NOTEBOOKS := _build/ci-notebooks

.PHONY: install book test seeds lint benchmark clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e .
	touch $(STAMP)

install: $(STAMP)

book: $(STAMP)
	$(BIN)/jupyter-book build . -W -n --keep-going

# Two pytest workers, each running one notebook kernel at a time with one thread: both cores busy, none
# oversubscribed (the OpenMP threads of two kernels competing for two cores slow each other down badly).
test: $(STAMP)
	rm -rf $(CI_NOTEBOOKS) _build/claims-ci
	$(BIN)/python -m feature_learning.book.notebooks prepare --profile ci --out $(CI_NOTEBOOKS)
	BOOK_CLAIMS_DIR=$(CURDIR)/_build/claims-ci MPLBACKEND=Agg OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 \
		$(BIN)/python -m pytest -n 2 --dist loadfile \
		--nbval-lax --nbval-current-env --nbval-cell-timeout=1800 -p no:cacheprovider \
		tests $(CI_NOTEBOOKS)

# Seed sweep: every chosen chapter at the `ci` profile for each seed, one notebook per core (Snakemake), then
# _build/seeds/summary.json with each claim's status and value per seed. Fails unless every claim holds at every seed.
#   make seeds SEEDS="0 1 2" CHAPTERS="fourier_circuits icl_model_scale"
SEEDS ?= 0 1 2 3 4 5
CHAPTERS ?=
CORES ?= $(shell nproc 2>/dev/null || echo 2)
seeds: $(STAMP)
	PATH=$(CURDIR)/$(BIN):$$PATH $(BIN)/snakemake -s workflow/Snakefile -d $(CURDIR) --cores $(CORES) --forceall \
		--quiet rules --config profile=ci seeds="$(SEEDS)" chapters="$(CHAPTERS)"
	$(BIN)/python -m feature_learning.book.seeds check _build/seeds/summary.json

lint: $(STAMP)
	$(BIN)/ruff check lib tests book benchmarks workflow

benchmark: $(STAMP)
	$(BIN)/python benchmarks/run_chapters.py --profile $(or $(PROFILE),ci)

# The execution cache and the claims ledgers live together in _build: clean both or neither.
clean:
	rm -rf _build
