"""Run time, false-alarm rate and power of the LF dependency test, in one table.

Timing rows: 7 LFs over ``Permutations(5)`` (120 labels) and 3,000 rows, (a) drawn from
the finite noise model around 3 centers, (b) "latent": each LF orders 5 items by noisy
scores of a latent quality (the realistic case; its LFs are *not* independent given
the ranking, since all of them err more where two items' qualities are close), and
(c) the label-model path, ``detect_dependent_pairs`` on a ``VoteStats``. Median seconds
over ``--runs`` calls. With ``--baseline-src DIR`` (a checkout of an earlier version,
e.g. ``git archive <commit> | tar -x -C DIR``) the same calls are timed there too, in
a subprocess, on the same votes.

Calibration rows: false alarm = any pair flagged on conditionally independent
synthetic LFs (goal <= 5% family-wise at alpha = 0.05, with its exact Clopper-Pearson
95% interval); power = the pair (0, 1) flagged when LF 1 copies LF 0's vote on a random
half of the rows (goal >= 90%). n = 10,000 rows, abstain rate 0.2 (finite) / 0.1
(manifolds), LF noise drawn at random per dataset.

    python benchmarks/bench_dependency_test.py [--datasets 200] [--power-datasets 30]
        [--m 4,6,8,10] [--spaces ...] [--runs 5] [--baseline-src DIR] [--jobs 2]
        [--jsonl FILE]

The test limits BLAS to one thread while it runs (its matrices are small, and
OpenBLAS threads on a shared 2-core machine made it 25x slower), so the timings hold
without setting ``OPENBLAS_NUM_THREADS``; ``--jobs`` runs datasets in parallel.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import warnings
from multiprocessing import Pool

import networkx as nx
import numpy as np
from scipy.stats import beta

import snorkel_structured as ss
from snorkel_structured.estimators import VoteStats
from snorkel_structured.estimators.dependencies import (
    detect_dependent_pairs,
    estimate_n_components,
    lf_dependency_test,
)
from snorkel_structured.synthetic import make_label_matrix
from snorkel_structured.synthetic_manifold import make_manifold_data

N = 10_000
SPACES = "Discrete(3),Permutations(4),Tree,Sphere(2),Euclidean(3)"
MANIFOLDS = ("Euclidean(3)", "Sphere(2)", "Hyperbolic(2)")

# -- timing cases --------------------------------------------------------------------


def s5_centers(n: int, m: int, seed: int) -> np.ndarray:
    """Votes from exp(-theta d^2) around 3 centers of Permutations(5)."""
    rng = np.random.default_rng(seed)
    prior = np.zeros(120)
    prior[rng.choice(120, 3, replace=False)] = [0.3, 0.3, 0.4]
    return make_label_matrix(
        n,
        space=ss.Permutations(5),
        theta=rng.uniform(0.3, 1.0, m),
        prior=prior,
        abstain=0.2,
        seed=rng,
    ).L


def s5_latent(n: int, m: int, seed: int) -> np.ndarray:
    """Each LF orders 5 items by the items' latent quality plus its own noise."""
    rng = np.random.default_rng(seed)
    space = ss.Permutations(5)
    quality = rng.normal(size=(n, 5))
    noise = rng.uniform(0.3, 1.5, m)
    scores = quality[:, None, :] + noise[None, :, None] * rng.normal(size=(n, m, 5))
    order = np.argsort(-scores, axis=-1).reshape(-1, 5)  # best first
    L = space.encode([tuple(p) for p in order.tolist()]).reshape(n, m)
    L[rng.random((n, m)) < 0.2] = ss.ABSTAIN
    return L


_BASELINE = """
import json, sys, time, warnings
import numpy as np
import snorkel_structured as ss
from snorkel_structured.estimators.dependencies import lf_dependency_test
source = ss.__file__
warnings.simplefilter("ignore")
L = np.load(sys.argv[1])
space = ss.Permutations(5)
times, res = [], None
for _ in range(int(sys.argv[2])):
    t = time.perf_counter()
    res = lf_dependency_test(L, space=space, seed=0)
    times.append(time.perf_counter() - t)
flagged = [[int(a), int(b)] for a, b in res.loc[res.dependent, ["lf_a", "lf_b"]].values]
print(json.dumps({"seconds": times, "flagged": flagged, "source": source}))
"""


def time_baseline(src: str, L: np.ndarray, runs: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "L.npy")
        np.save(path, L)
        # run from the baseline tree: "python -c" puts the working directory first
        # on sys.path, ahead of PYTHONPATH and of an editable install
        src = os.path.abspath(src)
        # one BLAS thread: the earlier code ran 5x slower with threads on 2 cores
        env = dict(os.environ, PYTHONPATH=src, OPENBLAS_NUM_THREADS="1")
        out = subprocess.run(
            [sys.executable, "-c", _BASELINE, path, str(runs)],
            env=env,
            cwd=src,
            capture_output=True,
            text=True,
            check=True,
        )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    if not os.path.abspath(result["source"]).startswith(src + os.sep):
        raise RuntimeError(
            f"--baseline-src {src} imported snorkel_structured from "
            f"{result['source']}; run from a tree that holds the package."
        )
    return result


def timing_rows(runs: int, baseline: str | None, baseline_runs: int) -> list[dict]:
    space = ss.Permutations(5)
    rows = []
    for case, make in (("S5, 3 centers", s5_centers), ("S5, latent scores", s5_latent)):
        L = make(3000, 7, 0)
        stats = VoteStats.from_label_matrix(L, len(space))
        k = estimate_n_components(stats.patterns, stats.counts)
        for path in ("lf_dependency_test(L)", "detect_dependent_pairs(VoteStats)"):
            times, flagged = [], []
            for _ in range(runs):
                t = time.perf_counter()
                if path.startswith("lf_"):
                    res = lf_dependency_test(L, space=space, seed=0)
                else:
                    _, res = detect_dependent_pairs(stats, space, seed=0)
                times.append(time.perf_counter() - t)
            flagged = res.loc[res["dependent"], ["lf_a", "lf_b"]].values.tolist()
            row = {
                "case": f"{case}: {path}",
                "space": "Permutations(5)",
                "m": 7,
                "n": 3000,
                "patterns": stats.n_patterns,
                "k": k,
                "runs": runs,
                "seconds": float(np.median(times)),
                "flagged": flagged,
            }
            if baseline is not None and path.startswith("lf_"):
                base = time_baseline(baseline, L, baseline_runs)
                row["baseline_seconds"] = float(np.median(base["seconds"]))
                row["baseline_runs"] = len(base["seconds"])
                row["baseline_flagged"] = base["flagged"]
            rows.append(row)
    return rows


# -- calibration cases ---------------------------------------------------------------


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
    if name in MANIFOLDS:
        space = {"E": ss.Euclidean(3), "S": ss.Sphere(2), "H": ss.Hyperbolic(2)}[
            name[0]
        ]
        scale = {"E": (0.1, 1.0), "S": (0.02, 0.3), "H": (0.05, 0.5)}[name[0]]
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
        pairs, _ = detect_dependent_pairs(L, space, seed=seed)
    secs = time.perf_counter() - t
    flagged = (0, 1) in pairs if copy else bool(pairs)
    return flagged, secs


def clopper_pearson(k, n, level=0.95):
    lo = beta.ppf((1 - level) / 2, k, n - k + 1) if k > 0 else 0.0
    hi = beta.ppf(1 - (1 - level) / 2, k + 1, n - k) if k < n else 1.0
    return float(lo), float(hi)


def calibration_rows(pool, spaces, ms, n_null, n_power, offset=0):
    for name in spaces:
        for m in ms:
            seeds = range(offset, offset + n_null)
            null = pool.map(one, [(name, m, s, False) for s in seeds])
            seeds = range(offset, offset + n_power)
            alt = pool.map(one, [(name, m, s, True) for s in seeds])
            k = sum(f for f, _ in null)
            lo, hi = clopper_pearson(k, len(null))
            yield {
                "case": "calibration",
                "space": name,
                "m": m,
                "n": N,
                "seconds": float(np.median([s for _, s in null + alt])),
                "null_datasets": len(null),
                "false_alarm": k / len(null),
                "false_alarm_ci": [lo, hi],
                "power_datasets": len(alt),
                "power": float(np.mean([f for f, _ in alt])) if alt else float("nan"),
            }


def fmt(row: dict) -> str:
    base = row.get("baseline_seconds")
    if row["case"] == "calibration":
        lo, hi = row["false_alarm_ci"]
        return (
            f"| calibration | {row['space']} | {row['m']} | {row['n']} | - | "
            f"{row['seconds']:.3f} | - | {row['false_alarm']:.3f} [{lo:.3f}, {hi:.3f}]"
            f" ({row['null_datasets']}) | {row['power']:.2f} "
            f"({row['power_datasets']}) | - |"
        )
    before = "-" if base is None else f"{base:.1f} ({row['baseline_runs']})"
    flags = f"{len(row['flagged'])} pairs"
    if base is not None:
        flags += f" (before: {len(row['baseline_flagged'])})"
    return (
        f"| {row['case']} | {row['space']} | {row['m']} | {row['n']} | "
        f"{row['patterns']} (k = {row['k']}) | {row['seconds']:.3f} ({row['runs']}) "
        f"| {before} | - | - | {flags} |"
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--datasets", type=int, default=200, help="null datasets")
    parser.add_argument("--power-datasets", type=int, default=30)
    parser.add_argument("--m", default="4,6,8,10")
    parser.add_argument("--spaces", default=SPACES)
    parser.add_argument("--runs", type=int, default=5, help="timed calls per case")
    parser.add_argument("--baseline-src", default=None)
    parser.add_argument("--baseline-runs", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--jsonl", default=None, help="also write one JSON per row")
    parser.add_argument(
        "--seed-offset", type=int, default=0, help="first dataset seed (replications)"
    )
    parser.add_argument(
        "--no-timing", action="store_true", help="calibration rows only"
    )
    args = parser.parse_args()
    ms = [int(x) for x in args.m.split(",")]
    info = {
        "package": ss.__version__,
        "numpy": np.__version__,
        "python": platform.python_version(),
        "cpu": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(),
        "blas_threads": os.environ.get("OPENBLAS_NUM_THREADS"),
    }
    print(f"alpha = 0.05; {json.dumps(info)}")
    print(
        "| case | space | m | n | patterns | median s (runs) | before s (runs) "
        "| false alarms [95% CI] (datasets) | power (datasets) | flagged |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    out = open(args.jsonl, "w") if args.jsonl else None
    rows = (
        []
        if args.no_timing
        else timing_rows(args.runs, args.baseline_src, args.baseline_runs)
    )
    with Pool(args.jobs) as pool:
        spaces = args.spaces.split(",") if args.spaces else []
        calib = calibration_rows(
            pool, spaces, ms, args.datasets, args.power_datasets, args.seed_offset
        )
        for row in itertools.chain(rows, calib):  # rows print as cells finish
            print(fmt(row), flush=True)
            if out is not None:
                out.write(json.dumps({**info, **row}) + "\n")
    if out is not None:
        out.close()


if __name__ == "__main__":
    main()
