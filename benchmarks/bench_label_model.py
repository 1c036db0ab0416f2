"""Benchmarks of StructuredLabelModel (issue 3): recovery, accuracy, beyond the paper, speed.

Against Snorkel's LabelModel on its own generator: bench_snorkel_generators.py.

Prints a table per section to stderr and one JSONL line per configuration to stdout.

    python benchmarks/bench_label_model.py                       # everything
    python benchmarks/bench_label_model.py --sections speed --repeats 7
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
import warnings

import numpy as np

import snorkel_structured as ss
from snorkel_structured.experiments.paper import RANKING_RECOVERY_TENSOR as PAPER_TENSOR
from snorkel_structured.noise.finite import log_conditional_probs, log_posterior

ENV = {
    "package": ss.__version__,
    "numpy": np.__version__,
    "cpu": platform.processor() or platform.machine(),
    "n_cpu": os.cpu_count(),
}


def emit(record: dict) -> None:
    print(json.dumps({**record, **ENV}), flush=True)


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def fit(space, L, **kw):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t0 = time.perf_counter()
        lm = ss.StructuredLabelModel(space, **kw).fit(L)
        dt = time.perf_counter() - t0
    return (
        lm,
        dt,
        sorted({f"{w.category.__name__}: {str(w.message)[:90]}" for w in caught}),
    )


def recovery(seeds, sizes, estimators):
    log(
        "\n== Recovery (S4 Kendall, theta=[0.6,0.99,0.8], k=2): median |E d^2 - est| per LF =="
    )
    log(f"{'n':>8} {'method':>8}  LF1     LF2     LF3     (paper tensor)       fit s")
    for n in sizes:
        rows = {e: [] for e in estimators}
        floor, times = [], {e: [] for e in estimators}
        for s in seeds:
            d = ss.synthetic.make_ranking_data(n, seed=s)
            S = d.space.squared_distance_matrix
            floor.append(np.abs(S[d.L, d.Y[:, None]].mean(0) - d.expected_sq_dist))
            for e in estimators:
                lm, dt, _ = fit(d.space, d.L, estimator=e, n_components=2, seed=s)
                rows[e].append(np.abs(lm.expected_sq_dist_ - d.expected_sq_dist))
                times[e].append(dt)
        fl = np.median(floor, axis=0)
        log(f"{n:>8} {'floor':>8}  " + "  ".join(f"{v:.4f}" for v in fl))
        emit(
            {
                "section": "recovery",
                "n": n,
                "method": "floor",
                "median_abs_err": fl.tolist(),
            }
        )
        for e in estimators:
            med = np.median(rows[e], axis=0)
            log(
                f"{n:>8} {e:>8}  "
                + "  ".join(f"{v:.4f}" for v in med)
                + f"  {PAPER_TENSOR.get(n, '')}  {np.median(times[e]):.3f}"
                + (
                    f"  ratio_to_paper_max={np.max(med / np.array(PAPER_TENSOR[n])):.3f}"
                    f" ratio_to_floor_max={np.max(med / fl):.2f}"
                    if n in PAPER_TENSOR
                    else ""
                )
            )
            emit(
                {
                    "section": "recovery",
                    "n": n,
                    "method": e,
                    "median_abs_err": med.tolist(),
                    "paper_tensor": PAPER_TENSOR.get(n),
                    "median_fit_s": float(np.median(times[e])),
                }
            )


def exact_posterior_accuracy(d):
    S = d.space.squared_distance_matrix
    with np.errstate(divide="ignore"):
        lp = log_posterior(d.L, log_conditional_probs(S, d.theta), np.log(d.prior))
    return float((lp.argmax(1) == d.Y).mean())


def accuracy(seeds, sizes, estimators):
    log(
        "\n== Label-model accuracy, theta=[0,0,1] (exact permutation match) : median over seeds =="
    )
    log(
        f"{'n':>6} {'exact':>7} "
        + " ".join(f"{e:>8}" for e in estimators)
        + "  likelier-center"
    )
    for n in sizes:
        res = {e: [] for e in estimators}
        exact, center, warns = [], [], {e: set() for e in estimators}
        for s in seeds:
            d = ss.synthetic.make_ranking_data(n, theta=[0.0, 0.0, 1.0], seed=s)
            exact.append(exact_posterior_accuracy(d))
            center.append(
                float((d.Y == d.support[np.argmax(d.prior[d.support])]).mean())
            )
            for e in estimators:
                lm, _, w = fit(d.space, d.L, estimator=e, n_components=2, seed=s)
                res[e].append(
                    float((lm.predict(d.L, tie_break_policy="random") == d.Y).mean())
                )
                warns[e].update(w)
        med = {e: float(np.median(v)) for e, v in res.items()}
        log(
            f"{n:>6} {np.median(exact):7.4f} "
            + " ".join(f"{med[e]:8.4f}" for e in estimators)
            + f"  {np.median(center):.4f}   gap(mle)={np.median(exact) - med.get('mle', np.nan):+.4f}"
        )
        emit(
            {
                "section": "accuracy",
                "n": n,
                "exact_posterior": float(np.median(exact)),
                "likelier_center": float(np.median(center)),
                **{f"acc_{e}": med[e] for e in estimators},
                "warnings": {e: sorted(w)[:3] for e, w in warns.items()},
            }
        )
    for e in estimators:
        if warns[e]:
            log(f"  warnings ({e}): " + " | ".join(sorted(warns[e])[:2]))


def beyond(seeds, n, estimators):
    log(f"\n== Beyond the paper: S5 footrule, k=3, m=5, 20% abstain, n={n} ==")
    theta = [0.03, 0.05, 0.08, 0.04, 0.06]
    for s in seeds:
        d = ss.synthetic.make_ranking_data(
            n,
            n_items=5,
            metric="spearman_footrule",
            theta=theta,
            n_centers=3,
            center_probs=(0.2, 0.3, 0.5),
            abstain=0.2,
            seed=s,
        )
        for e in estimators:
            lm, dt, w = fit(d.space, d.L, estimator=e, n_components=3, seed=s)
            rel = np.abs(lm.expected_sq_dist_ - d.expected_sq_dist) / d.expected_sq_dist
            ok = set(lm.support_.tolist()) == set(d.support.tolist())
            log(
                f"seed {s} {e:>7}: rel err "
                + " ".join(f"{v:.4f}" for v in rel)
                + f"  max={rel.max():.4f}  support ok={ok}  fit {dt:.2f}s {w[:1]}"
            )
            emit(
                {
                    "section": "beyond",
                    "seed": s,
                    "n": n,
                    "method": e,
                    "rel_err": rel.tolist(),
                    "support_ok": ok,
                    "fit_s": dt,
                    "true_expected_sq_dist": d.expected_sq_dist.tolist(),
                }
            )


def speed(repeats, n):
    log(f"\n== Speed (n={n}, m=3, S4) medians of {repeats} runs ==")
    d = ss.synthetic.make_ranking_data(n, seed=0)
    for e in ("mle", "tensor"):
        ts, tp = [], []
        for _ in range(repeats):
            lm, dt, _ = fit(d.space, d.L, estimator=e, n_components=2, seed=0)
            ts.append(dt)
            t0 = time.perf_counter()
            lm.predict_proba(d.L)
            tp.append(time.perf_counter() - t0)
        log(f"{e:>7}: fit {np.median(ts):.3f}s  predict_proba {np.median(tp):.3f}s")
        emit(
            {
                "section": "speed",
                "n": n,
                "method": e,
                "fit_s": float(np.median(ts)),
                "predict_proba_s": float(np.median(tp)),
                "repeats": repeats,
            }
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument(
        "--sections",
        nargs="+",
        default=["recovery", "accuracy", "beyond", "speed"],
    )
    ap.add_argument("--seeds", nargs="+", type=int, default=list(range(10)))
    ap.add_argument(
        "--sizes", nargs="+", type=int, default=[1000, 10000, 100000, 1000000]
    )
    ap.add_argument("--acc-sizes", nargs="+", type=int, default=[200, 500, 1000, 2000])
    ap.add_argument("--estimators", nargs="+", default=["mle", "tensor"])
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    if "recovery" in args.sections:
        recovery(args.seeds, args.sizes, args.estimators)
    if "accuracy" in args.sections:
        accuracy(args.seeds, args.acc_sizes, args.estimators)
    if "beyond" in args.sections:
        beyond(args.seeds[:3], 100000, args.estimators)
    if "speed" in args.sections:
        speed(args.repeats, 1000000)


if __name__ == "__main__":
    main()
