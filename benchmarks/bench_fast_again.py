"""Issue 22 ("Fast again"): the label model's default fit against its floors and baselines.

Every row of the issue's table, measured in one run, medians of ``--repeats`` runs
(each configuration warmed up once first):

- ``s4``: the paper's ranking setup (S4, 3 LFs), n = 1e3 ... 1e6 (``--big`` adds 1e7):
  the default fit and ``predict_proba`` against one counting pass over the rows'
  vote codes (encode each row as one integer, ``np.bincount``), the floor of any
  method that reads the rows.
- ``snorkel``: ``Discrete(k)`` on Snorkel's generator (1e5 x 10, k = 2, 3, 4): our
  default fit against Snorkel's ``LabelModel.fit`` (100 epochs, 1 torch thread) in
  the same process, and both accuracies; beside them the Dawid-Skene estimator
  (``estimators.dawid_skene_estimate``: full confusion tables, not the default).
- ``snorkel_parts``: where our time goes on the same data: the default fit's parts
  (counting the vote patterns, the dependency test, the EM choices on the sample,
  the refit on all rows, the closing checks; each a sum per fit, medians of the
  runs), and the fit with ``dependencies=[]`` (no test) against Snorkel's.
- ``s7``: ``Permutations(7)`` (5,040 labels), 2e4 rows, 4 LFs, default fit.
- ``real``: default fits on real tasks: ``european_regions`` (a tree of 676 labels,
  3,000 rows) and ``tumour_concavity_rankings`` (S5, 7 LFs, 3,000 rows).
- ``kernel``: ``KernelManifoldRegressor.predict``, 2,000 queries x 3,000 rows on S^2,
  against a dense kernel-weighted extrinsic mean of the same rows.

Prints the table on stderr and one JSONL record per row on stdout. No asserts.

    python benchmarks/bench_fast_again.py --repeats 5 > fast_again.jsonl
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import snorkel_structured as ss

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import dawid_skene_fit, environment, log, median_time  # noqa: E402


def quiet(fn: Callable[[], Any]) -> Callable[[], Any]:
    def run() -> Any:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn()

    return run


def emit(row: dict, table: list[dict]) -> None:
    table.append(row)
    print(json.dumps({**row, **environment()}), flush=True)


def counting_pass(L: np.ndarray, r: int) -> None:
    """Count the rows' vote patterns: each row as one integer, then ``np.bincount``
    (``np.unique`` when the codes' range is too large for a dense count)."""
    codes = (L[:, 0] + 1).astype(np.int64)
    for a in range(1, L.shape[1]):
        codes = codes * (r + 1) + (L[:, a] + 1)
    if (r + 1) ** L.shape[1] <= 1 << 26:
        np.bincount(codes)
    else:
        np.unique(codes, return_counts=True)


def default_fit(space: Any, L: np.ndarray) -> Any:
    return ss.StructuredLabelModel(space, seed=0).fit(L, progress_bar=False)


def section_s4(sizes: list[int], repeats: int, table: list[dict]) -> None:
    for n in sizes:
        data = ss.synthetic.make_ranking_data(n, seed=0)
        L, r = data.L, len(data.space)
        t_count, _ = median_time(lambda L=L, r=r: counting_pass(L, r), repeats)
        t_fit, lm = median_time(
            quiet(lambda L=L, s=data.space: default_fit(s, L)), repeats
        )
        t_proba = float("nan")  # above 1e6 rows the (n, 24) array passes 1 GiB
        if n <= 1_000_000:
            t_proba, _ = median_time(lambda L=L, lm=lm: lm.predict_proba(L), repeats)
        err = float(np.abs(lm.expected_sq_dist_ - data.expected_sq_dist).max())
        emit(
            {
                "row": f"S4, 3 LFs, n = {n:.0e}",
                "seconds": t_fit,
                "baseline": "counting pass",
                "baseline_seconds": t_count,
                "ratio": t_fit / t_count,
                "predict_proba_seconds": t_proba,
                "predict_proba_ratio": t_proba / t_count,
                "max_abs_err_expected_sq_dist": err,
            },
            table,
        )


def section_snorkel(cards: list[int], repeats: int, table: list[dict]) -> None:
    import torch
    from snorkel.labeling.model import LabelModel
    from snorkel.synthetic.synthetic_data import generate_simple_label_matrix

    torch.set_num_threads(1)
    for k in cards:
        np.random.seed(0)  # noqa: NPY002 - Snorkel's generator only uses the global RNG
        _, Y, L = generate_simple_label_matrix(100_000, 10, k)

        def snorkel_fit(L: np.ndarray = L, k: int = k) -> Any:
            model = LabelModel(cardinality=k, verbose=False)
            model.fit(L, n_epochs=100, seed=0, progress_bar=False)
            return model

        t_sn, sn = median_time(quiet(snorkel_fit), repeats)
        t_ours, ours = median_time(
            quiet(lambda L=L, k=k: default_fit(ss.Discrete(k), L)), repeats
        )
        emit(
            {
                "row": f"Discrete({k}), Snorkel's generator 1e5 x 10",
                "seconds": t_ours,
                "baseline": "Snorkel LabelModel.fit (100 epochs, 1 thread)",
                "baseline_seconds": t_sn,
                "ratio": t_ours / t_sn,
                "accuracy": float(
                    (ours.predict(L, tie_break_policy="random") == Y).mean()
                ),
                "baseline_accuracy": float(
                    (sn.predict(L, tie_break_policy="random") == Y).mean()
                ),
            },
            table,
        )
        t_ds, ds = median_time(lambda L=L, k=k: dawid_skene_fit(L, k), repeats)
        emit(
            {
                "row": f"Discrete({k}), Dawid-Skene estimator, counting included",
                "seconds": t_ds,
                "baseline": "Snorkel LabelModel.fit (100 epochs, 1 thread)",
                "baseline_seconds": t_sn,
                "ratio": t_ds / t_sn,
                "accuracy": float((ds(L) == Y).mean()),
            },
            table,
        )


def _timed_parts(
    parts: list[tuple[Any, str]], spent: dict[str, float]
) -> Callable[[], None]:
    """Wrap each ``(owner, name)`` function so that its wall time adds to
    ``spent[name]``; returns the function that restores them."""
    import time

    saved = [(owner, name, owner.__dict__[name]) for owner, name in parts]
    for owner, name, fn in saved:

        def timed(*args: Any, _fn: Any = fn, _name: str = name, **kw: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return _fn(*args, **kw)
            finally:
                spent[_name] = spent.get(_name, 0.0) + time.perf_counter() - t0

        setattr(owner, name, timed)

    def restore() -> None:
        for owner, name, fn in saved:
            setattr(owner, name, fn)

    return restore


def section_snorkel_parts(cards: list[int], repeats: int, table: list[dict]) -> None:
    import time

    import torch
    from snorkel.labeling.model import LabelModel
    from snorkel.synthetic.synthetic_data import generate_simple_label_matrix

    from snorkel_structured.estimators import em
    from snorkel_structured.label_model._closing_checks import ClosingChecks
    from snorkel_structured.label_model.structured import StructuredLabelModel

    torch.set_num_threads(1)
    parts = [
        (StructuredLabelModel, "_collect_stats"),
        (StructuredLabelModel, "_detect_dependencies"),
        (em, "_choose_model"),
        (em, "_refit_chosen"),
        (ClosingChecks, "_closing_checks"),
    ]
    for k in cards:
        np.random.seed(0)  # noqa: NPY002 - Snorkel's generator only uses the global RNG
        _, _, L = generate_simple_label_matrix(100_000, 10, k)
        t_sn, _ = median_time(
            quiet(
                lambda L=L, k=k: LabelModel(cardinality=k, verbose=False).fit(
                    L, n_epochs=100, seed=0, progress_bar=False
                )
            ),
            repeats,
        )
        quiet(lambda L=L, k=k: default_fit(ss.Discrete(k), L))()  # warm-up
        runs: list[dict[str, float]] = []
        for _ in range(repeats):
            spent: dict[str, float] = {}
            restore = _timed_parts(parts, spent)
            try:
                t0 = time.perf_counter()
                quiet(lambda L=L, k=k: default_fit(ss.Discrete(k), L))()
                spent["total"] = time.perf_counter() - t0
            finally:
                restore()
            runs.append(spent)
        median = {
            name: float(np.median([r.get(name, 0.0) for r in runs]))
            for name in ["total"] + [name for _, name in parts]
        }
        t_free, _ = median_time(
            quiet(
                lambda L=L, k=k: ss.StructuredLabelModel(ss.Discrete(k), seed=0).fit(
                    L, dependencies=[], progress_bar=False
                )
            ),
            repeats,
        )
        emit(
            {
                "row": f"Discrete({k}) default fit, by part",
                "seconds": median["total"],
                "baseline": "Snorkel LabelModel.fit (100 epochs, 1 thread)",
                "baseline_seconds": t_sn,
                "ratio": median["total"] / t_sn,
                **{f"{name}_s": v for name, v in median.items() if name != "total"},
            },
            table,
        )
        emit(
            {
                "row": f"Discrete({k}) fit with dependencies=[] (no test)",
                "seconds": t_free,
                "baseline": "Snorkel LabelModel.fit (100 epochs, 1 thread)",
                "baseline_seconds": t_sn,
                "ratio": t_free / t_sn,
            },
            table,
        )


def section_s7(repeats: int, table: list[dict]) -> None:
    space = ss.Permutations(7)
    r = len(space)
    centers = np.sort(np.random.default_rng(0).choice(r, size=3, replace=False))
    prior = np.zeros(r)
    prior[centers] = 1.0 / 3.0
    data = ss.synthetic.make_label_matrix(
        20_000, space=space, theta=[0.3, 0.5, 0.4, 0.45], prior=prior, seed=1
    )
    t_count, _ = median_time(lambda: counting_pass(data.L, r), repeats)
    t_fit, lm = median_time(quiet(lambda: default_fit(space, data.L)), repeats)
    emit(
        {
            "row": "S7 (5,040 labels), 2e4 rows, 4 LFs",
            "seconds": t_fit,
            "baseline": "counting pass",
            "baseline_seconds": t_count,
            "ratio": t_fit / t_count,
            "accuracy": float((lm.predict(data.L) == data.Y).mean()),
        },
        table,
    )


def section_real(repeats: int, table: list[dict]) -> None:
    from snorkel_structured.datasets import TASKS
    from snorkel_structured.experiments.benchmark import _subsample

    for name in ("european_regions", "tumour_concavity_rankings"):
        task = _subsample(TASKS[name](seed=0), 3000, 1000, 0)
        r = len(task.space)
        t_count, _ = median_time(
            lambda t=task, r=r: counting_pass(t.L_train, r), repeats
        )
        t_fit, lm = median_time(
            quiet(lambda t=task: default_fit(t.space, t.L_train)), repeats
        )
        pred = lm.predict(task.L_test, decision="distance")
        emit(
            {
                "row": f"{name}, {task.n_train:,} rows x {task.n_lfs} LFs, {r} labels",
                "seconds": t_fit,
                "baseline": "counting pass",
                "baseline_seconds": t_count,
                "ratio": t_fit / t_count,
                "normalized_error": float(
                    task.normalized_errors(pred, task.Y_test).mean()
                ),
            },
            table,
        )


def section_kernel(repeats: int, table: list[dict]) -> None:
    from bench_end_model_scale import _extrinsic_predict, _manifold_problem

    n, q = 3000, 2000
    space, F, _, X = _manifold_problem(n + q, 0)
    lm = ss.ManifoldLabelModel(space).fit(X[:n])
    model = ss.KernelManifoldRegressor(space, nu=1e-4).fit(F[:n], X[:n], lm)
    Fq = F[n:]
    t_pred, _ = median_time(lambda: model.predict(Fq), repeats)
    t_base, _ = median_time(lambda: _extrinsic_predict(model, Fq), repeats)
    emit(
        {
            "row": "KernelManifoldRegressor.predict, 2,000 x 3,000 on S^2",
            "seconds": t_pred,
            "baseline": "dense kernel-weighted extrinsic mean",
            "baseline_seconds": t_base,
            "ratio": t_pred / t_base,
        },
        table,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--sections",
        nargs="+",
        default=["s4", "snorkel", "s7", "real", "kernel"],
        choices=["s4", "snorkel", "snorkel_parts", "s7", "real", "kernel"],
    )
    parser.add_argument("--big", action="store_true", help="add n = 1e7 to s4")
    args = parser.parse_args()
    table: list[dict] = []
    sizes = [1_000, 10_000, 100_000, 1_000_000] + ([10_000_000] if args.big else [])
    runs = {
        "s4": lambda: section_s4(sizes, args.repeats, table),
        "snorkel": lambda: section_snorkel([2, 3, 4], args.repeats, table),
        "snorkel_parts": lambda: section_snorkel_parts([2, 3, 4], args.repeats, table),
        "s7": lambda: section_s7(args.repeats, table),
        "real": lambda: section_real(args.repeats, table),
        "kernel": lambda: section_kernel(args.repeats, table),
    }
    for name in args.sections:
        runs[name]()
    log(f"\nmedians of {args.repeats} runs")
    log(f"{'measure':<58} {'ours (s)':>9} {'baseline (s)':>12} {'ratio':>7}  extra")
    for row in table:
        extra = {
            k: round(v, 4)
            for k, v in row.items()
            if k not in ("row", "seconds", "baseline", "baseline_seconds", "ratio")
            and isinstance(v, float)
        }
        log(
            f"{row['row']:<58} {row['seconds']:>9.3f} {row['baseline_seconds']:>12.4f} "
            f"{row['ratio']:>7.1f}  {extra}"
        )


if __name__ == "__main__":
    main()
