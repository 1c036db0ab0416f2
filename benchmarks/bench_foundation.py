"""Timings of the foundation: permutation distance matrices, embeddings, sampling.

    python benchmarks/bench_foundation.py --repeats 5

Prints a table and one JSON line per measurement (medians of --repeats runs).
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
import tracemalloc

import numpy as np

import snorkel_structured as ss
from snorkel_structured.noise import sample_votes


def timed(fn, repeats):
    times, peak = [], 0
    for _ in range(repeats):
        tracemalloc.start()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
        peak = max(peak, tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
    return statistics.median(times), peak / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    info = {
        "numpy": np.__version__,
        "python": platform.python_version(),
        "cpu": platform.processor() or platform.machine(),
    }
    rows = []
    for metric in ss.spaces.PERMUTATION_METRICS:
        t, mem = timed(
            lambda m=metric: ss.Permutations(7, m).distance_matrix, args.repeats
        )
        rows.append(
            {
                "what": f"S7 {metric} distance matrix (5040 x 5040)",
                "seconds": t,
                "peak_mb": mem,
            }
        )
    for metric in ("kendall_tau", "spearman_footrule"):
        space = ss.Permutations(7, metric)
        space.squared_distance_matrix
        t, mem = timed(
            lambda s=space: ss.PseudoEuclideanEmbedding(seed=0).fit(s), args.repeats
        )
        emb = ss.PseudoEuclideanEmbedding(seed=0).fit(space)
        rows.append(
            {
                "what": f"S7 {metric} exact embedding, signature {emb.signature_}, isometry err {emb.isometry_error():.1e}",
                "seconds": t,
                "peak_mb": mem,
            }
        )
    S = ss.Permutations(4).squared_distance_matrix
    y = np.random.default_rng(0).choice(24, size=1_000_000)
    t, mem = timed(
        lambda: sample_votes(S, np.array([0.6, 0.99, 0.8]), y, seed=1), args.repeats
    )
    rows.append({"what": "sample 1e6 x 3 votes on S4", "seconds": t, "peak_mb": mem})
    print(f"{'measurement':<75} {'median s':>9} {'peak MB':>8}")
    for row in rows:
        print(f"{row['what']:<75} {row['seconds']:9.3f} {row['peak_mb']:8.1f}")
    for row in rows:
        print(json.dumps({**row, **info, "repeats": args.repeats}))


if __name__ == "__main__":
    main()
