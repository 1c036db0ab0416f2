"""Noise-aware end model: the paper's ranking end-model experiment, a noisier setting,
and timing of the kernel structured predictor.

Parts (``--part``):

- ``paper``: S4 under Kendall tau, two random centers with prior [0.2, 0.8], LFs
  with theta = [0, 0, 1]; features from scikit-learn's ``make_classification``
  (class = which center), n in {200, 500, 1000, 2000}, seeds 0-9, train on the
  first half, test on the second. Accuracy (exact permutation) of logistic
  regression on our pseudolabels, the kernel predictor with noise-aware weights,
  with naive pseudolabels, and with clean labels (plus mean d^2 to the truth).
- ``noisy``: four centers and weaker LFs (pseudolabels ~70-80% right), as n grows;
  medians and quartiles over seeds.
- ``timing``: fit and predict of KernelStructuredPredictor at n_train=5,000,
  n_test=50,000, |Y| = 24 and 120; medians over repeats.

The label model is ``StructuredLabelModel(estimator=...)`` when that class exists
and ``--params`` is not ``true``; otherwise the true parameters are used (reported
in every JSONL line as ``"params"``). Prints a table to stderr and one JSON line
per configuration to stdout.

    python benchmarks/bench_end_model.py --part paper > end_model_paper.jsonl
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings

import numpy as np
from _common import environment  # benchmarks/ is on sys.path when run as a script
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression

import snorkel_structured as ss
from snorkel_structured.noise.finite import sample_votes


def _label_model_params(L_train, space, truth_theta, truth_prior, params, seed):
    """(theta, prior, source) for the pseudolabels: estimated when possible."""
    if params != "true":
        try:
            from snorkel_structured import StructuredLabelModel
        except ImportError:
            StructuredLabelModel = None
        if StructuredLabelModel is not None:
            lm = StructuredLabelModel(space, estimator=params, seed=seed).fit(L_train)
            return np.asarray(lm.theta_), np.asarray(lm.prior_), params
        if params != "auto":
            raise SystemExit(
                f"StructuredLabelModel is not available for --params {params}"
            )
    return truth_theta, truth_prior, "true"


def _make_problem(n, seed, *, n_centers, center_probs, theta, space, informative):
    rng = np.random.default_rng(seed)
    c_rng, v_rng = rng.spawn(2)
    centers = c_rng.choice(len(space), size=n_centers, replace=False)
    kw = {"n_informative": 5, "n_clusters_per_class": 1} if informative else {}
    X, cls = make_classification(
        n_samples=n,
        n_classes=n_centers,
        weights=list(center_probs[:-1]),
        random_state=seed,
        **kw,
    )
    Y = centers[cls]
    prior = np.zeros(len(space))
    prior[centers] = center_probs
    L = sample_votes(space.squared_distance_matrix, theta, Y, seed=v_rng)
    return X, Y, L, prior


def _fit_logreg(X, z, X_test):
    if np.unique(z).size < 2:
        return np.full(X_test.shape[0], z[0])
    return LogisticRegression(max_iter=1000).fit(X, z).predict(X_test)


def run_accuracy(args, part):
    space = ss.Permutations(4)
    if part == "paper":
        theta, n_centers, probs = np.array([0.0, 0.0, 1.0]), 2, np.array([0.2, 0.8])
        ns, informative = args.n_paper, False
    else:
        theta = np.array(args.noisy_theta)
        n_centers = args.noisy_centers
        probs = np.arange(1, n_centers + 1, dtype=float)
        probs /= probs.sum()
        ns, informative = args.n_noisy, True
    methods = [
        "pseudolabel_acc",
        "logreg_pseudo",
        "kernel_noise_aware",
        "kernel_naive",
        "kernel_clean",
        "logreg_clean",
        "sqdist_noise_aware",
        "sqdist_naive",
        "sqdist_clean",
    ]
    table = {}
    for n in ns:
        rows = []
        for seed in args.seeds:
            X, Y, L, prior = _make_problem(
                n,
                seed,
                n_centers=n_centers,
                center_probs=probs,
                theta=theta,
                space=space,
                informative=informative,
            )
            h = n // 2
            Xtr, Xte, Ytr, Yte, Ltr = X[:h], X[h:], Y[:h], Y[h:], L[:h]
            th, pr, source = _label_model_params(
                Ltr, space, theta, prior, args.params, seed
            )
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", ss.IllConditionedWarning)
                try:
                    W = ss.loss_weights(
                        Ltr,
                        space,
                        th,
                        pr,
                        rule=args.rule,
                        seed=seed,
                        min_prior=args.min_prior,
                    )
                    singular = False
                except ValueError as exc:  # singular Q under the estimate
                    singular = str(exc)
                    W = None
            res = {"seed": seed}
            km = dict(nu=args.nu, gamma=args.gamma)
            if W is not None:
                z = W["pseudolabel"].to_numpy()
                res["pseudolabel_acc"] = float(np.mean(z == Ytr))
                res["logreg_pseudo"] = float(np.mean(_fit_logreg(Xtr, z, Xte) == Yte))
                na = ss.KernelStructuredPredictor(space, **km).fit(Xtr, W)
                res["kernel_noise_aware"] = na.score(Xte, Yte)
                res["sqdist_noise_aware"] = -na.score(Xte, Yte, metric="neg_sq_dist")
                nv = ss.KernelStructuredPredictor(space, **km).fit(Xtr, z)
                res["kernel_naive"] = nv.score(Xte, Yte)
                res["sqdist_naive"] = -nv.score(Xte, Yte, metric="neg_sq_dist")
                res["condition_number"] = W.attrs["condition_number"]
                res["support_size"] = len(W.attrs["support"])
            cl = ss.KernelStructuredPredictor(space, **km).fit(Xtr, Ytr)
            res["kernel_clean"] = cl.score(Xte, Yte)
            res["sqdist_clean"] = -cl.score(Xte, Yte, metric="neg_sq_dist")
            res["logreg_clean"] = float(np.mean(_fit_logreg(Xtr, Ytr, Xte) == Yte))
            res["ill_conditioned_warnings"] = len(caught)
            res["singular"] = singular
            res["params"] = source
            rows.append(res)
        summary = {}
        for meth in methods:
            vals = np.array([r[meth] for r in rows if meth in r])
            if vals.size:
                q1, med, q3 = np.percentile(vals, [25, 50, 75])
                summary[meth] = {"median": med, "q1": q1, "q3": q3, "mean": vals.mean()}
        rec = {
            "bench": f"end_model_{part}",
            "n": n,
            "n_train": n // 2,
            "theta": theta.tolist(),
            "n_centers": n_centers,
            "rule": args.rule,
            "nu": args.nu,
            "gamma": args.gamma,
            "min_prior": args.min_prior,
            "params": sorted({r["params"] for r in rows}),
            "n_singular": sum(bool(r["singular"]) for r in rows),
            "summary": summary,
            "per_seed": rows,
            **environment(),
        }
        print(json.dumps(rec), flush=True)
        table[n] = summary
    print(
        f"\n[{part}] theta={theta.tolist()} centers={n_centers} rule={args.rule} "
        f"nu={args.nu} min_prior={args.min_prior} params={rec['params']}  "
        f"median [q1, q3] over seeds {args.seeds}",
        file=sys.stderr,
    )
    print(f"{'n':>6} " + " ".join(f"{m:>24}" for m in methods), file=sys.stderr)
    for n, s in table.items():
        cells = [
            f"{s[m]['median']:.3f} [{s[m]['q1']:.3f},{s[m]['q3']:.3f}]"
            if m in s
            else "-"
            for m in methods
        ]
        print(f"{n:>6} " + " ".join(f"{c:>24}" for c in cells), file=sys.stderr)


def run_timing(args):
    for n_items in args.timing_items:
        space = ss.Permutations(n_items)
        r = len(space)
        rng = np.random.default_rng(0)
        n_tr, n_te = args.n_train, args.n_test
        Y = rng.integers(r, size=n_tr + n_te)
        X = rng.normal(size=(n_tr + n_te, 20)) + 0.05 * Y[:, None]
        prior = np.full(r, 1.0 / r)
        L = sample_votes(
            space.squared_distance_matrix, [2.0, 2.0, 2.0], Y[:n_tr], seed=1
        )
        t0 = time.perf_counter()
        W = ss.loss_weights(
            L, space, [2.0, 2.0, 2.0], prior, seed=0, n_draws=2000, min_prior=0.0
        )
        t_weights = time.perf_counter() - t0
        for target_name, target in (("clean", Y[:n_tr]), ("loss_weights", W)):
            fits, preds = [], []
            for _ in range(args.repeats):
                model = ss.KernelStructuredPredictor(space, candidates="all")
                t0 = time.perf_counter()
                model.fit(X[:n_tr], target)
                fits.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                model.predict(X[n_tr:])
                preds.append(time.perf_counter() - t0)
            rec = {
                "bench": "end_model_timing",
                "n_labels": r,
                "n_train": n_tr,
                "n_test": n_te,
                "target": target_name,
                "support": int(model.labels_.size),
                "fit_s_median": float(np.median(fits)),
                "predict_s_median": float(np.median(preds)),
                "fit_s": fits,
                "predict_s": preds,
                "loss_weights_s": t_weights,
                "q_method": W.attrs["method"],
                **environment(),
            }
            print(json.dumps(rec), flush=True)
            print(
                f"[timing] |Y|={r:>4} target={target_name:>12} "
                f"support={rec['support']:>4}"
                f" fit {rec['fit_s_median']:.2f} s"
                f"  predict {rec['predict_s_median']:.2f} s"
                f"  (loss_weights incl. Q: {t_weights:.2f} s, {W.attrs['method']})",
                file=sys.stderr,
            )


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument(
        "--part",
        nargs="+",
        default=["paper", "noisy", "timing"],
        choices=["paper", "noisy", "timing"],
    )
    p.add_argument("--seeds", type=int, nargs="+", default=list(range(10)))
    p.add_argument("--n-paper", type=int, nargs="+", default=[200, 500, 1000, 2000])
    p.add_argument(
        "--n-noisy", type=int, nargs="+", default=[200, 500, 1000, 2000, 4000]
    )
    p.add_argument("--noisy-theta", type=float, nargs="+", default=[0.3, 0.3, 0.3])
    p.add_argument("--noisy-centers", type=int, default=4)
    p.add_argument("--rule", choices=["sample", "map"], default="sample")
    p.add_argument(
        "--nu",
        type=lambda v: v if v == "auto" else float(v),
        default="auto",
        help="ridge parameter of the kernel predictor, or 'auto' (GCV, the default)",
    )
    p.add_argument(
        "--gamma",
        type=lambda v: v if v in ("auto", "scale") else float(v),
        default="auto",
        help="RBF bandwidth: a number, 'scale' or 'auto' (GCV, the default)",
    )
    p.add_argument(
        "--min-prior",
        type=float,
        default=0.01,
        help="support threshold on the (estimated) prior",
    )
    p.add_argument(
        "--params",
        default="auto",
        help="'true', 'auto' (label model if available) or an estimator name",
    )
    p.add_argument("--n-train", type=int, default=5000)
    p.add_argument("--n-test", type=int, default=50000)
    p.add_argument("--timing-items", type=int, nargs="+", default=[4, 5])
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args()
    if args.params == "auto":
        args.params = "mle" if hasattr(ss, "StructuredLabelModel") else "true"
    for part in args.part:
        if part == "timing":
            run_timing(args)
        else:
            run_accuracy(args, part)


if __name__ == "__main__":
    main()
