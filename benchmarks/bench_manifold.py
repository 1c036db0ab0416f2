"""Benchmarks for manifold-valued weak supervision (issue 5).

Sections (all seeded; baselines measured in the same run; prints JSONL lines and tables):

- ``hyperbolic``: the paper's figure. H^5, three LFs, wrapped normal with tangent variance
  theta_a ~ U(0, 5) drawn per trial, y fixed at the origin, 10 seeded trials per n;
  median |theta_1 - estimate| for the plain cosh invariant ("triplet"), the pairwise
  squared-distance fit ("pair_sq_dist") and UWS, beside the paper's numbers.
- ``recovery``: S^2, R^3, H^5 with y random, m = 5 LFs, 20% abstains, both noise
  families; max relative error of E d^2 over LFs; pseudolabel quality (mean squared
  geodesic error of the weighted Frechet mean vs the unweighted mean vs the best LF).
- ``speed``: fit time at n = 1e6, m = 3 on H^5 (median of repeated runs).

Usage: ``python benchmarks/bench_manifold.py [--sections hyperbolic recovery speed]
[--sizes 100 1000 ...] [--trials 10] [--quick]``
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import time
import warnings

import numpy as np

import snorkel_structured as ss
from snorkel_structured.synthetic_manifold import make_manifold_data

PAPER = {100: 0.16, 1000: 0.076, 10000: 0.022, 100000: 0.019, 1000000: 0.021}
ESTIMATORS = ("triplet", "pair_sq_dist", "uws")


def _info():
    return {
        "package": ss.__version__,
        "numpy": np.__version__,
        "cpu": platform.processor() or platform.machine(),
        "n_cpus": os.cpu_count(),
    }


def _peak_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _emit(rec):
    print(json.dumps({**rec, **_info()}), flush=True)


def _fit(space, X, estimator, noise="wrapped_normal"):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return ss.ManifoldLabelModel(space, estimator=estimator, noise=noise).fit(X)
        except ValueError:
            return None


def bench_hyperbolic(sizes, trials):
    h = ss.Hyperbolic(5)
    rows = []
    for n in sizes:
        errs = {e: [] for e in ESTIMATORS}
        times = {e: [] for e in ESTIMATORS}
        for trial in range(trials):
            rng = np.random.default_rng(trial)
            theta = rng.uniform(0.0, 5.0, size=3)
            data = make_manifold_data(n, space=h, noise_scale=theta, y=None, seed=rng)
            for e in ESTIMATORS:
                t0 = time.perf_counter()
                lm = _fit(h, data.X, e)
                times[e].append(time.perf_counter() - t0)
                errs[e].append(
                    np.nan if lm is None else abs(lm.noise_scale_[0] - theta[0])
                )
        rec = {
            "section": "hyperbolic",
            "n_samples": n,
            "trials": trials,
            "paper": PAPER.get(n),
        }
        for e in ESTIMATORS:
            rec[f"median_abs_err_{e}"] = float(np.nanmedian(errs[e]))
            rec[f"failed_{e}"] = int(np.isnan(errs[e]).sum())
            rec[f"median_fit_s_{e}"] = float(np.median(times[e]))
        rec["peak_rss_mb"] = _peak_mb()
        _emit(rec)
        rows.append(rec)
    print("\n| n | paper (oracle) | triplet (cosh) | pair_sq_dist | UWS |")
    print("|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['n_samples']:.0e} | {r['paper']} | {r['median_abs_err_triplet']:.4f} | "
            f"{r['median_abs_err_pair_sq_dist']:.4f} | {r['median_abs_err_uws']:.4f} |"
        )


def bench_recovery(n, trials):
    settings = [
        (ss.Sphere(2), "wrapped_normal", [0.05, 0.1, 0.2, 0.3, 0.5]),
        (ss.Sphere(2), "riemannian_gaussian", [1.0, 2.0, 4.0, 8.0, 3.0]),
        (ss.Euclidean(3), "wrapped_normal", [0.05, 0.1, 0.2, 0.3, 0.5]),
        (ss.Euclidean(3), "riemannian_gaussian", [1.0, 2.0, 4.0, 8.0, 3.0]),
        (ss.Hyperbolic(5), "wrapped_normal", [0.05, 0.1, 0.2, 0.3, 0.5]),
        (ss.Hyperbolic(5), "riemannian_gaussian", [1.0, 2.0, 4.0, 8.0, 3.0]),
    ]
    rows = []
    for space, noise, scale in settings:
        rel = {e: [] for e in ESTIMATORS}
        q = {"weighted": [], "unweighted": [], "best_lf": [], "beta_squared": []}
        for trial in range(trials):
            data = make_manifold_data(
                n,
                space=space,
                noise=noise,
                noise_scale=scale,
                abstain=0.2,
                seed=100 + trial,
            )
            for e in ESTIMATORS:
                lm = _fit(space, data.X, e, noise)
                rel[e].append(
                    np.nan
                    if lm is None
                    else float(
                        np.max(np.abs(lm.expected_sq_dist_ / data.expected_sq_dist - 1))
                    )
                )
                if e == "triplet":
                    k = min(n, 20000)
                    Xk, Yk = data.X[:k], data.Y[:k]
                    some = ~np.isnan(Xk[..., 0]).all(axis=1)
                    q["weighted"].append(
                        np.mean(space.squared_dist(lm.predict(Xk)[some], Yk[some]))
                    )
                    q["unweighted"].append(
                        np.mean(
                            space.squared_dist(space.frechet_mean(Xk)[some], Yk[some])
                        )
                    )
                    lm2 = ss.ManifoldLabelModel(
                        space, noise=noise, weighting="beta_squared"
                    ).fit(data.X)
                    q["beta_squared"].append(
                        np.mean(space.squared_dist(lm2.predict(Xk)[some], Yk[some]))
                    )
                    per_lf = np.nanmean(space.squared_dist(Xk, Yk[:, None, :]), axis=0)
                    q["best_lf"].append(float(np.min(per_lf)))
        rec = {
            "section": "recovery",
            "space": repr(space),
            "noise": noise,
            "n_samples": n,
            "n_lfs": len(scale),
            "abstain": 0.2,
            "trials": trials,
        }
        for e in ESTIMATORS:
            rec[f"max_rel_err_{e}"] = float(np.nanmedian(rel[e]))
        for k, v in q.items():
            rec[f"pseudolabel_mse_{k}"] = float(np.median(v))
        rec["peak_rss_mb"] = _peak_mb()
        _emit(rec)
        rows.append(rec)
    print(
        "\n| space | noise | triplet | pair_sq_dist | UWS | MSE weighted | beta^2 | unweighted | best LF |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['space']} | {r['noise']} | {r['max_rel_err_triplet']:.2%} | "
            f"{r['max_rel_err_pair_sq_dist']:.2%} | {r['max_rel_err_uws']:.2%} | "
            f"{r['pseudolabel_mse_weighted']:.4f} | {r['pseudolabel_mse_beta_squared']:.4f} | "
            f"{r['pseudolabel_mse_unweighted']:.4f} | {r['pseudolabel_mse_best_lf']:.4f} |"
        )


def bench_speed(n, repeats):
    h = ss.Hyperbolic(5)
    data = make_manifold_data(n, space=h, noise_scale=[1.0, 2.0, 3.0], y=None, seed=0)
    print("\n| estimator | n | median fit s | runs |")
    print("|---|---|---|---|")
    for e in ESTIMATORS:
        ts = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            _fit(h, data.X, e)
            ts.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ss.ManifoldLabelModel(h).fit(data.X).predict(data.X[:100000])
        pred = time.perf_counter() - t0
        _emit(
            {
                "section": "speed",
                "estimator": e,
                "n_samples": n,
                "n_lfs": 3,
                "median_fit_s": float(np.median(ts)),
                "runs": ts,
                "fit_plus_predict_1e5_s": pred,
                "peak_rss_mb": _peak_mb(),
            }
        )
        print(f"| {e} | {n:.0e} | {np.median(ts):.3f} | {repeats} |")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--sections",
        nargs="+",
        default=["hyperbolic", "recovery", "speed"],
        choices=["hyperbolic", "recovery", "speed"],
    )
    p.add_argument(
        "--sizes", nargs="+", type=int, default=[100, 1000, 10000, 100000, 1000000]
    )
    p.add_argument("--trials", type=int, default=10)
    p.add_argument("--recovery-n", type=int, default=100000)
    p.add_argument("--recovery-trials", type=int, default=3)
    p.add_argument("--speed-n", type=int, default=1000000)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--quick", action="store_true", help="small sizes for a smoke run")
    a = p.parse_args(argv)
    if a.quick:
        a.sizes, a.trials, a.recovery_n, a.recovery_trials, a.speed_n, a.repeats = (
            [100, 1000],
            3,
            5000,
            1,
            50000,
            2,
        )
    if "hyperbolic" in a.sections:
        bench_hyperbolic(a.sizes, a.trials)
    if "recovery" in a.sections:
        bench_recovery(a.recovery_n, a.recovery_trials)
    if "speed" in a.sections:
        bench_speed(a.speed_n, a.repeats)


if __name__ == "__main__":
    main()
