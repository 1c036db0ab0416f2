"""False-alarm rate and power of the LF dependency test (issue 12, item 2).

False alarm: any pair flagged on conditionally independent synthetic LFs. Power: the
pair (0, 1) flagged when LF 1 copies LF 0's vote on a random half of the rows.
n = 10,000 rows, abstain rate 0.1-0.2, random LF noise per dataset.

    python benchmarks/bench_dependency_test.py [--datasets N] [--m 4,5,...]
"""

from __future__ import annotations

import argparse
import time
import warnings

import networkx as nx
import numpy as np

import snorkel_structured as ss
from snorkel_structured.estimators.dependencies import lf_dependency_test
from snorkel_structured.synthetic import make_label_matrix
from snorkel_structured.synthetic_manifold import make_manifold_data

N = 10_000


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


def run(name, m, n_datasets, copy):
    hits, times = 0, []
    for seed in range(n_datasets):
        rng = np.random.default_rng([seed, m, int(copy), len(name)])
        if name in ("Euclidean(3)", "Sphere(2)"):
            space = ss.Euclidean(3) if name[0] == "E" else ss.Sphere(2)
            scale = (0.1, 1.0) if name[0] == "E" else (0.02, 0.3)
            L = make_manifold_data(
                N,
                space=space,
                noise_scale=rng.uniform(*scale, m),
                abstain=0.1,
                seed=rng,
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
            res = lf_dependency_test(L, space=space)
        times.append(time.perf_counter() - t)
        hits += bool(res["dependent"].iloc[0]) if copy else bool(res["dependent"].any())
    return hits / n_datasets, float(np.median(times))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--datasets", type=int, default=100)
    parser.add_argument("--m", default="4,5,6,7,8,9,10")
    parser.add_argument(
        "--spaces",
        default="Discrete(2),Discrete(4),Permutations(4),Tree,Euclidean(3),Sphere(2)",
    )
    args = parser.parse_args()
    ms = [int(x) for x in args.m.split(",")]
    print(f"n = {N}, {args.datasets} datasets per cell; alpha = 0.05")
    print("| space | m | false-alarm rate | power (copy half) | median s/test |")
    print("|---|---|---|---|---|")
    for name in args.spaces.split(","):
        for m in ms:
            fa, t0 = run(name, m, args.datasets, copy=False)
            pw, t1 = run(name, m, args.datasets, copy=True)
            print(
                f"| {name} | {m} | {fa:.2f} | {pw:.2f} | {max(t0, t1):.2f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
