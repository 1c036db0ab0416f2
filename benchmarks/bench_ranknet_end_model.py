"""RankNet end models trained on RankingLabelModel's pseudolabels, on the real list tasks.

For each list task (the four of ``ss.datasets.long_rankings`` and the six hold-outs of
``bench_holdout_tasks.py --parts lists``) and seed, a linear scorer of the items'
table columns (every numeric column but the truth, standardized on the training
items, missing values at the training mean) is trained with
``snorkel_structured.torch.RankNetLoss`` on the training lists, in five ways:

- ``Q^-1 weights``: the pseudolabels with ``loss_weights``' Q^-1 weights
  (``clip=0.0``), q measured on 100 dev rows (``fit(V_dev=, Y_dev=)``);
- ``pseudolabels``: the same pseudolabels, unweighted;
- ``soft targets``: the posterior ``p_before`` as soft targets;
- ``Q^-1, unsupervised q``: Q^-1 weights from the model fitted without dev rows
  (q its own mean posterior probability, which ``loss_weights`` warns is optimistic);
- ``true orderings``: the truth of the training lists (an oracle, for scale).

Each is scored by the mean normalized Kendall distance of its orderings of the
held-out lists (disjoint items), beside the label model's own orderings of those
lists (which use the LFs' votes; the scorer does not). Adam, learning rate 0.05,
150 full-batch epochs, seed 0. Medians over seeds 0-2.

    python benchmarks/bench_ranknet_end_model.py [--seeds 0 1 2]
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import torch

import snorkel_structured as ss
from snorkel_structured.datasets import long_rankings as lr
from snorkel_structured.rankings import kendall_tau_distance, pairwise_votes
from snorkel_structured.torch import RankNetLoss, pair_weights_tensor

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_holdout_tasks as holdout  # noqa: E402

SPECS = {
    "diabetes_progression_lists": (lr._DIABETES, lr.load_diabetes_progression_lists),
    "tumour_concave_points_lists": (lr._TUMOURS, lr.load_tumour_concave_points_lists),
    "country_population_lists": (lr._COUNTRIES, lr.load_country_population_lists),
    "wine_flavanoid_lists": (lr._WINES, lr.load_wine_flavanoid_lists),
}
METHODS = [
    "label model + 100 dev (uses the LFs)",
    "Q^-1 weights",
    "pseudolabels",
    "soft targets",
    "Q^-1, unsupervised q",
    "true orderings (oracle)",
]


def features(table: pd.DataFrame, truth: str, train_items: np.ndarray) -> np.ndarray:
    """(n_table_rows, n_features) standardized numeric columns, the truth left out."""
    X = table.drop(columns=[truth]).select_dtypes("number").to_numpy(dtype=np.float64)
    train = X[np.unique(train_items)]
    mean, sd = np.nanmean(train, axis=0), np.nanstd(train, axis=0)
    keep = np.isfinite(sd) & (sd > 0)
    X = (X[:, keep] - mean[keep]) / sd[keep]
    return np.nan_to_num(X, nan=0.0)


def train_scorer(X, targets, weights=None, soft=None) -> torch.nn.Module:
    torch.manual_seed(0)
    scorer = torch.nn.Linear(X.shape[-1], 1)
    optimizer = torch.optim.Adam(scorer.parameters(), lr=0.05)
    loss_fn = RankNetLoss(clip=0.0)
    for _ in range(150):
        optimizer.zero_grad()
        loss = loss_fn(scorer(X).squeeze(-1), targets, weights, soft=soft)
        loss.backward()
        optimizer.step()
    return scorer


def run_task(name, spec, task, seed) -> dict[str, float]:
    X_all = features(spec.table(), spec.truth, task.items_train)
    X_tr = torch.tensor(X_all[task.items_train], dtype=torch.float32)
    X_te = torch.tensor(X_all[task.items_test], dtype=torch.float32)
    space = ss.Rankings(task.n_items)

    def error(orderings):
        return float(kendall_tau_distance(orderings, task.Y_test).mean())

    def scored(scorer):
        with torch.no_grad():
            s = scorer(X_te).squeeze(-1).numpy()
        return error(np.argsort(-s, axis=1, kind="stable"))

    V_dev, Y_dev = task.sample_dev(100, seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the models' notes, not errors
        lm = ss.RankingLabelModel(space, seed=seed).fit(
            task.V_train, V_dev=V_dev, Y_dev=Y_dev
        )
        lm_u = ss.RankingLabelModel(space, seed=seed).fit(task.V_train)
        pw = pair_weights_tensor(lm.loss_weights(task.V_train), n_items=task.n_items)
        pw_u = pair_weights_tensor(
            lm_u.loss_weights(task.V_train), n_items=task.n_items
        )
    truth = torch.tensor(
        pairwise_votes(task.Y_train[:, None, :])[:, 0], dtype=torch.float32
    )
    return {
        METHODS[0]: error(lm.predict(task.V_test)),
        METHODS[1]: scored(train_scorer(X_tr, pw.targets, pw.weights)),
        METHODS[2]: scored(train_scorer(X_tr, pw.targets)),
        METHODS[3]: scored(train_scorer(X_tr, pw.targets, soft=pw.p_before)),
        METHODS[4]: scored(train_scorer(X_tr, pw_u.targets, pw_u.weights)),
        METHODS[5]: scored(train_scorer(X_tr, truth)),
        "q (dev rows)": float(lm.dev_pair_accuracy_),
    }


def tasks(seed):
    for name, (spec, loader) in SPECS.items():
        yield name, spec, loader(seed=seed)
    for spec, n_items in holdout.list_specs():
        yield spec.name, spec, holdout.list_task(spec, n_items, seed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    args = parser.parse_args()
    rows = []
    for seed in args.seeds:
        for name, spec, task in tasks(seed):
            t0 = time.perf_counter()
            r = run_task(name, spec, task, seed)
            rows.append({"task": name, "seed": seed, **r})
            print(
                f"{name} seed {seed}: {time.perf_counter() - t0:.1f} s", file=sys.stderr
            )
    df = pd.DataFrame(rows)
    med = df.groupby("task", sort=False)[METHODS + ["q (dev rows)"]].median()
    print(
        f"\n### RankNet linear scorer, normalized Kendall error on held-out lists "
        f"(median over seeds {', '.join(map(str, args.seeds))}; lower is better)\n"
    )
    print("| task | " + " | ".join(METHODS + ["q (dev rows)"]) + " |")
    print("|---|" + "---:|" * (len(METHODS) + 1))
    for name, row in med.iterrows():
        print(f"| {name} | " + " | ".join(f"{v:.4f}" for v in row) + " |")
    wins = {
        m: int((df[m] < df["Q^-1 weights"]).sum())
        for m in ("pseudolabels", "soft targets", "Q^-1, unsupervised q")
    }
    print(
        f"\nTask-seeds ({len(df)}) where each beats the Q^-1 weights (dev q): "
        + ", ".join(f"{m} {w}" for m, w in wins.items())
    )


if __name__ == "__main__":
    main()
