"""The long-list benchmark: UWS's rule by brute force, the table, the CLI."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import snorkel_structured as ss
from snorkel_structured.experiments import cli
from snorkel_structured.experiments.list_benchmark import (
    LIST_METHODS,
    list_benchmark_table,
    run_list_benchmark,
    uws_pair_error_rates,
)
from snorkel_structured.rankings import pairwise_votes


def test_uws_rule_matches_its_definition():
    rng = np.random.default_rng(0)
    V = np.stack([ss.Rankings(6).random_point(400, seed=s) for s in range(4)], axis=1)
    V[rng.random(V.shape[:2]) < 0.2] = -1  # abstains
    S = pairwise_votes(V)
    m = S.shape[1]

    def r(a, b):  # disagreement rate on the pairs both order, written out
        both = (S[:, a] != 0) & (S[:, b] != 0)
        return np.mean(S[:, a][both] != S[:, b][both])

    expected = []
    for a in range(m):
        vals = [
            (r(a, b) + r(a, c) - r(b, c)) / 2
            for b in range(m)
            for c in range(b + 1, m)
            if a not in (b, c)
        ]
        expected.append(np.clip(np.median(vals), 1e-3, 0.5))
    np.testing.assert_allclose(uws_pair_error_rates(V), expected, rtol=1e-6)


def test_run_and_table():
    results = run_list_benchmark(["wine_flavanoid_lists"], seeds=(0,))
    assert set(results["method"]) == set(LIST_METHODS)
    assert results["normalized_kendall"].between(0, 1).all()
    by = results.set_index("method")["normalized_kendall"]
    notes = results.set_index("method")["note"]
    task = ss.datasets.long_rankings.load_wine_flavanoid_lists(0)
    assert notes["best single LF"] in task.lf_names
    assert notes["label model + 100 dev rows"] in (
        "label model",
        "equal weights",
        "dev weights",
        *(f"LF {a} first" for a in range(task.n_lfs)),
    )
    table = list_benchmark_table(results)
    row = [c.strip() for c in table.splitlines()[2].strip("| ").split(" | ")]
    lm_gap = by["label model"] - by[["Borda", "RRF", "Copeland", "Kemeny"]].min()
    assert row[-2] == f"{lm_gap:+.4f}"
    assert row[-1] == f"{by['label model + 100 dev rows'] - by['best single LF']:+.4f}"
    with pytest.raises(ValueError, match="tasks must be among"):
        run_list_benchmark(["no_such_task"])


def test_cli_runs_list_tasks(tmp_path, capsys):
    code = cli.main(
        [
            "benchmark",
            "--tasks",
            "wine_flavanoid_lists",
            "--seeds",
            "0",
            "--out",
            str(tmp_path),
            "--no-progress",
        ]
    )
    assert code == 0
    df = pd.read_csv(tmp_path / "list_benchmark.csv")
    assert set(df["task"]) == {"wine_flavanoid_lists"} and set(df["seed"]) == {0}
    assert not (tmp_path / "benchmark.csv").exists()
    out = capsys.readouterr().out
    assert "Long lists" in out and "Total time" in out
