# One command builds the book, one runs every test; each creates .venv and installs everything first.
#   make book   -- install, execute the chapters at the `book` profile (several at a time, one thread each, cached),
#                  then build the HTML book from those executions into _build/html
#   make test   -- install, run the unit tests, execute every chapter at the `ci` profile the same way (uncached),
#                  build the HTML book from those executions and open it in a browser
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
CI_NOTEBOOKS := _build/ci-notebooks
# The one executor of both commands: a pool of one kernel per usable core, one OpenMP/MKL/torch thread each,
# progress lines as chapters start and finish, failures listed at the end (feature_learning.build.execute).
EXECUTE := $(BIN)/python -m feature_learning.build.execute run
# Each phase's wall time: `$(call phase,<name>,start|end)` appends a line to _build/phases.tsv (from the shell, so the
# install is timed before the package exists); PHASES prints those of this command (feature_learning.build.phases).
STARTED := $(shell date +%s)
phase = mkdir -p _build && printf '%s\t%s\t%s\n' "$(1)" "$(2)" "$$(date +%s)" >> _build/phases.tsv
PHASES = $(BIN)/python -m feature_learning.build.phases --since $(STARTED)

.PHONY: install book test nbval test-cuda gpu site pdf seeds lint benchmark clean

# --no-compile: pip would byte-compile every installed module (about 20 s of a 67 s install on two cores, most of it
# for modules no chapter imports); Python compiles what is imported, once, on first use.
$(STAMP): pyproject.toml
	@$(call phase,install,start)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --no-compile --disable-pip-version-check -e .
	touch $(STAMP)
	@$(call phase,install,end)

install: $(STAMP)

# The chapters execute into the cache $(BOOK_RUNS) (executed copies, ledgers, records keyed on the library,
# dependencies, device, code cells and parameters: an unchanged chapter is not executed again), then the site is
# staged from them and built with execution off (not rebuilt if nothing changed). A failed chapter still leaves its
# executed notebook; the site is built if it can be, and the command fails at the end with the list of failures.
#   make book [PROFILE=book] [CHAPTERS="looped_transformers nuclear_norm"] [WORKERS=n]
BOOK_PROFILE = $(or $(PROFILE),book)
BOOK_RUNS = _build/executed/$(BOOK_PROFILE)
book: $(STAMP)
ifdef FROM
	$(MAKE) --no-print-directory site FROM=$(FROM) SITE=_build/site
else
	@rc=0; $(call phase,chapters,start); \
	$(EXECUTE) --profile $(BOOK_PROFILE) --out $(BOOK_RUNS) $(if $(CHAPTERS),--chapters $(CHAPTERS)) \
		$(if $(WORKERS),--workers $(WORKERS)) || rc=1; \
	$(call phase,chapters,end); $(call phase,site,start); \
	$(BIN)/python -m feature_learning.build.site build --from $(BOOK_RUNS) --claims $(BOOK_RUNS)/_claims \
		--out _build/site-book --html-root . $(if $(CHAPTERS),--partial) || rc=1; \
	$(call phase,site,end); $(PHASES); \
	if [ $$rc != 0 ]; then $(BIN)/python -m feature_learning.build.execute status --out $(BOOK_RUNS); fi; \
	if [ $$rc = 0 ]; then echo "book: _build/html/index.html"; fi; exit $$rc
endif

# A browser for the HTML tests: Playwright's own Chromium if it is installed, else Debian's `chromium` (Playwright's
# download needs a CDN that these machines cannot reach; the system package installs through apt, as root).
BROWSER_STAMP := $(VENV)/.browser-stamp
$(BROWSER_STAMP): $(STAMP)
	@$(call phase,browser,start)
	@if [ -x "$$($(BIN)/python -c 'from playwright.sync_api import sync_playwright as s; p = s().start(); print(p.chromium.executable_path); p.stop()')" ] \
		|| command -v chromium >/dev/null; then echo "browser: found"; \
	elif command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ]; then \
		(apt-get install -y -q chromium || (apt-get update -q && apt-get install -y -q chromium)) >/dev/null; \
	else $(BIN)/python -m playwright install chromium; fi
	touch $(BROWSER_STAMP)
	@$(call phase,browser,end)

# The chapters execute exactly as for `make book` (the same executor: both cores busy, one thread per kernel, none
# oversubscribed), at the `ci` profile and from scratch; then the unit tests (two pytest workers; the notebook
# tests read this run's executions through BOOK_EXECUTED). The HTML book is built from those executions with
# execution off, and the browser tests open every page of that site in Chromium (screenshots in _build/screenshots),
# two at a time (2 min 28 s -> 1 min 49 s on two cores; four at a time 2 min 10 s). While the site builds (one core),
# `make nbval` re-executes the fastest chapter on the other core and compares its outputs with this run's.
SITE_CI := _build/site-ci
test: $(STAMP) $(BROWSER_STAMP)
	rm -rf $(CI_NOTEBOOKS) $(SITE_CI)
	@rc=0; $(call phase,chapters,start); $(EXECUTE) --profile ci --out $(CI_NOTEBOOKS) --force || rc=1; \
	$(call phase,chapters,end); $(call phase,unit and notebook tests,start); \
	BOOK_EXECUTED=$(CURDIR)/$(CI_NOTEBOOKS) OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 \
		$(BIN)/python -m pytest -n 2 -p no:cacheprovider --ignore=tests/site tests || rc=1; \
	$(call phase,unit and notebook tests,end); \
	if [ $$rc != 0 ]; then $(PHASES); $(BIN)/python -m feature_learning.build.execute status --out $(CI_NOTEBOOKS); fi; \
	exit $$rc
	@rc=0; $(call phase,site and nbval,start); $(MAKE) --no-print-directory nbval > _build/nbval.log 2>&1 & nbval=$$!; \
	$(MAKE) --no-print-directory site FROM=$(CI_NOTEBOOKS) CLAIMS=$(CI_NOTEBOOKS)/_claims SITE=$(SITE_CI) || rc=1; \
	wait $$nbval || rc=1; tail -n 40 _build/nbval.log; $(call phase,site and nbval,end); \
	if [ $$rc != 0 ]; then $(PHASES); fi; exit $$rc
	@rc=0; $(call phase,browser tests,start); BOOK_SITE=$(CURDIR)/$(SITE_CI)/_build/html \
		BOOK_SITE_CLAIMS=$(CURDIR)/$(SITE_CI)/_claims $(BIN)/python -m pytest -n 2 -p no:cacheprovider tests/site \
		|| rc=1; $(call phase,browser tests,end); $(PHASES); exit $$rc

# Same seed and profile, same outputs: re-execute chapters that `make test` executed (_build/ci-notebooks) with
# `pytest --nbval` and compare every output with the stored one. Glued wall times are left out by name
# (feature_learning.build.nbval_outputs); memory addresses, timestamps and clock readings are replaced on both sides
# (tests/nbval_sanitize.cfg). Figures (PNG) are not compared; the numbers they draw are.
#   make nbval [NBVAL_CHAPTERS="looped_transformers nuclear_norm"]   (default: the fastest chapter)
NBVAL_CHAPTERS ?= looped_transformers
NBVAL_NOTEBOOKS = $(foreach c,$(NBVAL_CHAPTERS),$(wildcard $(CI_NOTEBOOKS)/book/chapters/*/$(c).ipynb))
nbval: $(STAMP)
	@if [ -z "$(strip $(NBVAL_NOTEBOOKS))" ]; then \
		echo "nbval: no executed copy of $(NBVAL_CHAPTERS) under $(CI_NOTEBOOKS): run make test first"; exit 1; fi
	BOOK_CLAIMS_DIR=$(CURDIR)/_build/nbval-claims OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 \
		$(BIN)/python -m pytest -p no:cacheprovider -p feature_learning.build.nbval_outputs --nbval \
		--nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg $(NBVAL_NOTEBOOKS)

# On a GPU machine, before any `full` run: every chapter at `ci` with device=cuda, JOBS at a time (default 4), into
# _build/cuda-smoke; fails if a chapter crashes or fails a claim. Without CUDA it says so, runs nothing and succeeds.
test-cuda: $(STAMP)
	$(BIN)/python -m feature_learning.build.cuda_smoke --jobs $(or $(JOBS),4)

# On a machine with one GPU, one command for the time it is lent: the CUDA smoke of every chapter, then every chapter
# whose stored `full` run (results/full) is missing, failing, stopped or of other sizes, longest-unverified first, one
# at a time, each stopped at its own limit (SIGTERM, then SIGKILL 20 s later) and all by DEADLINE (a unix time, or
# minutes from now); each record is stored into results/full as its run ends (feature_learning.build.gpu). It first
# prints what each chapter's last stored run took and on what, and which will run. Where pip cannot install (no
# network) it runs on the machine's own Python, which must have torch with CUDA, and says so. A copy of the tree without
# its .git cannot name its commit for the records: give it as BOOK_COMMIT=<hash> in the environment.
#   make gpu DEADLINE=55 [CHAPTERS="gemfilter contrastive"] [NO_SMOKE=1]   PLAN=1: only the table   DRY_RUN=1: the
#   same path on the CPU (looped transformers at ci, into a temporary folder, never results/full), for CI
gpu:
	@if PIP_TIMEOUT=10 PIP_RETRIES=1 $(MAKE) --no-print-directory install; then py=$(CURDIR)/$(BIN)/python; \
	else py=$$(command -v python3); echo "make gpu: could not install the pinned environment (no network?); using \
	the machine's own Python $$py, $$($$py -c 'import torch; print("torch", torch.__version__, "CUDA", \
	torch.cuda.is_available())' 2>&1 | tail -1)"; fi; \
	PYTHONPATH=$(CURDIR)/lib $$py -m feature_learning.build.gpu $(if $(DRY_RUN),--dry-run) $(if $(PLAN),--plan) \
		$(if $(DEADLINE),--deadline $(DEADLINE)) $(if $(CHAPTERS),--chapters $(CHAPTERS)) $(if $(NO_SMOKE),--no-smoke)

# The HTML book from notebooks executed elsewhere (the ci run above, a seed sweep, a `full` run on a GPU cluster):
#   make site FROM=<folder of executed notebooks> [CLAIMS=<folder of ledgers>] [SEED=0] [SITE=_build/site]
SITE ?= _build/site
site: $(STAMP)
	$(BIN)/python -m feature_learning.build.site build --from $(FROM) --out $(SITE) --seed $(or $(SEED),0) \
		$(if $(CLAIMS),--claims $(CLAIMS))

# The whole book as one PDF: the single-page HTML build (chapters from `make book`'s execution cache, executing
# what is missing or stale, or FROM a folder of executed notebooks as for `make book FROM=...`), printed by Chromium
# once MathJax has typeset it.
pdf: $(STAMP) $(BROWSER_STAMP)
ifndef FROM
	$(EXECUTE) --profile $(BOOK_PROFILE) --out $(BOOK_RUNS)
endif
	$(BIN)/python -m feature_learning.build.site stage --from $(or $(FROM),$(BOOK_RUNS)) --out _build/site-pdf \
		--seed $(or $(SEED),0) $(if $(FROM),$(if $(CLAIMS),--claims $(CLAIMS)),--claims $(BOOK_RUNS)/_claims)
	BOOK_CLAIMS_DIR=$(CURDIR)/_build/site-pdf/_claims $(BIN)/jupyter-book build _build/site-pdf --builder singlehtml
	$(BIN)/python -m feature_learning.build.pdf _build/site-pdf/_build/singlehtml _build/pdf/book.pdf

# Seed sweep: every chosen chapter at the `ci` profile for each seed, one notebook per core (Snakemake), then
# _build/seeds/summary.json with each claim's status and value per seed. Fails unless every claim holds at every seed.
#   make seeds SEEDS="0 1 2" CHAPTERS="fourier_circuits icl_model_scale"
SEEDS ?= 0 1 2 3 4 5
CHAPTERS ?=
CORES ?= $(shell nproc 2>/dev/null || echo 2)
seeds: $(STAMP)
	PATH=$(CURDIR)/$(BIN):$$PATH $(BIN)/snakemake -s workflow/Snakefile -d $(CURDIR) --cores $(CORES) --forceall \
		--quiet rules --config profile=ci seeds="$(SEEDS)" chapters="$(CHAPTERS)"
	$(BIN)/python -m feature_learning.build.seeds check _build/seeds/summary.json

lint: $(STAMP)
	$(BIN)/ruff check lib tests book benchmarks workflow

benchmark: $(STAMP)
	$(BIN)/python benchmarks/run_chapters.py --profile $(or $(PROFILE),ci)

# The execution cache and the claims ledgers live together in _build: clean both or neither.
clean:
	rm -rf _build
