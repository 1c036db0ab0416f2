"""Benchmark of label models and aggregators on the real tasks of ``ss.datasets``.

For every task and seed, each method is fitted on the training votes and scored on the
held-out rows with the task's metric (lower is better), also divided by the task's
normalizer (values in [0, 1]). Methods:

- ``label model``: ``StructuredLabelModel(space, seed=seed, prior_support=...)`` (finite;
  the task's ``prior_support``, or "auto"; ``predict(decision="distance")``, the label of
  least posterior expected distance, since the tasks score mean distances) or
  ``ManifoldLabelModel(space, seed=seed)`` (manifold), fitted on ``L_train`` alone;
- ``default model`` (and ``+ 100 dev rows``): ``StructuredLabelModel(space)`` with
  every default (the task's ``prior_support`` is not passed); where a task has none,
  the same numbers as ``label model``;
- ``label model + 100 dev rows``: the same, given 100 training rows with their truth
  (``fit(L_train, Y_dev=..., L_dev=...)``, or ``X_dev`` on manifolds);
- unweighted aggregators: ``majority`` (finite), ``Kemeny / median`` (the label
  minimizing the summed distance to the votes: exact Kemeny on rankings, the tree's
  median on trees; the coordinate-wise median on Euclidean targets), ``Borda`` (the
  Borda count, :func:`snorkel_structured.aggregators.borda`; rankings only, n/a on
  other spaces), ``Frechet mean`` and ``medoid`` (the row's vote minimizing the summed
  *squared* distance to its votes, as :func:`snorkel_structured.aggregators.medoid`);
- ``UWS``: the universal weak supervision baseline (``estimator="uws"``);
- ``best single LF (picked with truth)``: the LF with the lowest held-out metric,
  chosen with the held-out truth (an oracle no user has), and every LF alone
  (``single LF: <name>``, in the CSV only);
- ``Snorkel LabelModel``: Snorkel's own label model over the labels as classes, on
  spaces of at most 30 labels.

Scoring rule, the same for every method: a row where a method abstains (-1 or NaN)
is scored as the task's ``fallback`` answer (a know-nothing answer chosen without
truth; see :class:`~snorkel_structured.datasets.WeakSupervisionTask`).

Command line: ``snorkel-structured benchmark [--quick] [--out DIR] [--tasks ...]``.
"""

from __future__ import annotations

import dataclasses
import sys
import time
import warnings
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

import snorkel_structured as ss
from snorkel_structured.datasets import TASKS, WeakSupervisionTask

__all__ = [
    "BEST_LF",
    "METHODS",
    "benchmark_table",
    "dev_rows",
    "plot_benchmark",
    "run_benchmark",
    "run_task",
]

LABEL_MODEL = "label model"
LABEL_MODEL_DEV = "label model + 100 dev rows"
DEFAULT_MODEL = "default model"
DEFAULT_MODEL_DEV = "default model + 100 dev rows"
BEST_LF = "best single LF (picked with truth)"
SNORKEL = "Snorkel LabelModel"
BORDA = "Borda"
AGGREGATORS = ("majority", "Kemeny / median", BORDA, "Frechet mean", "medoid")
METHODS = (
    LABEL_MODEL,
    LABEL_MODEL_DEV,
    DEFAULT_MODEL,
    DEFAULT_MODEL_DEV,
    *AGGREGATORS,
    "UWS",
    BEST_LF,
    SNORKEL,
)
SINGLE_LF = "single LF: "

N_DEV = 100
SNORKEL_MAX_LABELS = 30
FULL_SEEDS = (0, 1, 2)
QUICK_SEEDS = (0,)
QUICK_ROWS = (2000, 1000)  # (train, test) rows per task in --quick

COLUMNS = [
    "task",
    "seed",
    "method",
    "metric",
    "normalized_metric",
    "n_test",
    "fit_seconds",
    "metric_name",
    "note",
]


def dev_rows(n_train: int, seed: int) -> np.ndarray:
    """Indices of the N_DEV training rows whose truth the "+ 100 dev rows" methods
    are given (sorted; the same rows for every method of a task and seed)."""
    return np.sort(np.random.default_rng([seed, 2]).permutation(n_train)[:N_DEV])


def _subsample(
    task: WeakSupervisionTask, n_train: int, n_test: int, seed: int
) -> WeakSupervisionTask:
    """The task on at most ``n_train``/``n_test`` rows drawn at random (seeded)."""
    rng = np.random.default_rng([seed, 1])
    tr = np.sort(rng.permutation(task.n_train)[:n_train])
    te = np.sort(rng.permutation(task.n_test)[:n_test])
    return dataclasses.replace(
        task,
        L_train=task.L_train[tr],
        Y_train=task.Y_train[tr],
        L_test=task.L_test[te],
        Y_test=task.Y_test[te],
    )


def _manifold_medoid(space: Any, X: np.ndarray) -> np.ndarray:
    """Each row's vote minimizing the summed squared distance to the row's votes.

    X : (n_samples, n_lfs, ambient_dim) with NaN rows for abstains; returns
    (n_samples, ambient_dim), NaN where every LF abstained.
    """
    n, m, _ = X.shape
    voted = ~np.isnan(X).any(axis=-1)
    filled = np.where(voted[..., None], X, space.origin)
    # (n, m, m) pairwise squared distances between the row's votes.
    d2 = space.squared_dist(filled[:, :, None, :], filled[:, None, :, :])
    cost = np.where(voted[:, None, :], d2, 0.0).sum(axis=2)
    cost = np.where(voted, cost, np.inf)
    best = cost.argmin(axis=1)
    out = filled[np.arange(n), best]
    return np.where(voted.any(axis=1)[:, None], out, np.nan)


def _coordinate_median(X: np.ndarray) -> np.ndarray:
    """Coordinate-wise median of each row's votes (NaN where every LF abstained)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN rows stay NaN
        return np.nanmedian(X, axis=1)


def _finite_methods(
    task: WeakSupervisionTask, seed: int, dev: np.ndarray
) -> dict[str, Callable[[], np.ndarray]]:
    space, L_tr, L_te = task.space, task.L_train, task.L_test
    support = task.prior_support if task.prior_support is not None else "auto"

    # The tasks score mean distances: the label of least posterior expected distance
    # is the Bayes answer (``decision="distance"``), not the posterior's mode.
    def fitted(dev_rows: bool, prior_support: Any) -> Callable[[], np.ndarray]:
        def run() -> np.ndarray:
            lm = ss.StructuredLabelModel(space, seed=seed, prior_support=prior_support)
            if dev_rows:
                lm.fit(
                    L_tr, Y_dev=task.Y_train[dev], L_dev=L_tr[dev], progress_bar=False
                )
            else:
                lm.fit(L_tr, progress_bar=False)
            return lm.predict(L_te, decision="distance")

        return run

    def voter(method: str) -> Callable[[], np.ndarray]:
        def run() -> np.ndarray:
            v = ss.AggregatingVoter(space, method=method, seed=seed).fit(L_tr)
            return v.predict(L_te)

        return run

    def uws() -> np.ndarray:
        lm = ss.StructuredLabelModel(
            space, estimator="uws", seed=seed, prior_support=support
        )
        return lm.fit(L_tr, progress_bar=False).predict(L_te, tie_break_policy="random")

    methods = {
        LABEL_MODEL: fitted(False, support),
        LABEL_MODEL_DEV: fitted(True, support),
        "majority": voter("majority"),
        "Kemeny / median": voter("kemeny"),
        "Frechet mean": voter("frechet_mean"),
        "medoid": voter("medoid"),
        "UWS": uws,
    }
    if isinstance(space, ss.Permutations):
        methods[BORDA] = voter("borda")
    if task.prior_support is not None:  # otherwise the label model is the default
        methods[DEFAULT_MODEL] = fitted(False, "auto")
        methods[DEFAULT_MODEL_DEV] = fitted(True, "auto")
    if len(space) <= SNORKEL_MAX_LABELS:

        def snorkel() -> np.ndarray:
            import torch
            from snorkel.labeling.model import LabelModel

            # One torch thread: Snorkel's small matrices gain nothing from more, and
            # on a busy machine extra threads only contend.
            threads = torch.get_num_threads()
            torch.set_num_threads(1)
            try:
                lm = LabelModel(cardinality=len(space), verbose=False)
                lm.fit(L_tr, seed=seed, progress_bar=False)  # Snorkel's defaults
                return lm.predict(L_te, tie_break_policy="random")
            finally:
                torch.set_num_threads(threads)

        methods[SNORKEL] = snorkel
    return methods


def _manifold_methods(
    task: WeakSupervisionTask, seed: int, dev: np.ndarray
) -> dict[str, Callable[[], np.ndarray]]:
    space, X_tr, X_te = task.space, task.L_train, task.L_test

    # Seeded: the robust fit's held-out choice draws rows, and an unseeded model made
    # world_city_centroids' predictions differ from one run of the benchmark to the next.
    def label_model() -> np.ndarray:
        return ss.ManifoldLabelModel(space, seed=seed).fit(X_tr).predict(X_te)

    def label_model_dev() -> np.ndarray:
        lm = ss.ManifoldLabelModel(space, seed=seed)
        lm.fit(X_tr, Y_dev=task.Y_train[dev], X_dev=X_tr[dev])
        return lm.predict(X_te)

    def frechet_mean() -> np.ndarray:
        return ss.ManifoldMeanVoter(space).fit(X_tr).predict(X_te)

    def uws() -> np.ndarray:
        lm = ss.ManifoldLabelModel(space, estimator="uws", seed=seed)
        return lm.fit(X_tr).predict(X_te)

    methods = {
        LABEL_MODEL: label_model,
        LABEL_MODEL_DEV: label_model_dev,
        "Frechet mean": frechet_mean,
        "medoid": lambda: _manifold_medoid(space, X_te),
        "UWS": uws,
    }
    if isinstance(space, ss.Euclidean):
        methods["Kemeny / median"] = lambda: _coordinate_median(X_te)
    return methods


def run_task(
    task: WeakSupervisionTask,
    seed: int = 0,
    *,
    log: Callable[[str], None] | None = None,
) -> pd.DataFrame:
    """Score every method on one task (fit on its training rows, score on the test rows).

    Parameters
    ----------
    task : WeakSupervisionTask
    seed : int, default=0
        Seeds the label models, majority ties, Snorkel and the 100 dev rows.
    log : callable, optional
        Receives notes (e.g. a method that failed); default prints to stderr.

    Returns
    -------
    results : pandas.DataFrame
        One row per method, with the columns of :func:`run_benchmark`; ``note``
        names the LF behind the best single LF, or why a method has no value
        (``"not available: ..."`` when the dev-set keywords are refused with a
        TypeError, ``"failed: ..."`` when a method raised).
    """
    log = log or (lambda msg: print(msg, file=sys.stderr))
    dev = dev_rows(task.n_train, seed)
    build = _finite_methods if task.kind == "finite" else _manifold_methods
    rows = []

    def record(method: str, value: float, seconds: float, note: str = "") -> None:
        rows.append(
            {
                "task": task.name,
                "seed": seed,
                "method": method,
                "metric": value,
                "normalized_metric": value / task.normalizer,
                "n_test": task.n_test,
                "fit_seconds": seconds,
                "metric_name": task.metric,
                "note": note,
            }
        )

    for method, fn in build(task, seed, dev).items():
        t0 = time.perf_counter()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # fit warnings are the models' own
                pred = fn()
        except TypeError as exc:
            if method != LABEL_MODEL_DEV:
                log(f"[{task.name}] {method} failed: {exc!r}; reported as NaN.")
                record(method, np.nan, np.nan, f"failed: {exc!r}")
                continue
            # The dev-set API (L_dev / X_dev, Y_dev) is not available in this build.
            log(f"[{task.name}] {method}: not available ({exc}); reported as NaN.")
            record(method, np.nan, np.nan, f"not available: {exc}")
            continue
        except Exception as exc:  # one failing method must not lose the whole run
            log(f"[{task.name}] {method} failed: {exc!r}; reported as NaN.")
            record(method, np.nan, np.nan, f"failed: {exc!r}")
            continue
        seconds = time.perf_counter() - t0
        record(method, float(task.errors(pred, task.Y_test).mean()), seconds)

    if task.prior_support is None:  # the label model ran with its defaults
        for src, dst in (
            (LABEL_MODEL, DEFAULT_MODEL),
            (LABEL_MODEL_DEV, DEFAULT_MODEL_DEV),
        ):
            for row in [r for r in rows if r["method"] == src]:
                rows.append(dict(row, method=dst, note="= " + src))
    lf_scores = [
        float(task.errors(task.L_test[:, j], task.Y_test).mean())
        for j in range(task.n_lfs)
    ]
    for name, value in zip(task.lf_names, lf_scores, strict=True):
        record(SINGLE_LF + name, value, 0.0)
    best = int(np.argmin(lf_scores))
    record(BEST_LF, lf_scores[best], 0.0, task.lf_names[best])
    return pd.DataFrame(rows, columns=COLUMNS)


def _progress(items: list[Any], enabled: bool) -> Iterable[Any]:
    if not enabled:
        return items
    try:
        from tqdm import tqdm
    except ImportError:  # pragma: no cover - tqdm is a dependency
        return items
    return tqdm(items, desc="benchmark", file=sys.stderr, leave=False)


def run_benchmark(
    tasks: Sequence[str] | None = None,
    quick: bool = False,
    seeds: Sequence[int] | None = (0,),
    out: str | Path | None = None,
    *,
    progress: bool = False,
) -> pd.DataFrame:
    """Run every method on every task and seed; optionally write the results.

    Parameters
    ----------
    tasks : sequence of str, optional
        Names of ``ss.datasets.TASKS`` (default: all).
    quick : bool, default=False
        Score on at most 2,000 training and 1,000 test rows per task (drawn at
        random with the seed).
    seeds : sequence of int, default=(0,)
        Each seed draws the task's split (the loader's ``seed``) and seeds the
        methods. None: 0-2, or 0 with ``quick``.
    out : str or Path, optional
        Folder for ``benchmark.csv``, ``benchmark.md`` and ``benchmark.png``.
    progress : bool, default=False
        Show a tqdm progress bar on stderr.

    Returns
    -------
    results : pandas.DataFrame
        Tidy: one row per task, seed and method, with columns ``task``, ``seed``,
        ``method``, ``metric`` (mean held-out task metric), ``normalized_metric``,
        ``n_test``, ``fit_seconds`` (fit and predict), ``metric_name`` and ``note``.
    """
    names = list(TASKS) if tasks is None else list(tasks)
    unknown = [t for t in names if t not in TASKS]
    if unknown:
        raise ValueError(f"tasks must be among {sorted(TASKS)}; got {unknown}.")
    if seeds is None:
        seeds = QUICK_SEEDS if quick else FULL_SEEDS
    frames = []
    for name, seed in _progress([(n, s) for n in names for s in seeds], progress):
        task = TASKS[name](seed=seed)
        if quick:
            task = _subsample(task, *QUICK_ROWS, seed)
        frames.append(run_task(task, seed))
    results = pd.concat(frames, ignore_index=True)
    if out is not None:
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        results.to_csv(out / "benchmark.csv", index=False)
        (out / "benchmark.md").write_text(benchmark_table(results))
        plot_benchmark(results, out / "benchmark.png")
    return results


def _medians(results: pd.DataFrame) -> pd.DataFrame:
    main = results[results["method"].isin(METHODS)]
    table = main.groupby(["task", "method"], sort=False)["normalized_metric"]
    wide = table.median().unstack("method")
    return wide.reindex(columns=[m for m in METHODS if m in wide.columns])


def benchmark_table(results: pd.DataFrame, digits: int = 4) -> str:
    """Markdown table: one row per task, the median normalized metric of each method.

    The best value of a row (lowest; the oracle best single LF excluded) is bold.
    ``LM - best agg.`` is the label model's median minus that of the best unweighted
    aggregator (negative: the label model wins).
    """
    wide = _medians(results)
    meta = results.drop_duplicates("task").set_index("task")
    seeds = results.groupby("task")["seed"].nunique()
    fair = [m for m in wide.columns if m != BEST_LF]
    header = ["task", "metric (normalizer)", "seeds", *wide.columns, "LM - best agg."]
    lines = [
        "| " + " | ".join(header) + " |",
        "|" + "|".join(["---"] * 3 + ["---:"] * (len(header) - 3)) + "|",
    ]
    for task, row in wide.iterrows():
        best = row[fair].min(skipna=True)
        cells = []
        for m in wide.columns:
            v = row[m]
            text = "n/a" if pd.isna(v) else f"{v:.{digits}f}"
            cells.append(f"**{text}**" if m in fair and v == best else text)
        aggs = row[[m for m in AGGREGATORS if m in row.index]].min(skipna=True)
        gap = row.get(LABEL_MODEL, np.nan) - aggs
        lines.append(
            "| "
            + " | ".join(
                [
                    str(task),
                    str(meta.loc[task, "metric_name"]),
                    str(seeds[task]),
                    *cells,
                    "n/a" if pd.isna(gap) else f"{gap:+.{digits}f}",
                ]
            )
            + " |"
        )
    notes = results[(results["method"] == BEST_LF)]
    picked = notes.groupby("task")["note"].agg(lambda s: ", ".join(sorted(set(s))))
    lines.append("")
    lines.append(
        "Median over seeds of the mean held-out metric divided by the task's "
        "normalizer (lower is better); bold: best of the row without the oracle "
        "'best single LF', which is picked with the held-out truth ("
        + "; ".join(f"{t}: {p}" for t, p in picked.items())
        + "). A row a method abstains on is scored as the task's know-nothing answer."
    )
    return "\n".join(lines) + "\n"


def plot_benchmark(results: pd.DataFrame, path: str | Path) -> None:
    """One panel per task: the median normalized metric of each method (bars)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:  # figures need the plots extra; tables still work
        print(
            "matplotlib is not installed: skipping benchmark.png "
            "(pip install 'snorkel-structured[plots]').",
            file=sys.stderr,
        )
        return
    wide = _medians(results)
    n = len(wide)
    ncols = min(3, n)
    nrows = -(-n // ncols)
    fig, axes = plt.subplots(
        nrows, ncols, figsize=(5.2 * ncols, 3.2 * nrows), squeeze=False
    )
    colors = {m: f"C{i}" for i, m in enumerate(METHODS)}
    for ax, (task, row) in zip(axes.ravel(), wide.iterrows(), strict=False):
        row = row.dropna()
        ax.barh(row.index, row.to_numpy(), color=[colors[m] for m in row.index])
        ax.invert_yaxis()
        ax.set_title(str(task), fontsize=10)
        ax.set_xlabel("normalized metric (lower is better)", fontsize=8)
        ax.tick_params(labelsize=7)
    for ax in axes.ravel()[n:]:
        ax.set_visible(False)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
