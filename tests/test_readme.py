"""The README's example runs as printed, and the numbers in its comments hold."""

import re
import warnings
from pathlib import Path

import numpy as np

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_example_runs_and_its_claims_hold():
    code = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)[0]
    scope: dict = {}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the example must run without any warning
        warnings.filterwarnings("ignore", category=DeprecationWarning)
        exec(compile(code, str(README), "exec"), scope)
    space, lm, quality = scope["space"], scope["lm"], scope["quality"]
    truth = space.encode(np.argsort(-quality, axis=1))
    L = scope["L"]
    S = space.squared_distance_matrix
    floor = [S[L[L[:, a] >= 0, a], truth[L[:, a] >= 0]].mean() for a in range(3)]
    np.testing.assert_allclose(floor, [1.07, 0.19, 0.59], atol=0.005)
    np.testing.assert_allclose(lm.expected_sq_dist_, [1.05, 0.18, 0.57], atol=0.005)
    assert space.decode(lm.support_) == [(0, 1, 2), (2, 1, 0)]
    np.testing.assert_allclose(lm.prior_[lm.support_], [0.68, 0.32], atol=0.005)
    accuracy = np.mean(scope["pseudolabels"] == truth)
    best_lf = max(np.mean(L[L[:, a] >= 0, a] == truth[L[:, a] >= 0]) for a in range(3))
    assert round(accuracy, 2) == 0.97 and round(best_lf, 2) == 0.83
    assert list(scope["weights"].columns) == ["pseudolabel", "(0, 1, 2)", "(2, 1, 0)"]
