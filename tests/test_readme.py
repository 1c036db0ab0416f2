"""The README's example runs as printed, and the numbers in its comments hold.

The figures are read from the README's comments (not copied here), then recomputed
from the example's own data, whose true orderings it keeps in ``quality``.
"""

import ast
import re
import warnings
from pathlib import Path

import numpy as np
import pytest

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


def _quick_start():
    section = README.read_text().split("## Quick start", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```bash\n(.*?)```", section, re.S).group(1)
    return section, [line for line in block.splitlines() if line.strip()]


def test_quick_start_is_two_command_lines_that_parse():
    import shlex
    import tomllib

    from snorkel_structured.experiments import cli

    _, lines = _quick_start()
    assert len(lines) == 2, lines
    extras = tomllib.loads((README.parent / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    for line in lines:
        for command in line.split("&&"):
            words = shlex.split(command)
            if words[:2] == ["pip", "install"]:
                extra = re.fullmatch(r"-e\s*\.\[(\w+)\]", " ".join(words[2:]))
                assert extra and extra.group(1) in extras, command
            elif words[0] == "snorkel-structured":
                args = cli.build_parser().parse_args(words[1:])
                assert args.command == "reproduce" and args.quick
    assert "pytest" in lines[1] and "[test]" in lines[1]


def test_quick_start_states_the_same_time_as_help():
    from snorkel_structured.experiments import cli

    section, _ = _quick_start()
    seconds = int(re.search(r"about (\d+) s on\s+2 cores", section).group(1))
    assert seconds == cli.QUICK_SECONDS
    sub = cli.build_parser()._subparsers._group_actions[0].choices["reproduce"]
    assert f"about {seconds} s on 2 cores" in " ".join(sub.format_help().split())


def test_benchmark_quick_states_the_same_time_as_help():
    from snorkel_structured.experiments import cli

    text = " ".join(README.read_text().split())
    seconds = int(
        re.search(
            r"`--quick` runs one seed .*? \(about (\d+) s on 2 cores", text
        ).group(1)
    )
    assert seconds == cli.BENCHMARK_QUICK_SECONDS
    sub = cli.build_parser()._subparsers._group_actions[0].choices["benchmark"]
    assert f"about {seconds} s on 2 cores" in " ".join(sub.format_help().split())


def test_torch_cpu_build_is_documented_as_optional():
    section, _ = _quick_start()
    assert (
        "pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu"
        in section
    )
    assert "optional" in section


def test_tutorial_links_exist():
    text = README.read_text()
    links = re.findall(r"\]\((tutorials/[^)]+)\)", text)
    assert {Path(x).suffix for x in links} == {".ipynb", ".py"}
    for link in links:
        assert (README.parent / link).exists(), link


def test_readme_ranking_example_runs_and_its_claims_hold():
    from snorkel_structured.rankings import borda, kendall_tau_distance

    text = README.read_text()
    code = next(
        c for c in re.findall(r"```python\n(.*?)```", text, re.S) if "RankingLabelModel" in c
    )
    after = text.split(code, 1)[1].split("\n\n", 2)[1]
    model_claim, borda_claim, lf_claim = _numbers(after)[:3]
    scope: dict = {}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the example must run without any warning
        warnings.filterwarnings("ignore", category=DeprecationWarning)
        exec(compile(code, str(README), "exec"), scope)
    truth = np.argsort(-scope["quality"], axis=1)
    V, lm = scope["V"], scope["lm"]
    assert scope["ranked"].shape == (2000, 20) and scope["P"].shape == (2000, 190)
    assert 100 * kendall_tau_distance(scope["ranked"], truth).mean() == pytest.approx(
        model_claim, abs=0.005
    )
    assert 100 * kendall_tau_distance(borda(V), truth).mean() == pytest.approx(
        borda_claim, abs=0.005
    )
    summary = scope["ss"].RankingLFAnalysis(V, scope["lfs"]).lf_summary(truth)
    best = 100 * (1 - summary["Pair accuracy"].max())
    assert best == pytest.approx(lf_claim, abs=0.05)
    assert lm.theta_.shape == (3,)
