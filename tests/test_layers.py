"""The package's layers: the numerical core never imports the Snorkel-facing layers."""

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1] / "snorkel_structured"
CORE = ["spaces", "embedding.py", "noise", "estimators"]
UPPER = (
    "snorkel_structured.label_model",
    "snorkel_structured.labeling",
    "snorkel_structured.experiments",
    "snorkel_structured.end_model",
    "snorkel",
)


def _imports(path):
    """Every module a file imports (at any depth: lazy imports count)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module
            yield from (f"{node.module}.{alias.name}" for alias in node.names)


def _files(entries):
    for entry in entries:
        path = ROOT / entry
        yield from sorted(path.rglob("*.py")) if path.is_dir() else [path]


@pytest.mark.parametrize(
    "path", list(_files(CORE)), ids=lambda p: str(p.relative_to(ROOT))
)
def test_core_does_not_import_upper_layers(path):
    upward = [
        name
        for name in _imports(path)
        if any(name == top or name.startswith(top + ".") for top in UPPER)
    ]
    assert upward == [], f"{path.name} imports {upward}"


def test_persistence_does_not_import_the_package_init():
    # "from snorkel_structured import X" or "import snorkel_structured" reads the
    # package's __init__ (which re-exports the label models): an upward import.
    assert "snorkel_structured" not in set(_imports(ROOT / "_persistence.py"))


@pytest.mark.parametrize("name", ["_persistence.py", "_persistence_codec.py"])
def test_persistence_does_not_import_the_models_it_saves(name):
    # The models import persistence (their save/load); the format's registry of
    # stored classes names only the numerical core's.
    upward = [
        imported
        for imported in _imports(ROOT / name)
        if any(imported == top or imported.startswith(top + ".") for top in UPPER)
    ]
    assert upward == [], f"{name} imports {upward}"
