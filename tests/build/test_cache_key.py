"""The book's execution cache is cleared when anything that can change a chapter's numbers changes."""

from feature_learning.build.cache_key import KEY_FILE, evict_if_stale, inputs


def _lib(tmp_path):
    lib = tmp_path / "src" / "pkg"
    (lib / "sub").mkdir(parents=True)
    (lib / "__init__.py").write_text("")
    (lib / "sub" / "sizes.py").write_text("WIDTH = 64\n")
    return lib


def test_a_change_in_the_library_or_a_version_changes_the_inputs(tmp_path):
    lib = _lib(tmp_path)
    before = inputs(lib)
    assert before == inputs(lib)
    assert before["device"] == "cpu" or before["device"].startswith("cuda:")
    (lib / "sub" / "sizes.py").write_text("WIDTH = 128\n")  # a profile's size, say
    after = inputs(lib)
    assert after["library"] != before["library"]
    assert {k: v for k, v in after.items() if k != "library"} == {k: v for k, v in before.items() if k != "library"}


def test_a_new_stored_full_run_changes_the_inputs(tmp_path):
    """Chapters paste their stored full run (results/full) into the page: a new one must execute them again."""
    lib, project = _lib(tmp_path), tmp_path / "project"
    (project / "results" / "full").mkdir(parents=True)
    before = inputs(lib, project)
    (project / "results" / "full" / "demo.json").write_text('{"chapter": "demo"}\n')
    after = inputs(lib, project)
    assert after["library"] != before["library"]
    (project / "results" / "full" / "demo.json").write_text('{"chapter": "demo", "seconds": 3}\n')
    assert inputs(lib, project)["library"] != after["library"]


def test_the_stored_smoke_diagnostics_and_seed_sweep_change_the_inputs(tmp_path):
    """Chapters also read the CUDA smoke and the diagnostics (GemFilter, simplicity bias), and grade their source
    results with the stored seed sweep: a new one of any executes the chapters again."""
    lib, project = _lib(tmp_path), tmp_path / "project"
    for folder in ("full", "diagnostics", "seeds"):
        (project / "results" / folder).mkdir(parents=True)
    keys = [inputs(lib, project)["library"]]
    (project / "results" / "cuda-smoke.json").write_text('{"chapters": {}}\n')
    keys.append(inputs(lib, project)["library"])
    (project / "results" / "diagnostics" / "demo.txt").write_text("t mass\n")
    keys.append(inputs(lib, project)["library"])
    assert len(set(keys)) == 3
    (project / "results" / "seeds" / "summary.json").write_text("{}\n")
    assert inputs(lib, project)["library"] != keys[-1]


def test_a_stale_cache_is_cleared_and_a_fresh_one_kept(tmp_path):
    cache = tmp_path / ".jupyter_cache"
    values = {"library": "a", "torch": "2.13.0", "device": "cpu"}
    assert not evict_if_stale(cache, values)  # empty: nothing to evict, key recorded
    (cache / "global.db").write_text("records")
    assert not evict_if_stale(cache, values) and (cache / "global.db").exists()  # same key: reused
    assert evict_if_stale(cache, {**values, "library": "b"})  # library changed: the stale entry goes
    assert not (cache / "global.db").exists() and (cache / KEY_FILE).exists()
    (cache / "global.db").write_text("records")
    assert evict_if_stale(cache, {**values, "library": "b", "device": "cuda:H100"})  # another device class
