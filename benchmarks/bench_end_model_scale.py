"""End models at scale (issue 15): low-rank kernels, vectorized Frechet means, streaming.

Parts (``--part``):

- ``structured``: KernelStructuredPredictor on the paper's end-model setup (S4 under
  Kendall tau, two random centers with prior [0.2, 0.8], features from scikit-learn's
  ``make_classification`` with 10 features, 5 informative, class = center), clean
  labels, n_train in ``--sizes``, n_test = ``--n-test`` (default: n_train). Against
  scikit-learn's ``Nystroem(n_components=1000) + RidgeClassifier`` on the same data in
  the same process. Each size runs in its own subprocess (peak RSS by
  ``resource.getrusage``, peak traced NumPy memory of fit and predict by
  ``tracemalloc``); ``--repeats`` fits and predicts, medians reported.
- ``manifold``: KernelManifoldRegressor on S^2, 3 LFs (wrapped normal, scales 0.02,
  0.1, 0.4) with a fitted ManifoldLabelModel, ``--manifold-train`` training rows,
  ``--manifold-queries`` queries. Three predictions from the same fitted kernel solve:
  the default (truncated weights, vectorized Newton), the previous implementation
  (every positive weight, ``space.frechet_mean`` on blocks; once, it is slow) and the
  baseline (kernel-weighted extrinsic mean of the same rows, projected). Accuracy is
  the mean squared geodesic error to the true labels.

    python benchmarks/bench_end_model_scale.py --part structured --sizes 20000 1000000
- ``paper``: the paper's end-model experiment exactly as ``snorkel-structured
  reproduce ranking-end-model`` runs it (same data, label model and loss weights),
  with the kernel predictor under three settings: ``gamma="scale", nu=1e-3`` (the
  previous defaults), ``gamma="auto", nu=1e-3`` (what the experiment passes now) and
  the new defaults ``gamma="auto", nu="auto"``. Accuracy of noise-aware weights,
  naive pseudolabels and clean labels; medians over seeds.

    python benchmarks/bench_end_model_scale.py --part manifold
    python benchmarks/bench_end_model_scale.py --part paper
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
import tracemalloc

import numpy as np
from _common import environment  # benchmarks/ is on sys.path when run as a script

import snorkel_structured as ss


def _ranking_problem(n, seed):
    from sklearn.datasets import make_classification

    rng = np.random.default_rng(seed)
    centers = rng.choice(24, size=2, replace=False)
    X, c = make_classification(
        n_samples=n,
        n_features=10,
        n_informative=5,
        n_classes=2,
        weights=[0.2],
        random_state=seed,
    )
    return X, centers[c]


def _peak_rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def worker_structured(args):
    """One size, in its own process: prints one JSON line."""
    from sklearn.kernel_approximation import Nystroem
    from sklearn.linear_model import RidgeClassifier
    from sklearn.pipeline import make_pipeline

    n = args.size
    n_test = args.n_test or n
    X, Y = _ranking_problem(n + n_test, args.seed)
    Xtr, Xte, Ytr, Yte = X[:n], X[n:], Y[:n], Y[n:]
    space = ss.Permutations(4)
    rec = {"bench": "end_model_scale_structured", "n_train": n, "n_query": n_test}
    fits, preds, accs, fit_mem, pred_mem = [], [], [], [], []
    for _ in range(args.repeats):
        model = ss.KernelStructuredPredictor(space)
        tracemalloc.start()
        t0 = time.perf_counter()
        model.fit(Xtr, Ytr)
        fits.append(time.perf_counter() - t0)
        fit_mem.append(tracemalloc.get_traced_memory()[1] / 2**20)
        tracemalloc.reset_peak()
        t0 = time.perf_counter()
        pred = model.predict(Xte, progress_bar=args.progress_bar)
        preds.append(time.perf_counter() - t0)
        pred_mem.append(tracemalloc.get_traced_memory()[1] / 2**20)
        tracemalloc.stop()
        accs.append(float(np.mean(pred == Yte)))
    rec.update(
        fit_s=float(np.median(fits)),
        predict_s=float(np.median(preds)),
        fit_s_all=fits,
        predict_s_all=preds,
        accuracy=accs[-1],
        gamma=model.gamma_,
        nu=model.nu_,
        n_components=model.n_components_,
        fit_traced_peak_mb=max(fit_mem),
        predict_traced_peak_mb=max(pred_mem),
        peak_rss_mb_before_baseline=_peak_rss_mb(),
    )
    if n <= args.baseline_max:
        bt, bacc = [], None
        for _ in range(args.repeats):
            base = make_pipeline(
                Nystroem(n_components=1000, random_state=0), RidgeClassifier()
            )
            t0 = time.perf_counter()
            bpred = base.fit(Xtr, Ytr).predict(Xte)
            bt.append(time.perf_counter() - t0)
            bacc = float(np.mean(bpred == Yte))
        rec.update(
            baseline="Nystroem(1000)+RidgeClassifier",
            baseline_s=float(np.median(bt)),
            baseline_s_all=bt,
            baseline_accuracy=bacc,
            ratio_fit_predict_to_baseline=(rec["fit_s"] + rec["predict_s"])
            / float(np.median(bt)),
        )
    rec["peak_rss_mb"] = _peak_rss_mb()
    rec.update(environment())
    print(json.dumps(rec), flush=True)


def run_structured(args):
    for n in args.sizes:
        cmd = [
            sys.executable,
            os.path.abspath(__file__),
            "--worker",
            "--size",
            str(n),
            "--repeats",
            str(args.repeats if n <= args.baseline_max else 1),
            "--seed",
            str(args.seed),
            "--baseline-max",
            str(args.baseline_max),
        ]
        if args.n_test:
            cmd += ["--n-test", str(args.n_test)]
        out = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if out.returncode != 0:
            print(out.stderr, file=sys.stderr)
            continue
        line = out.stdout.strip().splitlines()[-1]
        print(line, flush=True)
        r = json.loads(line)
        print(
            f"[structured] n_train={r['n_train']:>8} n_query={r['n_query']:>8} "
            f"fit {r['fit_s']:.2f} s predict {r['predict_s']:.2f} s "
            f"peak RSS {r['peak_rss_mb']:.0f} MB acc {r['accuracy']:.4f} "
            f"baseline {r.get('baseline_s', float('nan')):.2f} s "
            f"acc {r.get('baseline_accuracy', float('nan')):.4f}",
            file=sys.stderr,
        )


def _manifold_problem(n, seed):
    rng = np.random.default_rng(seed)
    space = ss.Sphere(2)
    F = rng.normal(size=(n, 2))
    Y = space.projection(np.c_[F, np.ones(n)])
    X = ss.WrappedNormal(space).sample(
        np.repeat(Y[:, None], 3, axis=1), [0.02, 0.1, 0.4], seed=rng
    )
    return space, F, Y, X


def _old_predict(model, F):
    """The previous predict: every positive weight, space.frechet_mean on blocks."""
    space = model.space
    w = np.maximum(model._alpha(F), 0.0)
    n, m, D = model.targets_.shape
    points = model.targets_.reshape(n * m, D)
    weights = (w[:, :, None] * model.beta_[None, None, :]).reshape(len(F), n * m)
    present = ~np.isnan(points[:, 0])
    points, weights = points[present], weights[:, present]
    block = max(1, 4_000_000 // max(1, points.shape[0] * D))
    out = np.empty((len(F), D))
    for s in range(0, len(F), block):
        wb = weights[s : s + block]
        pts = np.broadcast_to(points, (len(wb), *points.shape))
        out[s : s + block] = space.frechet_mean(
            pts, wb, tol=model.tol, max_iter=model.max_iter
        )
    return out


def _extrinsic_predict(model, F):
    """Baseline: kernel-weighted extrinsic mean of the same rows, projected."""
    w = np.maximum(model._alpha(F), 0.0)
    T = model.targets_
    present = ~np.isnan(T[:, :, 0])
    pts = np.where(present[..., None], T, 0.0)
    per_row = np.einsum("nm,nmd->nd", present * model.beta_[None, :], pts)
    return model.space.projection(w @ per_row)


def run_manifold(args):
    n, q = args.manifold_train, args.manifold_queries
    space, F, Y, X = _manifold_problem(n + q, args.seed)
    lm = ss.ManifoldLabelModel(space).fit(X[:n])
    model = ss.KernelManifoldRegressor(space, nu=1e-4).fit(F[:n], X[:n], lm)
    Fq, Yq = F[n:], Y[n:]

    def err(pred):
        return float(np.mean(space.squared_dist(pred, Yq)))

    new_t, base_t = [], []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        pred = model.predict(Fq)
        new_t.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        base = _extrinsic_predict(model, Fq)
        base_t.append(time.perf_counter() - t0)
    rec = {
        "bench": "end_model_scale_manifold",
        "space": repr(space),
        "n_train": n,
        "n_query": q,
        "n_components": model.n_components_,
        "weight_tol": model.weight_tol,
        "predict_s": float(np.median(new_t)),
        "predict_s_all": new_t,
        "baseline": "kernel-weighted extrinsic mean",
        "baseline_s": float(np.median(base_t)),
        "baseline_s_all": base_t,
        "ratio_to_baseline": float(np.median(new_t) / np.median(base_t)),
        "sq_err": err(pred),
        "baseline_sq_err": err(base),
    }
    if not args.skip_old:
        t0 = time.perf_counter()
        old = _old_predict(model, Fq)
        rec["old_predict_s"] = time.perf_counter() - t0
        rec["old_sq_err"] = err(old)
        rec["max_dist_to_old"] = float(np.max(space.dist(pred, old)))
        rec["rel_err_change"] = (rec["sq_err"] - rec["old_sq_err"]) / rec["old_sq_err"]
    rec.update(environment())
    print(json.dumps(rec), flush=True)
    print(
        f"[manifold] n_train={n} n_query={q} predict {rec['predict_s']:.2f} s "
        f"(baseline {rec['baseline_s']:.2f} s, x{rec['ratio_to_baseline']:.1f}) "
        f"sq_err {rec['sq_err']:.5f} baseline {rec['baseline_sq_err']:.5f} "
        f"old {rec.get('old_sq_err', float('nan')):.5f} "
        f"in {rec.get('old_predict_s', float('nan')):.1f} s",
        file=sys.stderr,
    )


PAPER_SETTINGS = {
    "previous (scale, 1e-3)": dict(gamma="scale", nu=1e-3),
    "experiment now (auto, 1e-3)": dict(gamma="auto", nu=1e-3),
    "new defaults (auto, auto)": dict(gamma="auto", nu="auto"),
}


def run_paper(args):
    import warnings

    import pandas as pd

    from snorkel_structured.experiments.runs import _center_features, _fit
    from snorkel_structured.synthetic import make_ranking_data

    rows = []
    for n in args.paper_sizes:
        for seed in args.paper_seeds:
            data = make_ranking_data(n, theta=(0.0, 0.0, 1.0), seed=seed)
            X = _center_features(data, seed)
            half = n // 2
            tr, te = slice(0, half), slice(half, n)
            lm, _, _ = _fit(data.space, data.L[tr], "mle", seed)
            pseudo = lm.predict(data.L[tr])
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                weights = lm.loss_weights(data.L[tr], seed=seed)
            for setting, kw in PAPER_SETTINGS.items():
                for target_name, target in (
                    ("noise_aware", weights),
                    ("naive", pseudo),
                    ("clean", data.Y[tr]),
                ):
                    model = ss.KernelStructuredPredictor(data.space, **kw).fit(
                        X[tr], target
                    )
                    acc = float(np.mean(model.predict(X[te]) == data.Y[te]))
                    rows.append(
                        dict(
                            n=n,
                            seed=seed,
                            setting=setting,
                            target=target_name,
                            accuracy=acc,
                            nu=model.nu_,
                            gamma=model.gamma_,
                        )
                    )
    df = pd.DataFrame(rows)
    med = df.pivot_table(
        index=["setting", "n"], columns="target", values="accuracy", aggfunc="median"
    )
    mean = df.pivot_table(
        index=["setting", "n"], columns="target", values="accuracy", aggfunc="mean"
    )
    med["gap (clean - noise_aware)"] = med["clean"] - med["noise_aware"]
    mean["gap (clean - noise_aware)"] = mean["clean"] - mean["noise_aware"]
    for (setting, n), r in med.iterrows():
        rec = {
            "bench": "end_model_scale_paper",
            "setting": setting,
            "n": int(n),
            "seeds": list(args.paper_seeds),
            "median": r.to_dict(),
            "mean": mean.loc[(setting, n)].to_dict(),
            **environment(),
        }
        print(json.dumps(rec), flush=True)
    print("medians over seeds\n" + med.round(4).to_string(), file=sys.stderr)
    print("means over seeds\n" + mean.round(4).to_string(), file=sys.stderr)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument(
        "--part",
        nargs="+",
        default=["structured", "manifold"],
        choices=["structured", "manifold", "paper"],
    )
    p.add_argument("--paper-sizes", type=int, nargs="+", default=[200, 500, 1000, 2000])
    p.add_argument("--paper-seeds", type=int, nargs="+", default=list(range(10)))
    p.add_argument("--sizes", type=int, nargs="+", default=[20_000, 1_000_000])
    p.add_argument("--n-test", type=int, default=0, help="0: as many as n_train")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--baseline-max",
        type=int,
        default=100_000,
        help="run the scikit-learn baseline up to this n_train",
    )
    p.add_argument("--manifold-train", type=int, default=3000)
    p.add_argument("--manifold-queries", type=int, default=2000)
    p.add_argument("--skip-old", action="store_true")
    p.add_argument("--progress-bar", action="store_true")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--size", type=int, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        worker_structured(args)
        return
    parts = {"structured": run_structured, "manifold": run_manifold, "paper": run_paper}
    for part in args.part:
        parts[part](args)


if __name__ == "__main__":
    main()
