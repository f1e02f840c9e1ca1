"""The package's import layers: a module imports only from its own layer or the layers below it (no cycles).

The order is read from CONTRIBUTING.md ("Where code lives"), the one place it is written; README.md shows the same line.
Parsed from the source (every ``import`` statement, also those inside functions), not from ``sys.modules``.
"""

import ast
import re
from pathlib import Path

import feature_learning

ROOT = Path(feature_learning.__file__).resolve().parent
REPO = ROOT.parents[1]
ORDER_LINE = re.compile(r"^Layers, lowest first: `([a-z_]+(?: < [a-z_]+)+)`$", re.MULTILINE)
PURE_LINE = re.compile(r"^Pure, importing nothing from the package[^:]*: (.+)$", re.MULTILINE)


def written_order(text: str) -> list[str]:
    (order,) = ORDER_LINE.findall(text)
    return order.split(" < ")


CONTRIBUTING = (REPO / "CONTRIBUTING.md").read_text()
ORDER = written_order(CONTRIBUTING)
# the pure modules import nothing from the package, so they sit below every layer (-1); the package root at 0
PURE = {f"feature_learning.{name}" for name in re.findall(r"`([a-z_.]+)`", PURE_LINE.search(CONTRIBUTING).group(1))}
# Lowest first. A module takes the layer of the longest prefix that names it; a package experiments/<chapter>/ is
# the experiments layer like a single module experiments/<chapter>.py.
LAYERS = {"feature_learning": 0, **{f"feature_learning.{name}": i + 1 for i, name in enumerate(ORDER)},
          **dict.fromkeys(PURE, -1)}

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
            # "from feature_learning.measure import fourier" imports the submodule
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
    path.write_text("def f():\n    from feature_learning.measure import fourier\n"
                    "    import feature_learning.training.loop\n")
    found = imported_modules(path)
    assert found == {"feature_learning.measure.fourier", "feature_learning.training.loop"}
    assert layer("feature_learning.measure.fourier") > layer("feature_learning.data.xor")


def test_one_order_in_contributing_readme_and_the_package():
    assert ORDER == ["book", "data", "models", "inference", "training", "measure", "theory", "plotting",
                     "experiments", "build"]
    assert f"Layers, lowest first: `{' < '.join(ORDER)}`" in (REPO / "README.md").read_text()
    folders = {p.name for p in ROOT.iterdir() if (p / "__init__.py").exists()}
    assert folders == set(ORDER), f"sub-packages without a layer or layers without a folder: {folders ^ set(ORDER)}"
    assert all(exists(name) for name in PURE) and PURE >= {"feature_learning.training.losses",
                                                          "feature_learning.measure.metrics"}


def test_a_chapter_package_is_the_experiments_layer():
    experiments = LAYERS["feature_learning.experiments"]
    assert layer("feature_learning.experiments.feature_emergence.sizes") == experiments
    assert layer("feature_learning.experiments.feature_emergence") == experiments
    assert layer("feature_learning.build.gpu") > experiments > layer("feature_learning.book.chapter")
    assert layer("feature_learning.measure.metrics") < layer("feature_learning.book.claims")
