"""Does prior_support="auto" keep the labels the data support? (issue 11)

Adjacent centers (``ss.synthetic.make_close_centers_data``): three S4 (Kendall) centers
with prior 0.5 / 0.2 / 0.3, two of them one swap apart, four LFs with theta ~ U(0.3,
0.45). Per seed: whether the labels with
prior >= 0.05 are exactly the true centers, and exact-ranking accuracy of the MAP, for
"auto" and "all" (the whole space), beside unweighted Kemeny aggregation and the exact posterior under the true parameters.

Run: ``python benchmarks/bench_support_recovery.py [--n 1500 5000] [--seeds 0 ... 9]``
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

import snorkel_structured as ss
from snorkel_structured.aggregators import kemeny
from snorkel_structured.noise.finite import log_conditional_probs, log_posterior


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", nargs="+", type=int, default=[1500, 5000])
    ap.add_argument("--seeds", nargs="+", type=int, default=list(range(10)))
    args = ap.parse_args()
    print(
        "| n | support | centers recovered (of seeds) | median accuracy | median fit (s) |"
    )
    print("|---|---|---|---|---|")
    for n in args.n:
        rows: dict[str, list] = {}
        for seed in args.seeds:
            data = ss.synthetic.make_close_centers_data(n, seed=seed)
            space, theta, prior = data.space, data.theta, data.prior
            centers = set(data.support.tolist())
            S = space.squared_distance_matrix
            for name, kw in [("auto", {}), ("all", {"prior_support": "all"})]:
                t0 = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    lm = ss.StructuredLabelModel(space, seed=0, **kw).fit(data.L)
                dt = time.perf_counter() - t0
                ok = set(np.flatnonzero(lm.prior_ >= 0.05)) == centers
                acc = np.mean(lm.predict(data.L, tie_break_policy="random") == data.Y)
                rows.setdefault(name, []).append((ok, acc, dt))
            with np.errstate(divide="ignore"):
                logp = log_posterior(
                    data.L, log_conditional_probs(S, theta), np.log(prior)
                )
            exact = np.argmax(logp, axis=1)
            rows.setdefault("exact posterior (true parameters)", []).append(
                (True, np.mean(exact == data.Y), 0.0)
            )
            rows.setdefault("unweighted Kemeny", []).append(
                (False, np.mean(kemeny(data.L, space) == data.Y), 0.0)
            )
        for name, res in rows.items():
            ok, acc, dt = zip(*res, strict=True)
            rec = f"{sum(ok)} / {len(ok)}" if "auto" in name or "all" in name else "-"
            print(
                f"| {n} | {name} | {rec} | {np.median(acc):.3f} | {np.median(dt):.2f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
