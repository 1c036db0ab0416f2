"""Benchmark on the long-list ranking tasks (10-30 items, top-k LFs).

For every task of :data:`snorkel_structured.datasets.long_rankings.LIST_TASKS` and
seed, each method orders the held-out lists and is scored by the normalized Kendall
distance to the truth (the fraction of item pairs in the wrong order; lower is
better). Methods:

- ``label model``: ``RankingLabelModel(Rankings(n), seed=seed).fit(V_train)``, every
  default; ``label model + 100 dev rows``: the same with 100 labeled training rows;
- unweighted fusion: ``Borda``, ``RRF`` (reciprocal rank fusion, k = 60),
  ``Copeland``, ``Kemeny`` (unweighted Kemeny: every LF weight 1, the label model's
  decoder);
- ``UWS Kemeny``: Kemeny weighted by the universal weak supervision estimate of each
  LF's pairwise error rate (Shin et al. 2022: the additive triplet rule
  ``e_a = (r_ab + r_ac - r_bc) / 2`` on disagreement rates, median over b, c;
  weights ``log((1 - e) / e)``);
- oracles, picked or measured with the truth (no user has them): ``Kemeny, true
  accuracies`` (log-odds of each LF's pairwise accuracy on the training rows) and
  ``best single LF`` (each LF's list completed by the others at weight 1e-3, the
  best on the held-out rows).
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from snorkel_structured.datasets.long_rankings import LIST_TASKS, RankingListTask
from snorkel_structured.rankings import fusion
from snorkel_structured.rankings._votes import pairwise_votes

__all__ = ["LIST_METHODS", "list_benchmark_table", "run_list_benchmark"]

LABEL_MODEL = "label model"
LABEL_MODEL_DEV = "label model + 100 dev rows"
UNWEIGHTED = ("Borda", "RRF", "Copeland", "Kemeny")
UWS = "UWS Kemeny"
ORACLE = "Kemeny, true accuracies"
BEST_LF = "best single LF"
LIST_METHODS = (LABEL_MODEL, LABEL_MODEL_DEV, *UNWEIGHTED, UWS, ORACLE, BEST_LF)
N_DEV = 100


def uws_pair_error_rates(V: np.ndarray) -> np.ndarray:
    """Each LF's pairwise error rate by UWS's additive triplet rule (see module doc)."""
    S = pairwise_votes(V).astype(np.float32)
    m = S.shape[1]
    X = S.transpose(1, 0, 2).reshape(m, -1)
    A = np.abs(X)
    both = A @ A.T
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.where(both > 0, (both - X @ X.T) / 2 / both, np.nan)  # disagreement
    e = np.full(m, np.nan)
    for a in range(m):
        vals = [
            (r[a, b] + r[a, c] - r[b, c]) / 2
            for b in range(m)
            for c in range(b + 1, m)
            if a not in (b, c)
        ]
        vals = [v for v in vals if np.isfinite(v)]
        if vals:
            e[a] = np.median(vals)
    return np.clip(np.nan_to_num(e, nan=0.5), 1e-3, 0.5)


def _log_odds(accuracy: np.ndarray) -> np.ndarray:
    acc = np.clip(accuracy, 0.5, 1 - 1e-3)
    return np.log(acc / (1 - acc))


def _methods(
    task: RankingListTask, seed: int
) -> dict[str, Callable[[], tuple[np.ndarray, str]]]:
    """Method name -> a thunk returning (test orderings, note)."""
    from snorkel_structured.datasets.long_rankings import pairwise_accuracy
    from snorkel_structured.label_model._ranking_dev import SINGLE_LF_TIE_WEIGHT
    from snorkel_structured.label_model.ranking import RankingLabelModel
    from snorkel_structured.spaces.rankings import Rankings

    space = Rankings(task.n_items)
    m = task.n_lfs

    def model(dev: bool) -> tuple[np.ndarray, str]:
        lm = RankingLabelModel(space, seed=seed)
        if dev:
            V_dev, Y_dev = task.sample_dev(N_DEV, seed)
            lm.fit(task.V_train, V_dev=V_dev, Y_dev=Y_dev)
        else:
            lm.fit(task.V_train)
        return lm.predict(task.V_test), lm.choice_

    # A model whose weights are set by hand decodes by the label model's decoder.
    decoder = RankingLabelModel(space, noise="pairwise", dependencies=None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # its weights are replaced below
        decoder.fit(task.V_train[: min(200, len(task.V_train))])

    def kemeny(weights: np.ndarray) -> np.ndarray:
        decoder.theta_ = np.asarray(weights, dtype=np.float64)
        decoder.gap_slope_ = np.zeros(m)
        return decoder.predict(task.V_test)

    def best_lf() -> tuple[np.ndarray, str]:
        scores = []
        for a in range(m):
            w = np.full(m, SINGLE_LF_TIE_WEIGHT)
            w[a] = 1.0
            pred = kemeny(w)
            scores.append((task.normalized_errors(pred).mean(), a, pred))
        best = min(scores, key=lambda s: s[0])
        return best[2], task.lf_names[best[1]]

    def oracle() -> tuple[np.ndarray, str]:
        acc, _ = pairwise_accuracy(task.V_train, task.Y_train)
        return kemeny(_log_odds(np.nan_to_num(np.asarray(acc, float), nan=0.5))), ""

    return {
        LABEL_MODEL: lambda: model(False),
        LABEL_MODEL_DEV: lambda: model(True),
        "Borda": lambda: (fusion.borda(task.V_test), ""),
        "RRF": lambda: (fusion.reciprocal_rank_fusion(task.V_test), ""),
        "Copeland": lambda: (fusion.copeland(task.V_test), ""),
        "Kemeny": lambda: (kemeny(np.ones(m)), ""),
        UWS: lambda: (kemeny(_log_odds(1 - uws_pair_error_rates(task.V_train))), ""),
        ORACLE: oracle,
        BEST_LF: best_lf,
    }


def run_list_benchmark(
    tasks: Sequence[str] | None = None,
    seeds: Sequence[int] = (0, 1, 2),
    out: str | Path | None = None,
) -> pd.DataFrame:
    """Run every method on every list task and seed; optionally write the results.

    Returns
    -------
    results : pandas.DataFrame
        Tidy: ``task``, ``seed``, ``method``, ``normalized_kendall`` (mean over the
        held-out rows), ``n_items``, ``seconds`` and ``note`` (the dev-row choice,
        or the best LF's name).
    """
    names = list(LIST_TASKS) if tasks is None else list(tasks)
    unknown = [t for t in names if t not in LIST_TASKS]
    if unknown:
        raise ValueError(f"tasks must be among {sorted(LIST_TASKS)}; got {unknown}.")
    rows: list[dict[str, Any]] = []
    for name in names:
        for seed in seeds:
            task = LIST_TASKS[name](seed=seed)
            for method, run in _methods(task, seed).items():
                start = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # the models' notes, not errors
                    pred, note = run()
                rows.append(
                    {
                        "task": name,
                        "seed": seed,
                        "method": method,
                        "normalized_kendall": float(
                            task.normalized_errors(pred).mean()
                        ),
                        "n_items": task.n_items,
                        "seconds": time.perf_counter() - start,
                        "note": note,
                    }
                )
    results = pd.DataFrame(rows)
    if out is not None:
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        results.to_csv(out / "list_benchmark.csv", index=False)
        (out / "list_benchmark.md").write_text(list_benchmark_table(results))
    return results


def list_benchmark_table(results: pd.DataFrame, digits: int = 4) -> str:
    """Markdown table: per task, each method's median over seeds.

    ``LM - best fusion`` is the label model's median minus the best unweighted
    fusion's (negative: the label model wins); ``LM+dev - best LF`` the same for the
    model with dev rows against the best single LF (an oracle).
    """
    wide = (
        results.groupby(["task", "method"], sort=False)["normalized_kendall"]
        .median()
        .unstack("method")
        .reindex(columns=list(LIST_METHODS))
    )
    n_items = results.groupby("task")["n_items"].first()
    seeds = results.groupby("task")["seed"].nunique()
    header = [
        "task",
        "items",
        "seeds",
        *LIST_METHODS,
        "LM - best fusion",
        "LM+dev - best LF",
    ]
    lines = [
        "| " + " | ".join(header) + " |",
        "|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|",
    ]
    for task, row in wide.iterrows():
        fusion_best = row[list(UNWEIGHTED)].min()
        cells = [f"{row[m]:.{digits}f}" for m in LIST_METHODS]
        lines.append(
            "| "
            + " | ".join(
                [
                    str(task),
                    str(n_items[task]),
                    str(seeds[task]),
                    *cells,
                    f"{row[LABEL_MODEL] - fusion_best:+.{digits}f}",
                    f"{row[LABEL_MODEL_DEV] - row[BEST_LF]:+.{digits}f}",
                ]
            )
            + " |"
        )
    lines.append("")
    lines.append(
        "Median over seeds of the mean normalized Kendall distance on held-out lists "
        "(the fraction of item pairs in the wrong order). 'Kemeny, true accuracies' "
        "and 'best single LF' use the truth (oracles)."
    )
    return "\n".join(lines) + "\n"
