"""What each robustness mechanism of the finite label model contributes (issue 12).

On the finite tasks of ``ss.datasets`` (held-out rows, normalized task metric, lower
is better), the label model is fitted with the mechanisms switched on one at a time:

- ``paper``: the paper's family, exp(-theta d^2), no outliers, no shrinkage, MAP;
- ``+ distance decision``: the same fit, ``predict(decision="distance")``;
- ``+ p``: ``noise_power="auto"`` (p in {1, 2} chosen on held-out votes);
- ``+ outliers``: ``outliers="auto"`` too;
- ``+ shrinkage`` (the defaults): ``shrinkage="auto"`` too;
- ``+ 100 dev rows``: the defaults given 100 labeled training rows.

Beside them, in the same run: majority vote, Kemeny / tree median (the unweighted
aggregators) and the best single LF (picked with the truth). The last column is the
defaults' fit time.

    python benchmarks/bench_ablation.py [--tasks ...] [--seeds 0 1 2]
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import pandas as pd

import snorkel_structured as ss
from snorkel_structured.datasets import TASKS

VARIANTS = {
    "paper": dict(noise_power=2, outliers=False, shrinkage=0.0),
    "+ p": dict(noise_power="auto", outliers=False, shrinkage=0.0),
    "+ outliers": dict(noise_power="auto", outliers="auto", shrinkage=0.0),
    "+ shrinkage (defaults)": dict(),
}


def run(name: str, seed: int) -> dict[str, float]:
    task = TASKS[name]()
    support = task.prior_support if task.prior_support is not None else "auto"

    def score(pred: np.ndarray) -> float:
        return float(task.normalized_errors(pred, task.Y_test).mean())

    row: dict[str, float] = {}
    for label, params in VARIANTS.items():
        lm = ss.StructuredLabelModel(
            task.space, seed=seed, prior_support=support, **params
        )
        t0 = time.perf_counter()
        lm.fit(task.L_train)
        seconds = time.perf_counter() - t0
        if label == "paper":
            row["paper (MAP)"] = score(lm.predict(task.L_test))
            label = "+ distance decision"
        row[label] = score(lm.predict(task.L_test, decision="distance"))
    row["fit s (defaults)"] = seconds
    dev = np.sort(np.random.default_rng([seed, 2]).permutation(task.n_train)[:100])
    lm = ss.StructuredLabelModel(task.space, seed=seed, prior_support=support)
    lm.fit(task.L_train, L_dev=task.L_train[dev], Y_dev=task.Y_train[dev])
    row["+ 100 dev rows"] = score(lm.predict(task.L_test, decision="distance"))
    for method in ("majority", "kemeny"):
        voter = ss.AggregatingVoter(task.space, method=method, seed=seed)
        row[method] = score(voter.fit(task.L_train).predict(task.L_test))
    row["best single LF"] = min(score(task.L_test[:, j]) for j in range(task.n_lfs))
    return row


def main() -> None:
    finite = [n for n in TASKS if TASKS[n]().kind == "finite"]
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", nargs="+", default=finite)
    parser.add_argument("--seeds", nargs="+", type=int, default=[0])
    args = parser.parse_args()
    rows = []
    for name in args.tasks:
        for seed in args.seeds:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                rows.append({"task": name, "seed": seed, **run(name, seed)})
            print(rows[-1], flush=True)
    table = pd.DataFrame(rows).groupby("task").median(numeric_only=True)
    table = table.drop(columns="seed")
    print(f"\nmedians over seeds {args.seeds} (normalized metric, lower is better)")
    cols = ["task", *table.columns]
    print("| " + " | ".join(cols) + " |")
    print("|---" * len(cols) + "|")
    for task, r in table.iterrows():
        print("| " + " | ".join([task, *(f"{v:.4f}" for v in r)]) + " |")


if __name__ == "__main__":
    main()
