"""The README's example runs as printed, and the numbers in its comments hold.

The figures are read from the README's comments (not copied here), then recomputed
from the example's own data, whose true orderings it keeps in ``quality``.
"""

import ast
import re
import warnings
from pathlib import Path

import numpy as np

from snorkel_structured.aggregators import kemeny

README = Path(__file__).resolve().parents[1] / "README.md"


def _numbers(text):
    return [float(x) for x in re.findall(r"\d+(?:\.\d+)?", text)]


def test_readme_example_runs_and_its_claims_hold():
    code = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)[0]
    claims = {
        name: re.search(rf"^{re.escape(name)}.*?#\s*(.*)$", code, re.M).group(1)
        for name in (
            "lm.expected_sq_dist_",
            "space.decode(lm.support_)",
            "pseudolabels",
        )
    }
    estimate, floor_claim = re.findall(r"\[[^\]]*\]", claims["lm.expected_sq_dist_"])
    support, prior_claim = re.match(
        r"(\[.*\]), prior_ (.*?) \(", claims["space.decode(lm.support_)"]
    ).groups()
    accuracy_claim, best_claim, kemeny_claim = _numbers(claims["pseudolabels"])

    scope: dict = {}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the example must run without any warning
        warnings.filterwarnings("ignore", category=DeprecationWarning)
        exec(compile(code, str(README), "exec"), scope)
    space, lm, quality = scope["space"], scope["lm"], scope["quality"]
    truth = space.from_scores(quality)  # each row's products, best quality first
    L = scope["L"]
    S = space.squared_distance_matrix
    votes = [L[:, a] >= 0 for a in range(3)]
    floor = [S[L[v, a], truth[v]].mean() for a, v in enumerate(votes)]
    np.testing.assert_allclose(floor, ast.literal_eval(floor_claim), atol=0.005)
    np.testing.assert_allclose(
        lm.expected_sq_dist_, ast.literal_eval(estimate), atol=0.005
    )
    assert space.decode(lm.support_) == ast.literal_eval(support)
    np.testing.assert_allclose(
        lm.prior_[lm.support_], _numbers(prior_claim), atol=0.005
    )
    accuracy = np.mean(scope["pseudolabels"] == truth)
    best_lf = max(np.mean(L[v, a] == truth[v]) for a, v in enumerate(votes))
    kemeny_accuracy = np.mean(kemeny(L, space) == truth)
    assert round(100 * accuracy) == accuracy_claim
    assert round(100 * best_lf) == best_claim
    assert round(100 * kemeny_accuracy) == kemeny_claim
    # loss weights cover the support labels with prior >= 5% (their default min_prior)
    heavy = [
        y
        for y, p in zip(ast.literal_eval(support), _numbers(prior_claim), strict=True)
        if p >= 0.05
    ]
    assert list(scope["weights"].columns) == ["pseudolabel"] + [str(y) for y in heavy]
