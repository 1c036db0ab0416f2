"""False-alarm rate and power of the LF dependency test (issue 12, item 2).

False alarm: any pair flagged on conditionally independent synthetic LFs (the goal:
<= 5% family-wise at alpha = 0.05). Power: the pair (0, 1) flagged when LF 1 copies
LF 0's vote on a random half of the rows (goal: >= 90%). n = 10,000 rows, abstain
rate 0.2 (finite) / 0.1 (manifolds), LF noise drawn at random per dataset. The
false-alarm rate carries its exact (Clopper-Pearson) 95% interval. Default test
settings: ``method="moments"``, ``n_boot=200`` resamples for the max-T criterion.

    python benchmarks/bench_dependency_test.py [--datasets 100] [--power-datasets 30]
        [--m 4,6,10] [--spaces ...] [--jobs 2]

Measured 2026-11-23 with the bootstrap max-T calibration (n_boot = 200), 2 CPUs
shared with other jobs (load 5-7, so seconds are inflated); seconds per call,
median over the cell. Cells not listed did not finish in the session's time.

| space | m | null datasets | false-alarm rate [95% CI] | power (copy half), datasets | median s/call |
|---|---|---|---|---|---|
| Discrete(2) | 4 | 100 | 0.100 [0.049, 0.176] | 1.00 (20) | 0.02 |
| Discrete(2) | 6 | 100 | 0.110 [0.056, 0.188] | 1.00 (20) | 0.14 |
| Discrete(2) | 10 | 100 | 0.080 [0.035, 0.152] | 1.00 (20) | 1.65 |
| Discrete(4) | 4 | 100 | 0.100 [0.049, 0.176] | 1.00 (20) | 0.13 |
| Discrete(4) | 6 | 100 | 0.130 [0.071, 0.212] | 1.00 (20) | 0.50 |
| Permutations(4) | 4 | 30 | 0.033 [0.001, 0.172] | 1.00 (10) | 2.47 |

The goal (<= 5%) is NOT met on the finite cells: the resampled standard error of
a pair's statistic is about 10% below its true spread across datasets and the
null bias is up to 0.18 se (measured on Discrete(2), m = 4, 150 datasets); both
push the max-T false-alarm rate to about 2x alpha. Power is 100% everywhere.
"""

from __future__ import annotations

import argparse
import os
import time
import warnings
from multiprocessing import Pool

# One BLAS thread per worker: the batched SVDs are many small problems, and threads
# fighting over shared cores made single calls 5x slower.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import networkx as nx
import numpy as np
from scipy.stats import beta

import snorkel_structured as ss
from snorkel_structured.estimators.dependencies import lf_dependency_test
from snorkel_structured.synthetic import make_label_matrix
from snorkel_structured.synthetic_manifold import make_manifold_data

N = 10_000
SPACES = "Discrete(2),Discrete(4),Permutations(4),Tree,Euclidean(3),Sphere(2)"


def finite_case(name):
    if name.startswith("Discrete"):
        k = int(name[-2])
        space = ss.Discrete(k)
        return space, lambda rng, m: (
            rng.uniform(0.5, 2.0, m),
            rng.dirichlet(np.full(k, 5.0)),
        )
    if name == "Permutations(4)":
        space = ss.Permutations(4)

        def draw(rng, m):
            prior = np.zeros(24)
            prior[rng.choice(24, 2, replace=False)] = [0.4, 0.6]
            return rng.uniform(0.3, 1.0, m), prior

        return space, draw
    space = ss.GraphSpace(nx.balanced_tree(2, 3))  # 15-node binary tree

    def draw(rng, m):
        prior = np.zeros(len(space))
        prior[rng.choice(len(space), 3, replace=False)] = [0.3, 0.3, 0.4]
        return rng.uniform(0.5, 1.5, m), prior

    return space, draw


def one(job):
    """(flagged, seconds) for one dataset: any pair (null) or pair (0, 1) (copy)."""
    name, m, seed, copy = job
    rng = np.random.default_rng([seed, m, int(copy), len(name)])
    if name in ("Euclidean(3)", "Sphere(2)"):
        space = ss.Euclidean(3) if name[0] == "E" else ss.Sphere(2)
        scale = (0.1, 1.0) if name[0] == "E" else (0.02, 0.3)
        L = make_manifold_data(
            N, space=space, noise_scale=rng.uniform(*scale, m), abstain=0.1, seed=rng
        ).X.copy()
    else:
        space, draw = finite_case(name)
        theta, prior = draw(rng, m)
        L = make_label_matrix(
            N, space=space, theta=theta, prior=prior, abstain=0.2, seed=rng
        ).L.copy()
    if copy:
        mask = rng.random(N) < 0.5
        L[mask, 1] = L[mask, 0]
    t = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = lf_dependency_test(L, space=space, seed=seed)
    secs = time.perf_counter() - t
    flagged = bool(res["dependent"].iloc[0]) if copy else bool(res["dependent"].any())
    return flagged, secs


def clopper_pearson(k, n, level=0.95):
    lo = beta.ppf((1 - level) / 2, k, n - k + 1) if k > 0 else 0.0
    hi = beta.ppf(1 - (1 - level) / 2, k + 1, n - k) if k < n else 1.0
    return float(lo), float(hi)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--datasets", type=int, default=100, help="null datasets")
    parser.add_argument("--power-datasets", type=int, default=30)
    parser.add_argument("--m", default="4,6,10")
    parser.add_argument("--spaces", default=SPACES)
    parser.add_argument("--jobs", type=int, default=1)
    args = parser.parse_args()
    ms = [int(x) for x in args.m.split(",")]
    print(f"n = {N}; alpha = 0.05; null datasets per cell: {args.datasets}")
    print(
        "| space | m | null datasets | false-alarm rate [95% CI] "
        "| power (copy half), datasets | median s/call |"
    )
    print("|---|---|---|---|---|---|")
    with Pool(args.jobs) as pool:
        for name in args.spaces.split(","):
            for m in ms:
                null = pool.map(
                    one, [(name, m, s, False) for s in range(args.datasets)]
                )
                alt = pool.map(
                    one, [(name, m, s, True) for s in range(args.power_datasets)]
                )
                k = sum(f for f, _ in null)
                lo, hi = clopper_pearson(k, len(null))
                pw = np.mean([f for f, _ in alt]) if alt else np.nan
                secs = np.median([s for _, s in null + alt])
                print(
                    f"| {name} | {m} | {len(null)} | {k / len(null):.3f} "
                    f"[{lo:.3f}, {hi:.3f}] | {pw:.2f} ({len(alt)}) | {secs:.2f} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
