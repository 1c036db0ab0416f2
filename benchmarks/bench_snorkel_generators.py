"""StructuredLabelModel(Discrete(k)) with its defaults against Snorkel's LabelModel and
majority vote, on Snorkel's own synthetic generator (issue 11).

``generate_simple_label_matrix(n, m, k, abstain_multiplier)`` draws, per LF, a random
(k + 1, k) table P(vote | Y) biased towards the right class, with class-dependent
abstain rates. Two regimes:

- dense: n = 100,000, m = 10, abstain_multiplier = 1 (every row has votes);
- sparse: n = 10,000, m = 10, abstain_multiplier = 1000 (about 94% of rows have no
  vote); accuracy is measured on the rows where at least one LF voted.

Ties are broken at random (Snorkel's hash policy) for every method, so accuracy counts
every row of the measured set. Fit times are medians over the seeds, in the same run,
after one warm-up fit of each model (torch's first call is slow).

Run: ``python benchmarks/bench_snorkel_generators.py [--seeds 0 1 2] [--cards 2 3 4 5 6]``
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from snorkel.labeling.model import LabelModel, MajorityLabelVoter
from snorkel.synthetic.synthetic_data import generate_simple_label_matrix

import snorkel_structured as ss

REGIMES = {"dense": (100_000, 1.0), "sparse": (10_000, 1000.0)}


def _timed(f):
    t0 = time.perf_counter()
    out = f()
    return out, time.perf_counter() - t0


def run(regime: str, k: int, seed: int, m: int) -> dict:
    n, mult = REGIMES[regime]
    np.random.seed(seed)  # noqa: NPY002 - Snorkel's generator uses the global RNG
    P, Y, L = generate_simple_label_matrix(n, m, k, abstain_multiplier=mult)
    rows = (L != -1).any(axis=1) if regime == "sparse" else np.ones(n, bool)

    def acc(preds: np.ndarray) -> float:
        return float((preds[rows] == Y[rows]).mean())

    sn = LabelModel(cardinality=k, verbose=False)
    _, t_sn = _timed(lambda: sn.fit(L, seed=seed, progress_bar=False))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours, t_ours = _timed(
            lambda: ss.StructuredLabelModel(ss.Discrete(k), seed=seed).fit(
                L, progress_bar=False
            )
        )
    mv = MajorityLabelVoter(cardinality=k)
    cp_err = lambda model: float(  # noqa: E731 - Snorkel's test metric
        np.abs(P - model.get_conditional_probs()).sum() / P.size
    )
    return {
        "regime": regime,
        "k": k,
        "seed": seed,
        "rows": int(rows.sum()),
        "ours": acc(ours.predict(L, tie_break_policy="random")),
        "snorkel": acc(sn.predict(L, tie_break_policy="random")),
        "majority": acc(mv.predict(L, tie_break_policy="random")),
        "ours_cp_err": cp_err(ours),
        "snorkel_cp_err": cp_err(sn),
        "ours_fit_s": t_ours,
        "snorkel_fit_s": t_sn,
        "ours_abstain_dependent": bool(ours.abstain_dependent_),
        "ours_theta": str(ours.noise_model_.get("theta", "")),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    ap.add_argument("--cards", nargs="+", type=int, default=[2, 3, 4, 5, 6])
    ap.add_argument("--regimes", nargs="+", default=list(REGIMES))
    ap.add_argument("--m", type=int, default=10)
    args = ap.parse_args()
    run("sparse", 2, 0, args.m)  # warm-up: torch and our caches
    print(
        "| regime | k | rows scored | ours | Snorkel | majority | ours - Snorkel "
        "| cond. probs err ours / Snorkel | fit ours / Snorkel (s) | variant |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for regime in args.regimes:
        for k in args.cards:
            res = [run(regime, k, s, args.m) for s in args.seeds]

            def med(key: str, res=res) -> float:
                return float(np.median([r[key] for r in res]))

            gap = np.median([r["ours"] - r["snorkel"] for r in res])
            variant = "/".join(
                sorted(
                    {
                        r["ours_theta"]
                        + ("+abstain" if r["ours_abstain_dependent"] else "")
                        for r in res
                    }
                )
            )
            print(
                f"| {regime} | {k} | {med('rows'):.0f} | {med('ours'):.4f} | "
                f"{med('snorkel'):.4f} | {med('majority'):.4f} | {gap:+.4f} | "
                f"{med('ours_cp_err'):.4f} / {med('snorkel_cp_err'):.4f} | "
                f"{med('ours_fit_s'):.3f} / {med('snorkel_fit_s'):.3f} | {variant} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
