"""Tests of the real-data benchmark: scoring rule, baselines by brute force, the CLI."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

import snorkel_structured as ss
from snorkel_structured import datasets as D
from snorkel_structured.aggregators import borda
from snorkel_structured.experiments import cli
from snorkel_structured.experiments.benchmark import (
    AGGREGATORS,
    BEST_LF,
    METHODS,
    benchmark_table,
    run_benchmark,
    run_task,
)


def _small(task, n_train, n_test):
    return dataclasses.replace(
        task,
        L_train=task.L_train[:n_train],
        Y_train=task.Y_train[:n_train],
        L_test=task.L_test[:n_test],
        Y_test=task.Y_test[:n_test],
    )


def test_best_single_lf_is_the_minimum_over_lfs():
    task = _small(D.load_diabetes_rankings(seed=0, n_train=400, n_test=300), 400, 300)
    res = run_task(task, seed=0, log=lambda msg: None).set_index("method")
    D_ = task.space.distance_matrix
    scores = {}
    for j, name in enumerate(task.lf_names):
        votes = task.L_test[:, j]
        # An abstaining LF is scored as the task's fallback answer.
        filled = np.where(votes == ss.ABSTAIN, task.fallback, votes)
        scores[name] = D_[filled, task.Y_test].mean() / 6.0
        assert np.isclose(
            res.loc[f"single LF: {name}", "normalized_metric"], scores[name]
        )
    best = min(scores, key=scores.get)
    assert np.isclose(res.loc[BEST_LF, "normalized_metric"], scores[best])
    assert res.loc[BEST_LF, "note"] == best
    # Kemeny, by brute force over the 24 orderings with equal weights.
    votes = task.L_test
    cost = np.stack(
        [
            np.where(votes != ss.ABSTAIN, D_[y][np.maximum(votes, 0)], 0).sum(1)
            for y in range(24)
        ],
        axis=1,
    )
    kem = np.where((votes != ss.ABSTAIN).any(1), cost.argmin(1), task.fallback)
    assert np.isclose(res.loc["Kemeny / median", "metric"], D_[kem, task.Y_test].mean())
    # Borda: the aggregators' Borda count, abstains scored as the fallback.
    bor = borda(votes, task.space)
    bor = np.where(bor == ss.ABSTAIN, task.fallback, bor)
    assert np.isclose(res.loc["Borda", "metric"], D_[bor, task.Y_test].mean())
    for method in ("majority", "Kemeny / median", "Borda", "Frechet mean", "medoid"):
        assert 0 <= res.loc[method, "normalized_metric"] <= 1


def test_manifold_baselines_by_brute_force():
    # A tiny Euclidean task: 3 LFs, some abstains; truth and votes written by hand.
    X = np.array(
        [
            [[0.0], [1.0], [5.0]],
            [[2.0], [np.nan], [3.0]],
            [[np.nan], [np.nan], [np.nan]],
            [[-1.0], [4.0], [0.0]],
        ]
        * 10
    )
    Y = np.array([[1.0], [2.0], [0.0], [0.5]] * 10)
    space = ss.Euclidean(1)
    task = D.WeakSupervisionTask(
        name="toy",
        kind="manifold",
        space=space,
        L_train=X,
        L_test=X,
        Y_train=Y,
        Y_test=Y,
        lf_names=("a", "b", "c"),
        metric="absolute error",
        distance=lambda p, y: np.abs(p - y)[:, 0],
        normalizer=10.0,
        fallback=np.array([7.0]),
    )
    res = run_task(task, seed=0, log=lambda msg: None).set_index("method")
    # Medoid: the vote with the least summed squared distance to the row's votes.
    medoid = np.array([1.0, 2.0, 7.0, 0.0])  # row 1 ties 2 vs 3: the first LF wins
    median = np.array([1.0, 2.5, 7.0, 0.0])
    mean = np.array([2.0, 2.5, 7.0, 1.0])
    truth = Y[:4, 0]
    assert np.isclose(res.loc["medoid", "metric"], np.abs(medoid - truth).mean())
    assert np.isclose(
        res.loc["Kemeny / median", "metric"], np.abs(median - truth).mean()
    )
    assert np.isclose(res.loc["Frechet mean", "metric"], np.abs(mean - truth).mean())
    lf_a = np.array([0.0, 2.0, 7.0, -1.0])
    assert np.isclose(res.loc["single LF: a", "metric"], np.abs(lf_a - truth).mean())
    assert "Borda" not in res.index  # rankings only


def test_borda_counts_as_an_unweighted_aggregator_in_the_table():
    rows = [
        ("ranks", "label model", 0.30),
        ("ranks", "majority", 0.40),
        ("ranks", "Kemeny / median", 0.35),
        ("ranks", "Borda", 0.20),
        ("ranks", BEST_LF, 0.10),
        ("sphere", "label model", 0.05),
        ("sphere", "Frechet mean", 0.07),
    ]
    results = pd.DataFrame(
        {
            "task": [t for t, _, _ in rows],
            "seed": 0,
            "method": [m for _, m, _ in rows],
            "metric": [v for _, _, v in rows],
            "normalized_metric": [v for _, _, v in rows],
            "n_test": 10,
            "fit_seconds": 0.0,
            "metric_name": "d",
            "note": "",
        }
    )
    assert "Borda" in AGGREGATORS
    lines = {
        line.split(" | ")[0][2:]: line
        for line in benchmark_table(results).splitlines()
        if line.startswith("| ")
    }
    header = [c.strip() for c in lines["task"].strip("| ").split(" | ")]
    ranks = [c.strip() for c in lines["ranks"].strip("| ").split(" | ")]
    sphere = [c.strip() for c in lines["sphere"].strip("| ").split(" | ")]
    assert ranks[header.index("Borda")] == "**0.2000**"
    assert ranks[-1] == "+0.1000"  # label model - Borda, the best aggregator
    assert sphere[header.index("Borda")] == "n/a" and sphere[-1] == "-0.0200"


def test_cli_writes_csv_markdown_and_png(tmp_path, capsys):
    code = cli.main(
        [
            "benchmark",
            "--quick",
            "--tasks",
            "diabetes_rankings",
            "city_utc_offsets",
            "--out",
            str(tmp_path),
            "--no-progress",
        ]
    )
    assert code == 0
    for ext in ("csv", "md", "png"):
        assert (tmp_path / f"benchmark.{ext}").stat().st_size > 0
    df = pd.read_csv(tmp_path / "benchmark.csv")
    assert set(df["task"]) == {"diabetes_rankings", "city_utc_offsets"}
    assert set(METHODS) - {"Snorkel LabelModel", "majority"} <= set(df["method"])
    assert (df["n_test"] <= 1000).all() and set(df["seed"]) == {0}
    # The aggregators and LFs are this module's own code: always a value.
    own = df[df["method"].isin(["Frechet mean", "medoid", BEST_LF])]
    assert own["normalized_metric"].between(0, 1).all()
    md = (tmp_path / "benchmark.md").read_text()
    assert md.startswith("| task") and md.count("\n| ") == 2  # header, 2 tasks
    assert "Kendall distance" in md
    assert "Total time" in capsys.readouterr().out


def test_run_benchmark_rejects_unknown_tasks():
    import pytest

    with pytest.raises(ValueError, match="tasks must be among"):
        run_benchmark(tasks=["no_such_task"])
