"""The package's import layers: a module imports only from its own layer or the layers below it (no cycles).

Parsed from the source (every ``import`` statement, also those inside functions), not from ``sys.modules``.
"""

import ast
from pathlib import Path

import feature_learning

ROOT = Path(feature_learning.__file__).resolve().parent

# Lowest first. A module takes the layer of the longest prefix that names it.
#   0  the package root, the book machinery (profiles, claims, display, Sphinx) and the pure functions of tensors
#      shared by training and measurement (losses, metrics) and the claims' statistics (estimates, nulls, standard
#      errors), which import nothing from the package;
#   1  data models;  2  models;  3  inference (generation with the models);  4  training loops;
#   5  measurements;  6  theory (closed forms, which may evaluate models and data);  7  plotting;
#   8  experiments (one module per chapter: sizes, recipes, runs);  9  tooling that drives whole chapters (plan).
LAYERS = {
    "feature_learning": 0,
    "feature_learning.book": 0,
    "feature_learning.training.losses": 0,
    "feature_learning.measure.metrics": 0,
    "feature_learning.measure.statistics": 0,
    # how a figure reads at the book's column: the book's glue_figure checks every figure with it
    "feature_learning.plotting.legibility": 0,
    "feature_learning.data": 1,
    "feature_learning.models": 2,
    "feature_learning.inference": 3,
    "feature_learning.training": 4,
    "feature_learning.measure": 5,
    "feature_learning.theory": 6,
    "feature_learning.plotting": 7,
    "feature_learning.experiments": 8,
    # build tooling that drives whole chapters (the plan command patches a theory recipe's step count)
    "feature_learning.book.plan": 9,
}
# import nothing from the package
PURE = {"feature_learning.training.losses", "feature_learning.measure.metrics", "feature_learning.measure.statistics",
        "feature_learning.plotting.legibility"}

# Upward imports that only re-export a moved function from a module the chapter ports will delete (with its
# notebook import). Remove an entry when its module goes; the test fails while an entry is stale.
LEGACY_REEXPORTS: set[tuple[str, str]] = set()  # none left: every chapter port has deleted its old module


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def exists(name: str) -> bool:
    rel = Path(*name.split("."))
    return (ROOT.parent / rel).with_suffix(".py").exists() or (ROOT.parent / rel / "__init__.py").exists()


def imported_modules(path: Path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            # "from feature_learning.measure import contamination" imports the submodule
            names = [f"{node.module}.{alias.name}" if exists(f"{node.module}.{alias.name}") else node.module
                     for alias in node.names]
        else:
            assert not (isinstance(node, ast.ImportFrom) and node.level), f"relative import in {path}"
            continue
        out.update(n for n in names if n == "feature_learning" or n.startswith("feature_learning."))
    return out


def layer(name: str) -> int:
    best = max((p for p in LAYERS if name == p or name.startswith(p + ".")), key=len)
    return LAYERS[best]


def all_edges() -> set[tuple[str, str]]:
    edges = set()
    for path in sorted(ROOT.rglob("*.py")):
        source = module_name(path)
        for target in imported_modules(path):
            assert exists(target), f"{source} imports {target}, which does not exist"
            edges.add((source, target))
    return edges


def test_every_module_has_a_layer():
    for path in ROOT.rglob("*.py"):
        layer(module_name(path))  # raises on a module outside every prefix


def test_no_module_imports_from_a_higher_layer():
    edges = all_edges()
    upward = {(s, t) for s, t in edges if layer(t) > layer(s)} - LEGACY_REEXPORTS
    assert not upward, "imports against the layers:\n" + "\n".join(f"{s} -> {t}" for s, t in sorted(upward))
    impure = {(s, t) for s, t in edges if s in PURE}
    assert not impure, f"pure modules import from the package: {sorted(impure)}"
    stale = LEGACY_REEXPORTS - edges
    assert not stale, f"stale entries in LEGACY_REEXPORTS (remove them): {sorted(stale)}"


def test_the_layer_check_sees_an_upward_import(tmp_path):
    """The parser finds imports inside functions and submodule imports written as ``from package import name``."""
    path = tmp_path / "probe.py"
    path.write_text("def f():\n    from feature_learning.measure import contamination\n"
                    "    import feature_learning.training.loop\n")
    found = imported_modules(path)
    assert found == {"feature_learning.measure.contamination", "feature_learning.training.loop"}
    assert layer("feature_learning.measure.contamination") > layer("feature_learning.data.xor")
