"""Weighted Kemeny decoding: time per row of each method, and the heuristic's gap.

Instances are realistic vote aggregates: for each row, a hidden truth gives every item
a standard normal score; each of ``--votes`` voters ranks the items by the truth's
scores plus Gaussian noise (standard deviation ``--noise``) and gets a weight drawn
uniformly in [0.5, 2]; ``C[i, j]`` is the total weight of the voters putting ``i``
before ``j`` (built through :func:`snorkel_structured.rankings._votes.pairwise_votes`).

For each ``n_items``:

- ``exact_dp``: one call on a batch of rows (1,000 up to 12 items, fewer above, see
  ``dp_rows``), for ``n_items <= --dp-max-items``;
- ``ilp``: one call per row on the first ``--ilp-rows`` rows (a fifth of them above
  50 items), each with ``time_limit=--ilp-time-limit``, for
  ``n_items <= --ilp-max-items``; a row whose solve warns (time limit) is not used
  as a reference;
- ``heuristic``: one call on the batch (``heur_rows``), and one call on a single row;
- the heuristic's relative gap ``(exact - heuristic) / exact`` of the objective, mean
  and max over the rows with an exact answer (the DP's or the ILP's, whichever has
  more rows), and the share of those rows where the heuristic is optimal.

Times are medians of ``--repeats`` runs after one warm-up, in ms per row. Prints a
markdown table on stdout (progress on stderr). No asserts.

    python benchmarks/bench_kemeny.py --repeats 3
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from snorkel_structured.rankings._votes import pairwise_votes
from snorkel_structured.rankings.kemeny import kemeny_objective, kemeny_rank

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import environment, log, median_time  # noqa: E402


def make_instances(
    n_rows: int, n_items: int, n_votes: int, noise: float, seed: int
) -> np.ndarray:
    """``C`` of shape (n_rows, n_items, n_items): weighted counts of noisy votes."""
    rng = np.random.default_rng([seed, n_items])
    truth = rng.standard_normal((n_rows, 1, n_items))
    scores = truth + noise * rng.standard_normal((n_rows, n_votes, n_items))
    V = np.argsort(-scores, axis=2)  # each vote's ordering, best first
    w = rng.uniform(0.5, 2.0, (n_rows, n_votes))
    S = pairwise_votes(V).astype(np.float64)  # +1: i before j, -1: j before i
    i, j = np.triu_indices(n_items, 1)
    C = np.zeros((n_rows, n_items, n_items))
    C[:, i, j] = np.einsum("rv,rvp->rp", w, S > 0)
    C[:, j, i] = np.einsum("rv,rvp->rp", w, S < 0)
    return C


def dp_rows(n: int) -> int:
    return 1000 if n <= 12 else {13: 500, 14: 200, 15: 100, 16: 50}.get(n, 5)


def heur_rows(n: int) -> int:
    return 1000 if n <= 16 else (200 if n <= 50 else 100)


def run_ilp(
    C: np.ndarray, time_limit: float, repeats: int
) -> tuple[float, np.ndarray, np.ndarray]:
    """ms per row (median over repeats of the mean over rows), orderings, and which
    rows were solved to optimality."""
    solved = np.ones(len(C), dtype=bool)
    out = np.empty(C.shape[:2], dtype=np.int64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kemeny_rank(C[0], "ilp", time_limit=time_limit)  # warm-up
    times = []
    for rep in range(max(1, repeats)):
        t0 = time.perf_counter()
        for r in range(len(C)):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                out[r] = kemeny_rank(C[r], "ilp", time_limit=time_limit)
            if rep == 0 and caught:
                solved[r] = False
        times.append(time.perf_counter() - t0)
    return 1e3 * float(np.median(times)) / len(C), out, solved


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--sizes", type=int, nargs="+", default=[8, 10, 12, 14, 16, 20, 30, 50, 100]
    )
    parser.add_argument("--votes", type=int, default=5)
    parser.add_argument("--noise", type=float, default=1.0)
    parser.add_argument("--dp-max-items", type=int, default=20)
    parser.add_argument("--ilp-max-items", type=int, default=100)
    parser.add_argument("--ilp-rows", type=int, default=20)
    parser.add_argument("--ilp-time-limit", type=float, default=30.0)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    table = []
    for n in args.sizes:
        n_rows = max(heur_rows(n), dp_rows(n) if n <= args.dp_max_items else 0)
        C = make_instances(n_rows, n, args.votes, args.noise, args.seed)
        row: dict[str, Any] = {"n_items": n}
        exact = None
        ref_rows = np.arange(0)
        if n <= args.dp_max_items:
            k = dp_rows(n)
            t, orders = median_time(
                lambda C=C[:k]: kemeny_rank(C, "exact_dp"), args.repeats
            )
            row["dp"] = (1e3 * t / k, k)
            exact, ref_rows = kemeny_objective(C[:k], orders), np.arange(k)
        if n <= args.ilp_max_items:
            k = min(args.ilp_rows if n <= 50 else max(1, args.ilp_rows // 5), n_rows)
            ms, orders, solved = run_ilp(
                C[:k], args.ilp_time_limit, args.repeats if n <= 30 else 1
            )
            row["ilp"] = (ms, k, int(solved.sum()))
            ilp_obj = kemeny_objective(C[:k], orders)
            if exact is not None and solved[: len(exact)].any():
                both = np.nonzero(solved[: len(exact)])[0]
                row["dp_vs_ilp"] = float(np.max(np.abs(exact[both] - ilp_obj[both])))
            if exact is None or solved.sum() > len(exact):
                exact, ref_rows = ilp_obj[solved], np.nonzero(solved)[0]
                row["reference"] = "ILP"
        k = heur_rows(n)
        t, heur = median_time(lambda C=C[:k]: kemeny_rank(C, "heuristic"), args.repeats)
        t1, _ = median_time(lambda C=C[0]: kemeny_rank(C, "heuristic"), args.repeats)
        row["heuristic"] = (1e3 * t / k, k, 1e3 * t1)
        if exact is not None and ref_rows.size:
            ref_rows = ref_rows[ref_rows < k]
            ex = exact[: ref_rows.size]
            h = kemeny_objective(C[ref_rows], heur[ref_rows])
            gap = (ex - h) / np.abs(ex)
            row["gap"] = (
                float(gap.mean()),
                float(gap.max()),
                float((gap <= 1e-12).mean()),
                int(ref_rows.size),
                row.get("reference", "DP"),
                float(gap.min()),
            )
        table.append(row)
        log(f"done n_items = {n}: {row}")

    env = environment()
    print(
        f"\nWeighted Kemeny decoding: {args.votes} noisy votes (noise sd "
        f"{args.noise}, weights 0.5-2) per row; ms per row, median of "
        f"{args.repeats} runs; numpy {env['numpy']}, {env['n_cpus']} CPUs.\n"
    )
    print(
        "| n_items | exact_dp ms/row (rows) | ilp ms/row (rows, optimal) "
        "| heuristic ms/row (rows) | heuristic, 1 row (ms) "
        "| heuristic gap mean | gap max | heuristic optimal | reference (rows) |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for row in table:
        dp = f"{row['dp'][0]:.3f} ({row['dp'][1]})" if "dp" in row else "-"
        ilp = (
            f"{row['ilp'][0]:.1f} ({row['ilp'][1]}, {row['ilp'][2]})"
            if "ilp" in row
            else "-"
        )
        h = row["heuristic"]
        if "gap" in row:
            g = row["gap"]
            gap = f"{100 * g[0]:.4f}% | {100 * g[1]:.3f}% | {100 * g[2]:.1f}%"
            ref = f"{g[4]} ({g[3]})"
        else:
            gap, ref = "- | - | -", "-"
        print(
            f"| {row['n_items']} | {dp} | {ilp} | {h[0]:.3f} ({h[1]}) | {h[2]:.2f} "
            f"| {gap} | {ref} |"
        )
    checks = [r["dp_vs_ilp"] for r in table if "dp_vs_ilp" in r]
    if checks:
        print(
            f"\nmax |DP objective - ILP objective| over shared rows: {max(checks):.2e}"
        )
    negative = [r["gap"][5] for r in table if "gap" in r]
    if negative:
        print(
            f"smallest gap (negative = heuristic beat the reference): {min(negative):.2e}"
        )


if __name__ == "__main__":
    main()
