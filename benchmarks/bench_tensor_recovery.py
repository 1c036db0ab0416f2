"""Tensor estimator: recovery of E[d^2] on the paper's ranking setup, and its speed.

Prints a table per experiment and one JSONL line per configuration (to stdout, or to
``--jsonl``). No asserts: this is a measurement script.

    python benchmarks/bench_tensor_recovery.py                      # everything
    python benchmarks/bench_tensor_recovery.py --experiments paper --sizes 1000 10000
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings

import numpy as np
from _common import environment  # benchmarks/ is on sys.path when run as a script

from snorkel_structured.estimators import VoteStats, tensor_estimate, uws_estimate
from snorkel_structured.exceptions import IdentifiabilityWarning
from snorkel_structured.experiments.paper import (
    RANKING_RECOVERY_TENSOR as PAPER_TENSOR,
)
from snorkel_structured.experiments.paper import (
    RANKING_RECOVERY_UWS as PAPER_UWS,
)
from snorkel_structured.synthetic import make_ranking_data


def _emit(out, record: dict) -> None:
    out.write(json.dumps({**record, **environment()}) + "\n")
    out.flush()


def _floor_error(data) -> np.ndarray:
    """|E d^2 - mean of S[L_a, Y]|: the error with the true labels visible."""
    S = data.space.squared_distance_matrix
    L, Y = data.L, data.Y
    est = np.array(
        [S[L[L[:, a] >= 0, a], Y[L[:, a] >= 0]].mean() for a in range(L.shape[1])]
    )
    return np.abs(est - data.expected_sq_dist)


def _fit(data, n_components=None, seed=0):
    S = data.space.squared_distance_matrix
    t0 = time.perf_counter()
    stats = VoteStats.from_label_matrix(data.L, n_labels=len(data.space))
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always", IdentifiabilityWarning)
        est = tensor_estimate(stats, S, n_components=n_components, seed=seed)
    return est, stats, time.perf_counter() - t0, [str(w.message) for w in rec]


def _fmt(v) -> str:
    return "/".join(f"{x:.4f}" for x in v)


def paper(args, out) -> None:
    print(
        "\n== Paper setup: S4 Kendall tau, prior [0.2, 0.8], theta [0.6, 0.99, 0.8] =="
    )
    print("median over seeds of |E d^2 - estimate| per LF (LF1/LF2/LF3)")
    head = f"{'n':>9} | {'tensor (k est.)':<22} | {'tensor (k=2)':<22} | {'UWS':<22} | "
    print(head + f"{'floor':<22} | {'paper tensor':<18} | k-hat ok | support ok")
    for n in args.sizes:
        errs = {"tensor": [], "tensor_k2": [], "uws": [], "floor": []}
        k_ok = sup_ok = 0
        for seed in args.seeds:
            data = make_ranking_data(n, seed=seed)
            est, stats, _, _ = _fit(data, seed=seed)
            est2, _, _, _ = _fit(data, n_components=2, seed=seed)
            S = data.space.squared_distance_matrix
            errs["tensor"].append(np.abs(est.expected_sq_dist - data.expected_sq_dist))
            errs["tensor_k2"].append(
                np.abs(est2.expected_sq_dist - data.expected_sq_dist)
            )
            errs["uws"].append(np.abs(uws_estimate(stats, S) - data.expected_sq_dist))
            errs["floor"].append(_floor_error(data))
            k_ok += est.n_components == 2
            sup_ok += set(est2.support.tolist()) == set(data.support.tolist())
        med = {k: np.median(np.array(v), axis=0) for k, v in errs.items()}
        paper_v = PAPER_TENSOR.get(n, (np.nan,) * 3)
        print(
            f"{n:>9} | {_fmt(med['tensor']):<22} | {_fmt(med['tensor_k2']):<22} | "
            f"{_fmt(med['uws']):<22} | {_fmt(med['floor']):<22} | "
            f"{'/'.join(map(str, paper_v)):<18} | {k_ok}/{len(args.seeds)}    | "
            f"{sup_ok}/{len(args.seeds)}"
        )
        _emit(
            out,
            {
                "experiment": "paper",
                "n": n,
                "seeds": args.seeds,
                **{f"median_abs_err_{k}": v.tolist() for k, v in med.items()},
                "paper_tensor": list(paper_v),
                "paper_uws": list(PAPER_UWS),
                "k_hat_correct": k_ok,
                "support_correct_k2": sup_ok,
            },
        )


def noise(args, out) -> None:
    print("\n== theta = [0, 0, 1] (two pure-noise LFs), S4, seeds as above ==")
    print(
        f"{'n':>6} | {'k used':<8} | {'|err| LF1/LF2/LF3 (median)':<28} | "
        f"{'warned':<7} | identifiable"
    )
    for n in args.noise_sizes:
        errs, ks, warned, ident = [], [], 0, 0
        first = ""
        for seed in args.seeds:
            data = make_ranking_data(n, theta=(0.0, 0.0, 1.0), seed=seed)
            est, _, _, msgs = _fit(data, seed=seed)
            errs.append(np.abs(est.expected_sq_dist - data.expected_sq_dist))
            ks.append(est.n_components)
            warned += bool(msgs)
            ident += est.identifiable
            first = first or (msgs[0] if msgs else "")
        med = np.median(np.array(errs), axis=0)
        print(
            f"{n:>6} | {np.median(ks):<8.0f} | {_fmt(med):<28} | "
            f"{warned}/{len(args.seeds):<5} | {ident}/{len(args.seeds)}"
        )
        _emit(
            out,
            {
                "experiment": "pure_noise",
                "n": n,
                "median_abs_err": med.tolist(),
                "k_used": ks,
                "warned": warned,
                "identifiable": ident,
                "example_warning": first,
            },
        )
    print(f"example warning: {first}")


def beyond(args, out) -> None:
    theta = (0.05, 0.10, 0.08, 0.12, 0.06)
    print(
        "\n== Beyond the paper: S5 Spearman footrule (120 labels), k = 3 centers "
        f"(prior 0.2/0.3/0.5), m = 5, 20% abstains, theta {theta}, n = "
        f"{args.beyond_n} =="
    )
    print(
        f"{'seed':>4} | {'relative error of E d^2 per LF':<44} | {'max':<7} | "
        f"{'floor max':<9} | k | fit s"
    )
    for seed in args.seeds[: args.beyond_seeds]:
        data = make_ranking_data(
            args.beyond_n,
            n_items=5,
            metric="spearman_footrule",
            theta=theta,
            n_centers=3,
            center_probs=(0.2, 0.3, 0.5),
            abstain=0.2,
            seed=seed,
        )
        est, _, secs, msgs = _fit(data, seed=seed)
        rel = (
            np.abs(est.expected_sq_dist - data.expected_sq_dist) / data.expected_sq_dist
        )
        frel = _floor_error(data) / data.expected_sq_dist
        print(
            f"{seed:>4} | {_fmt(rel):<44} | {rel.max():.4f}  | {frel.max():.4f}    | "
            f"{est.n_components} | {secs:.3f}"
        )
        _emit(
            out,
            {
                "experiment": "beyond",
                "seed": seed,
                "n": args.beyond_n,
                "rel_err": rel.tolist(),
                "floor_rel_err": frel.tolist(),
                "k": est.n_components,
                "support_ok": set(est.support.tolist()) == set(data.support.tolist()),
                "fit_seconds": secs,
                "warnings": msgs,
            },
        )


def speed(args, out) -> None:
    n = args.speed_n
    data = make_ranking_data(n, seed=0)
    times = []
    for run in range(args.repeats):
        _, _, secs, _ = _fit(data, seed=run)
        times.append(secs)
    print(f"\n== Speed: n = {n}, m = 3, S4: stats + tensor_estimate ==")
    print(
        f"median of {args.repeats} runs: {np.median(times):.3f} s "
        f"(runs: {', '.join(f'{t:.3f}' for t in times)}); authors' code: 64 s"
    )
    _emit(
        out,
        {
            "experiment": "speed",
            "n": n,
            "seconds": times,
            "median_seconds": float(np.median(times)),
            "authors_seconds": 64.0,
        },
    )


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--experiments",
        nargs="+",
        default=["paper", "noise", "beyond", "speed"],
        choices=["paper", "noise", "beyond", "speed"],
    )
    p.add_argument(
        "--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000, 1_000_000]
    )
    p.add_argument("--seeds", type=int, nargs="+", default=list(range(10)))
    p.add_argument("--noise-sizes", type=int, nargs="+", default=[200, 1000, 2000])
    p.add_argument("--beyond-n", type=int, default=100_000)
    p.add_argument("--beyond-seeds", type=int, default=5)
    p.add_argument("--speed-n", type=int, default=1_000_000)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--jsonl", default=None, help="write JSONL here instead of stdout")
    args = p.parse_args(argv)
    out = open(args.jsonl, "w") if args.jsonl else sys.stdout
    for name in args.experiments:
        globals()[name](args, out)


if __name__ == "__main__":
    main()
