"""pyproject.toml (pip) and environment.yml (conda) must list the same dependencies."""

from pathlib import Path

import tomllib
import yaml

ROOT = Path(__file__).resolve().parents[2]


def test_pip_and_conda_dependencies_agree():
    pip_deps = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"])
    conda = yaml.safe_load((ROOT / "environment.yml").read_text())
    (pip_section,) = [d["pip"] for d in conda["dependencies"] if isinstance(d, dict) and "pip" in d]
    conda_deps = {d for d in pip_section if not d.startswith("-e")}
    assert pip_deps == conda_deps, (
        f"only in pyproject.toml: {pip_deps - conda_deps}; only in environment.yml: {conda_deps - pip_deps}"
    )


def test_torch_is_pinned_to_the_cpu_wheel_series():
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    assert "torch==2.13.*" in deps
