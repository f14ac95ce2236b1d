"""The packaging files agree with each other and with what the README promises."""
from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
REQUIREMENT = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(.*?)\s*$")


def parse_requirement(text: str) -> tuple[str, str]:
    """('numpy', '>=1.26') from 'numpy >=1.26'; names normalised as in PEP 503."""
    match = REQUIREMENT.match(text)
    if match is None:
        raise ValueError(f"cannot parse requirement {text!r}")
    name, spec = match.groups()
    return re.sub(r"[-_.]+", "-", name).lower(), spec.replace(" ", "")


@pytest.fixture(scope="module")
def pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


@pytest.fixture(scope="module")
def conda_requirements() -> dict[str, str]:
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    entries = [dep for dep in env["dependencies"] if isinstance(dep, str)]
    for dep in env["dependencies"]:  # packages conda takes from PyPI, under "- pip:"
        if isinstance(dep, dict):
            entries += list(dep.get("pip", []))
    parsed = dict(parse_requirement(dep) for dep in entries)
    parsed.pop("pip", None)  # conda's own tool, not a qpviz dependency
    return parsed


def test_parse_requirement_normalises_names_and_spaces():
    assert parse_requirement("pytest_Playwright >= 0.4") == ("pytest-playwright", ">=0.4")
    assert parse_requirement("numpy") == ("numpy", "")
    with pytest.raises(ValueError, match="cannot parse"):
        parse_requirement(">=1.0")


def test_environment_yml_lists_the_same_dependencies_as_pyproject(pyproject, conda_requirements):
    project = pyproject["project"]
    pip_requirements = dict(parse_requirement(dep) for dep in project["dependencies"])
    pip_requirements.update(parse_requirement(dep) for dep in project["optional-dependencies"]["test"])
    pip_requirements["python"] = project["requires-python"]
    assert conda_requirements == pip_requirements


def test_runtime_and_test_dependencies_required_by_the_design(pyproject):
    runtime = {parse_requirement(dep)[0] for dep in pyproject["project"]["dependencies"]}
    test = {parse_requirement(dep)[0] for dep in pyproject["project"]["optional-dependencies"]["test"]}
    assert {"numpy", "scipy", "numba", "panel", "bokeh", "param", "tqdm"} <= runtime
    assert "holoviews" not in runtime  # no module imports it (the pages draw with Bokeh directly)
    assert {"pytest", "hypothesis", "mpmath", "playwright", "pytest-playwright"} <= test


def test_pytest_configuration_is_strict(pyproject):
    options = pyproject["tool"]["pytest"]["ini_options"]
    assert options["filterwarnings"][0] == "error"
    assert "--strict-markers" in options["addopts"]
    assert options["xfail_strict"] is True
    assert options["testpaths"] == ["tests"]
    assert any(marker.startswith("browser:") for marker in options["markers"])


def test_readme_quick_start_has_exactly_the_two_script_commands():
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```(?:bash|sh)?\n(.*?)```", section, flags=re.S)
    commands = [line.strip() for block in blocks for line in block.splitlines() if line.strip() and not line.strip().startswith("#")]
    assert commands == ["bash scripts/serve", "bash scripts/test"]
    for command in commands:
        assert (ROOT / command.split()[1]).is_file()


def test_ci_runs_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text()
    assert "set -euo pipefail" in ci
    assert [line for line in ci.splitlines() if line.startswith("bash ")] == ["bash scripts/test"]
