# One command builds the book, one runs every test; each creates .venv and installs everything first.
#   make book   -- install, then build the HTML book (chapters execute at the `book` profile) into _build/html
#   make test   -- install, then run the unit tests and execute every chapter at the `ci` profile (papermill+nbval)
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
CI_NOTEBOOKS := _build/ci-notebooks

.PHONY: install book test test-cuda plan site pdf seeds lint benchmark clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e .
	touch $(STAMP)

install: $(STAMP)

book: $(STAMP)
ifdef FROM
	$(MAKE) --no-print-directory site FROM=$(FROM) SITE=_build/site
else
	$(BIN)/jupyter-book build . -W -n --keep-going
endif

# A browser for the HTML tests: Playwright's own Chromium if it is installed, else Debian's `chromium` (Playwright's
# download needs a CDN that these machines cannot reach; the system package installs through apt, as root).
BROWSER_STAMP := $(VENV)/.browser-stamp
$(BROWSER_STAMP): $(STAMP)
	@if [ -x "$$($(BIN)/python -c 'from playwright.sync_api import sync_playwright as s; p = s().start(); print(p.chromium.executable_path); p.stop()')" ] \
		|| command -v chromium >/dev/null; then echo "browser: found"; \
	elif command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ]; then \
		(apt-get install -y -q chromium || (apt-get update -q && apt-get install -y -q chromium)) >/dev/null; \
	else $(BIN)/python -m playwright install chromium; fi
	touch $(BROWSER_STAMP)

# Two pytest workers, each running one notebook kernel at a time with one thread: both cores busy, none
# oversubscribed (the OpenMP threads of two kernels competing for two cores slow each other down badly).
# nbval's executions are kept (tests/conftest.py), the HTML book is built from them with execution off, and the
# browser tests open every page of that site in Chromium (screenshots in _build/screenshots).
SITE_CI := _build/site-ci
test: $(STAMP) $(BROWSER_STAMP)
	rm -rf $(CI_NOTEBOOKS) _build/claims-ci $(SITE_CI)
	$(BIN)/python -m feature_learning.book.notebooks prepare --profile ci --out $(CI_NOTEBOOKS)
	BOOK_CLAIMS_DIR=$(CURDIR)/_build/claims-ci OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 \
		$(BIN)/python -m pytest -n 2 --dist loadfile \
		--nbval-lax --nbval-current-env --nbval-cell-timeout=1800 -p no:cacheprovider -p feature_learning.book.nbval_capture \
		--ignore=tests/site tests $(CI_NOTEBOOKS)
	$(MAKE) --no-print-directory site FROM=$(CI_NOTEBOOKS) CLAIMS=_build/claims-ci SITE=$(SITE_CI)
	BOOK_SITE=$(CURDIR)/$(SITE_CI)/_build/html BOOK_SITE_CLAIMS=$(CURDIR)/$(SITE_CI)/_claims \
		$(BIN)/python -m pytest -p no:cacheprovider tests/site

# On a GPU machine, before any `full` run: every chapter at `ci` with device=cuda, JOBS at a time (default 4), into
# _build/cuda-smoke; fails if a chapter crashes or fails a claim. Without CUDA it says so, runs nothing and succeeds.
test-cuda: $(STAMP)
	$(BIN)/python -m feature_learning.book.cuda_smoke --jobs $(or $(JOBS),4)

# Before renting a GPU: each chapter's `full` time and memory predicted on this machine's device from two cut-down
# runs (feature_learning.book.plan; STEPS = the smallest step count of the first run, LIMIT = seconds per chapter).
plan: $(STAMP)
	$(BIN)/python -m feature_learning.book.plan --steps $(or $(STEPS),4) --limit $(or $(LIMIT),600) \
		--json _build/plan.json $(if $(CHAPTERS),--chapters $(CHAPTERS))

# The HTML book from notebooks executed elsewhere (the ci run above, a seed sweep, a `full` run on a GPU cluster):
#   make site FROM=<folder of executed notebooks> [CLAIMS=<folder of ledgers>] [SEED=0] [SITE=_build/site]
SITE ?= _build/site
site: $(STAMP)
	$(BIN)/python -m feature_learning.book.site stage --from $(FROM) --out $(SITE) --seed $(or $(SEED),0) \
		$(if $(CLAIMS),--claims $(CLAIMS))
	BOOK_CLAIMS_DIR=$(CURDIR)/$(SITE)/_claims $(BIN)/jupyter-book build $(SITE) -W -n --keep-going

# The whole book as one PDF: the single-page HTML build (chapters from the execution cache, or FROM a folder of
# executed notebooks as for `make book FROM=...`), printed by Chromium once MathJax has typeset it.
pdf: $(STAMP) $(BROWSER_STAMP)
ifdef FROM
	$(BIN)/python -m feature_learning.book.site stage --from $(FROM) --out _build/site-pdf --seed $(or $(SEED),0) \
		$(if $(CLAIMS),--claims $(CLAIMS))
	BOOK_CLAIMS_DIR=$(CURDIR)/_build/site-pdf/_claims $(BIN)/jupyter-book build _build/site-pdf --builder singlehtml
	$(BIN)/python -m feature_learning.book.pdf _build/site-pdf/_build/singlehtml _build/pdf/book.pdf
else
	$(BIN)/jupyter-book build . --builder singlehtml
	$(BIN)/python -m feature_learning.book.pdf _build/singlehtml _build/pdf/book.pdf
endif

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
