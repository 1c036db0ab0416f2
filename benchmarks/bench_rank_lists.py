"""Rankings of many items: RankingLabelModel's recovery, speed, memory and real-task error.

Every table puts baselines beside the measured values of the same run. Sections
(``--sections``, default all):

- ``recovery``: 5 Mallows LFs with known theta (0.05, 0.1, 0.2, 0.3, 0.5) on lists of
  20 items, 1e4 rows (``--big``: also 1e3 and 1e5), in two settings: every LF
  top-10; and LFs 0, 2, 4 full lists with LFs 1, 3 top-5. Per LF: the true theta,
  the estimate of ``RankingLabelModel(noise="mallows")`` (median over ``--seeds``;
  under the default ``noise="auto"``, ``"position"`` for list votes, ``theta_`` is
  another parameter) and the largest relative error over the seeds. Then the mean
  normalized Kendall distance to the truth (on the first ``--eval-rows`` rows) of
  ``predict`` of that model and of the ``--noise`` (default) model, of weighted
  Kemeny with the true theta (the fitted model with ``theta_`` set to the truth),
  and of Borda, Copeland and RRF. Goals: theta within 5%; the label model within
  0.005 of true-theta Kemeny.
- ``speed``: fit of 1e5 lists of 20 items, 5 LFs, top-10, each repeat in a fresh
  subprocess (wall time and the child's peak RSS: ``VmHWM``, see ``peak_rss_mb``
  for why not ``ru_maxrss``), against the counting pass alone (``pairwise_votes``)
  and Borda on the same votes; and ``predict`` time per row. Goal: fit < 10 s on
  2 cores.
- ``memory``: lists of 50 items, 5 LFs, top-10, generated chunk by chunk from a
  seeded generator (no process ever holds all rows), through ``partial_fit`` per
  chunk (re-estimates after every chunk), ``fit(iterator of chunks)`` (statistics
  added, one estimate) and ``fit(dask array)`` (from delayed chunk generators), each
  in a fresh subprocess, against generating the chunks alone. 1e5 rows in chunks of
  10,000 by default (``--memory-rows``, ``--chunk-rows``), 1e6 with ``--big``.
  ``partial_fit`` makes one estimate per chunk, so its time grows with the number of
  chunks (leave it out with ``--memory-modes`` if estimates are slow). Peak RSS
  grows with the chunk, not with the rows (fit(dask) holds one chunk per thread).
  Goal: peak RSS under 2 GB per process.
- ``decoding``: the label model's decoder (``kemeny_rank(C, "auto")``: exact DP up
  to 12 items, local search above) in ms per row at 10, 12, 20, 50 and 100 items,
  on the ``C`` that ``predict`` builds from 5 Mallows LFs (top-10) weighted by their
  theta; beside it the exact DP (up to 20 items) and how often the heuristic
  reaches the DP's optimum. ``benchmarks/bench_kemeny.py`` has the ILP, the gaps on
  other instances and more sizes.
- ``real``: the tasks of ``snorkel_structured.datasets.long_rankings.LIST_TASKS``
  over ``--seeds``: normalized Kendall error on the test rows of the label model
  (unsupervised, and with 100 dev rows), Borda, RRF (k = 60), Copeland, unweighted
  Kemeny, UWS-weighted Kemeny (additive triplet rule of Shin et al. 2022 on pairwise
  disagreement rates), oracle-weighted Kemeny (each LF's true pairwise log-odds on
  the training rows) and the best single LF (picked with the test truth). Medians
  over seeds. Oracle weights below 0 (an LF worse than chance) are set to 0.

``--noise`` (default ``"auto"``) is the label model's noise model in ``speed``,
``memory`` and ``real``.

The machine's load average is printed before each section: times on a shared
machine vary by up to 2x. Markdown tables on stdout, progress on stderr. No asserts.

    python benchmarks/bench_rank_lists.py        # all: 3.5-5 minutes on 2 shared cores
    python benchmarks/bench_rank_lists.py --sections recovery memory --big
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import resource
import subprocess
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import log, median_time  # noqa: E402

SECTIONS = ["recovery", "speed", "memory", "decoding", "real"]
THETA = (0.05, 0.1, 0.2, 0.3, 0.5)
# Recovery settings: each LF's list length (None = full list).
SETTINGS = {
    "all top-10": (10, 10, 10, 10, 10),
    "full / top-5 mix": (None, 5, None, 5, None),
}


def ru_maxrss_mb() -> float:
    """``resource.getrusage(RUSAGE_SELF).ru_maxrss`` in MiB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def peak_rss_mb() -> float:
    """This process's peak resident set size so far, in MiB.

    Linux's ``VmHWM`` (the high-water mark of this process's own memory map), not
    ``ru_maxrss``: a child started by ``subprocess`` inherits in ``ru_maxrss`` the
    peak of the parent's memory map at the fork (Linux keeps the larger of the two
    across ``exec``), so after a section that used 400 MiB every child would report
    at least 400 MiB. Falls back to ``ru_maxrss`` where ``/proc`` is missing.
    """
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return ru_maxrss_mb()


def quiet(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` with warnings silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


# --------------------------------------------------------------------------------
# Data


def mallows_chunk(
    seed: int, index: int, rows: int, n_items: int, ks: tuple[int | None, ...]
) -> tuple[np.ndarray, np.ndarray]:
    """(Y, V): ``rows`` uniform true orderings and one top-k Mallows vote per LF of
    :data:`THETA`, from the generator seeded by ``[seed, index]``."""
    from snorkel_structured.rankings.mallows import sample_mallows

    rng = np.random.default_rng([seed, index])
    Y = np.argsort(rng.random((rows, n_items)), axis=1)
    V = np.stack(
        [sample_mallows(Y, t, k=k, seed=rng) for t, k in zip(THETA, ks, strict=True)], axis=1
    )
    return Y, V


def chunk_votes(seed: int, index: int, rows: int, n_items: int, k: int) -> np.ndarray:
    return mallows_chunk(seed, index, rows, n_items, (k,) * len(THETA))[1]


def chunk_sizes(n_rows: int, chunk_rows: int) -> list[int]:
    return [min(chunk_rows, n_rows - s) for s in range(0, n_rows, chunk_rows)]


def kemeny_with(lm: Any, V: np.ndarray, weights: Any) -> np.ndarray:
    """``predict`` of a copy of the fitted model ``lm`` with ``theta_`` = weights."""
    model = copy.copy(lm)
    model.theta_ = np.asarray(weights, dtype=np.float64).copy()
    if hasattr(model, "gap_slope_"):  # position-dependent weights: off (plain Kemeny)
        model.gap_slope_ = np.zeros_like(model.gap_slope_)
    return model.predict(V)


def fusion_orders(V: np.ndarray) -> dict[str, np.ndarray]:
    from snorkel_structured.rankings.fusion import (
        borda,
        copeland,
        reciprocal_rank_fusion,
    )

    return {
        "Borda": borda(V),
        "Copeland": copeland(V),
        "RRF": reciprocal_rank_fusion(V, k=60),
    }


# --------------------------------------------------------------------------------
# Subprocess workers (``--worker JSON``): one measurement per fresh interpreter.


def run_worker(job: dict) -> dict:
    out = _run_worker(job)
    out["ru_maxrss_mb"] = ru_maxrss_mb()
    return out


def _run_worker(job: dict) -> dict:
    import snorkel_structured as ss

    out: dict[str, Any] = {"rss_import_mb": peak_rss_mb()}
    if job["kind"] == "speed":
        from snorkel_structured.rankings import pairwise_votes
        from snorkel_structured.rankings.fusion import borda

        n = job["n_items"]
        t0 = time.perf_counter()
        _, V = mallows_chunk(job["seed"], 0, job["rows"], n, (job["k"],) * len(THETA))
        out["generate_s"] = time.perf_counter() - t0
        out["rss_data_mb"] = peak_rss_mb()
        t0 = time.perf_counter()
        lm = quiet(ss.RankingLabelModel(ss.Rankings(n), noise=job["noise"], seed=0).fit, V)
        out["fit_s"] = time.perf_counter() - t0
        out["rss_fit_mb"] = peak_rss_mb()
        out["theta"] = lm.theta_.tolist()
        out["noise_"] = lm.noise_
        t0 = time.perf_counter()
        pairwise_votes(V)
        out["pairwise_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        borda(V)
        out["borda_s"] = time.perf_counter() - t0
        Vp = V[: job["predict_rows"]]
        lm.predict(Vp[:100])  # warm-up (decoder tables)
        t0 = time.perf_counter()
        lm.predict(Vp)
        out["predict_ms_per_row"] = 1e3 * (time.perf_counter() - t0) / len(Vp)
        return out

    # memory
    n, k, seed, mode = job["n_items"], job["k"], job["seed"], job["mode"]
    sizes = chunk_sizes(job["rows"], job["chunk_rows"])

    def chunks() -> Iterator[np.ndarray]:
        for i, rows in enumerate(sizes):
            yield chunk_votes(seed, i, rows, n, k)

    lm = ss.RankingLabelModel(ss.Rankings(n), noise=job["noise"], seed=0)
    t0 = time.perf_counter()
    if mode == "generate only":
        for V in chunks():
            del V
    elif mode == "partial_fit":
        for V in chunks():
            quiet(lambda V=V: lm.partial_fit(V))
    elif mode == "fit(iterator)":
        quiet(lambda: lm.fit(chunks()))
    elif mode == "fit(dask)":
        import dask
        import dask.array as da

        parts = [
            da.from_delayed(
                dask.delayed(chunk_votes)(seed, i, rows, n, k),
                shape=(rows, len(THETA), n),
                dtype=np.int64,
            )
            for i, rows in enumerate(sizes)
        ]
        quiet(lambda: lm.fit(da.concatenate(parts, axis=0)))
    else:
        raise ValueError(mode)
    out["wall_s"] = time.perf_counter() - t0
    out["rss_peak_mb"] = peak_rss_mb()
    if hasattr(lm, "theta_"):
        out["theta"] = lm.theta_.tolist()
        out["noise_"] = lm.noise_
        out["n_rows_seen"] = int(lm.stats_.n_rows)
    return out


def in_subprocess(job: dict) -> dict:
    """Run ``job`` in a fresh interpreter; its JSON result (last stdout line)."""
    proc = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--worker", json.dumps(job)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )
    if proc.returncode != 0:
        raise RuntimeError(
            f"worker {job} failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}"
        )
    return json.loads(proc.stdout.strip().splitlines()[-1])


# --------------------------------------------------------------------------------
# Sections


def section_recovery(sizes: list[int], seeds: list[int], eval_rows: int, noise: str) -> None:
    import snorkel_structured as ss
    from snorkel_structured.rankings import kendall_tau_distance

    n = 20
    lm_m, lm_d = "label model, noise='mallows'", f"label model, noise={noise!r}"
    methods = [lm_m, lm_d, "Kemeny, true theta", "Borda", "Copeland", "RRF"]
    for setting, ks in SETTINGS.items():
        for n_rows in sizes:
            est, acc = [], {m: [] for m in methods}
            fit_s, noise_d = [], set()
            for seed in seeds:
                Y, V = mallows_chunk(seed, 0, n_rows, n, ks)
                t0 = time.perf_counter()
                lm = quiet(ss.RankingLabelModel(ss.Rankings(n), noise="mallows", seed=0).fit, V)
                fit_s.append(time.perf_counter() - t0)
                dflt = quiet(ss.RankingLabelModel(ss.Rankings(n), noise=noise, seed=0).fit, V)
                noise_d.add(dflt.noise_)
                est.append(lm.theta_)
                Ve, Ye = V[:eval_rows], Y[:eval_rows]
                orders = {
                    lm_m: lm.predict(Ve),
                    lm_d: dflt.predict(Ve),
                    "Kemeny, true theta": kemeny_with(lm, Ve, THETA),
                    **fusion_orders(Ve),
                }
                for m, P in orders.items():
                    acc[m].append(float(kendall_tau_distance(P, Ye).mean()))
                log(f"recovery {setting} n={n_rows} seed={seed}: theta "
                    f"{np.round(lm.theta_, 4)}; {noise!r} fit: noise_ {dflt.noise_}")
            est = np.array(est)
            true = np.array(THETA)
            rel = np.abs(est - true) / true
            n_eval = min(n_rows, eval_rows)
            print(
                f"\n### recovery: {n_rows:,} lists of {n} items, 5 Mallows LFs, {setting} "
                f"(k per LF: {', '.join('full' if k is None else str(k) for k in ks)}); "
                f"{len(seeds)} seeds; theta of RankingLabelModel(noise='mallows'), median "
                f"fit {np.median(fit_s):.1f} s\n"
            )
            print("| LF | k | true theta | estimate (median) | max rel. error | within 5% |")
            print("|---:|---:|---:|---:|---:|---|")
            for a in range(len(THETA)):
                print(
                    f"| {a} | {'full' if ks[a] is None else ks[a]} | {true[a]:.2f} "
                    f"| {np.median(est[:, a]):.4f} | {100 * rel[:, a].max():.1f}% "
                    f"| {'yes' if rel[:, a].max() <= 0.05 else 'NO'} |"
                )
            ref = np.median(acc["Kemeny, true theta"])
            print(
                f"\nmean normalized Kendall distance to the truth, first {n_eval:,} rows "
                f"(median over seeds; gap = method - Kemeny with the true theta; the "
                f"noise={noise!r} model fitted as noise_ = {', '.join(sorted(noise_d))})\n"
            )
            print("| method | Kendall distance | gap | max gap over seeds |")
            print("|---|---:|---:|---:|")
            for m in methods:
                gaps = np.array(acc[m]) - np.array(acc["Kemeny, true theta"])
                print(
                    f"| {m} | {np.median(acc[m]):.4f} | {np.median(acc[m]) - ref:+.4f} "
                    f"| {gaps.max():+.4f} |"
                )
            gm = (np.array(acc[lm_m]) - np.array(acc["Kemeny, true theta"])).max()
            gd = (np.array(acc[lm_d]) - np.array(acc["Kemeny, true theta"])).max()
            print(
                f"\ngoals: theta within 5%: {'yes' if rel.max() <= 0.05 else 'NO'} "
                f"(max {100 * rel.max():.1f}%); within 0.005 of true-theta Kemeny: "
                f"noise='mallows' {'yes' if gm <= 0.005 else 'NO'} (max gap {gm:+.4f}), "
                f"noise={noise!r} {'yes' if gd <= 0.005 else 'NO'} (max gap {gd:+.4f})"
            )


def section_speed(repeats: int, rows: int, seed: int, noise: str) -> None:
    n, k = 20, 10
    runs = []
    for r in range(repeats):
        job = {"kind": "speed", "rows": rows, "n_items": n, "k": k, "seed": seed,
               "predict_rows": 2000, "noise": noise}
        res = in_subprocess(job)
        runs.append(res)
        log(f"speed repeat {r}: {res}")
    med = {key: float(np.median([x[key] for x in runs]))
           for key in runs[0] if key not in ("theta", "noise_")}
    V_mb = rows * len(THETA) * n * 8 / 2**20
    print(
        f"\n### speed: {rows:,} lists of {n} items, 5 LFs, top-{k}; median of {repeats} "
        f"fresh subprocesses ({os.cpu_count()} CPUs); RankingLabelModel(noise={noise!r}) "
        f"fitted as noise_ = {runs[0]['noise_']}\n"
    )
    print("| measure | seconds | x counting pass | peak RSS (MiB) |")
    print("|---|---:|---:|---:|")
    base = med["pairwise_s"]
    print(f"| generate the votes (Mallows sampler) | {med['generate_s']:.2f} | "
          f"{med['generate_s'] / base:.1f} | {med['rss_data_mb']:.0f} (V: {V_mb:.0f}) |")
    print(f"| **RankingLabelModel.fit** | **{med['fit_s']:.2f}** | "
          f"{med['fit_s'] / base:.1f} | {med['rss_fit_mb']:.0f} |")
    print(f"| baseline: counting pass (`pairwise_votes`) | {base:.3f} | 1.0 | - |")
    print(f"| baseline: Borda | {med['borda_s']:.3f} | {med['borda_s'] / base:.1f} | - |")
    print(f"\npredict: {med['predict_ms_per_row']:.3f} ms per row at {n} items "
          f"(2,000 rows); interpreter + imports: {med['rss_import_mb']:.0f} MiB RSS")
    print(f"(the child's ru_maxrss: {med['ru_maxrss_mb']:.0f} MiB, which can include the "
          "parent's peak at the fork; see peak_rss_mb)")
    fits = [x["fit_s"] for x in runs]
    print(f"fit times: {', '.join(f'{t:.2f}' for t in fits)} s; goal < 10 s: "
          f"{'yes' if med['fit_s'] < 10 else 'NO'}")


def section_memory(
    rows: int, chunk_rows: int, seed: int, modes: list[str], noise: str
) -> None:
    n, k = 50, 10
    try:
        import dask  # noqa: F401
    except ImportError:
        modes = [m for m in modes if m != "fit(dask)"]
        log("dask is not installed: fit(dask) skipped")
    results = {}
    for mode in modes:
        job = {"kind": "memory", "mode": mode, "rows": rows, "chunk_rows": chunk_rows,
               "n_items": n, "k": k, "seed": seed, "noise": noise}
        log(f"memory {mode} ...")
        results[mode] = in_subprocess(job)
        log(f"memory {mode}: {results[mode]}")
    n_chunks = len(chunk_sizes(rows, chunk_rows))
    full_mb = rows * len(THETA) * n * 8 / 2**20
    pairs_mb = rows * len(THETA) * n * (n - 1) / 2 / 2**20
    print(
        f"\n### memory: {rows:,} lists of {n} items, 5 LFs, top-{k}, {n_chunks} chunks "
        f"of {chunk_rows:,} rows generated on the fly (all votes at once would be "
        f"{full_mb:,.0f} MiB as int64 lists, {pairs_mb:,.0f} MiB as int8 pairs); one "
        f"fresh subprocess each; RankingLabelModel(noise={noise!r})\n"
    )
    print("| mode | wall (s) | peak RSS (MiB) | under 2 GB | estimates | max rel. error of theta |")
    print("|---|---:|---:|---|---:|---:|")
    for mode, r in results.items():
        theta = r.get("theta")
        if not theta:
            err = "-"
        elif r["noise_"] != "mallows":
            err = f"- (noise_ {r['noise_']}: theta_ is not the Mallows theta)"
        else:
            err = f"{100 * np.max(np.abs(np.array(theta) - THETA) / THETA):.1f}%"
        est = {"partial_fit": n_chunks, "generate only": 0}.get(mode, 1)
        print(
            f"| {mode}{' (baseline)' if mode == 'generate only' else ''} "
            f"| {r['wall_s']:.1f} | {r['rss_peak_mb']:.0f} "
            f"| {'yes' if r['rss_peak_mb'] < 2048 else 'NO'} | {est} | {err} |"
        )
    any_r = next(iter(results.values()))
    print(f"\ninterpreter + imports: {any_r['rss_import_mb']:.0f} MiB RSS. Wall times "
          "include generating the chunks (see the baseline row).")
    print("(the children's ru_maxrss, which can include the parent's peak at the fork: "
          + ", ".join(f"{m} {r['ru_maxrss_mb']:.0f}" for m, r in results.items())
          + " MiB)")
    for mode, r in results.items():
        if "theta" in r:
            print(f"- {mode} (noise_ {r['noise_']}): theta_ = {np.round(r['theta'], 4).tolist()} "
                  f"(true {list(THETA)}), rows seen {r['n_rows_seen']:,}")


def section_decoding(sizes: list[int], repeats: int, seed: int) -> None:
    from snorkel_structured.rankings import pair_index, pairwise_votes
    from snorkel_structured.rankings.kemeny import (
        AUTO_EXACT_MAX_ITEMS,
        DP_MAX_ITEMS,
        kemeny_objective,
        kemeny_rank,
    )

    rows_for = {10: 1000, 12: 1000, 20: 200, 50: 200, 100: 100}
    dp_rows_for = {n: (1000 if n <= 12 else 200 if n <= 14 else 50 if n <= 16 else 5)
                   for n in sizes}
    table = []
    for n in sizes:
        n_rows = rows_for.get(n, 100)
        _, V = mallows_chunk(seed, n, n_rows, n, (min(10, n),) * len(THETA))
        S = pairwise_votes(V).astype(np.float64)
        g = np.einsum("rap,a->rp", S, np.array(THETA))
        i, j = pair_index(n)
        C = np.zeros((n_rows, n, n))
        C[:, i, j] = np.maximum(g, 0)
        C[:, j, i] = np.maximum(-g, 0)
        t_auto, orders = median_time(lambda C=C: kemeny_rank(C, "auto"), repeats)
        row = {"n": n, "rows": n_rows, "auto": 1e3 * t_auto / n_rows,
               "method": "exact_dp" if n <= AUTO_EXACT_MAX_ITEMS else "heuristic"}
        if n <= AUTO_EXACT_MAX_ITEMS:
            t_h, _ = median_time(lambda C=C: kemeny_rank(C, "heuristic"), repeats)
            row["heuristic"] = 1e3 * t_h / n_rows
        else:
            row["heuristic"] = row["auto"]
        if n <= DP_MAX_ITEMS:
            m = min(dp_rows_for[n], n_rows)
            t_dp, exact = median_time(
                lambda C=C[:m]: kemeny_rank(C, "exact_dp"), repeats if m > 5 else 1
            )
            row["dp"] = (1e3 * t_dp / m, m)
            heur = kemeny_rank(C[:m], "heuristic")
            ex, h = kemeny_objective(C[:m], exact), kemeny_objective(C[:m], heur)
            row["optimal"] = float(np.mean(h >= ex - 1e-9 * np.abs(ex)))
            row["gap"] = float(np.max((ex - h) / np.abs(ex)))
        table.append(row)
        log(f"decoding n={n}: {row}")
    print(
        f"\n### decoding: kemeny_rank for RankingLabelModel.predict (decoder='auto': "
        f"exact DP up to {AUTO_EXACT_MAX_ITEMS} items, heuristic above); C from 5 "
        f"Mallows LFs (top-10) weighted by theta; ms per row, median of {repeats}\n"
    )
    print("| n_items | auto runs | auto ms/row (rows) | heuristic ms/row | exact DP ms/row (rows) "
          "| heuristic optimal (DP rows) | heuristic max gap |")
    print("|---:|---|---:|---:|---:|---:|---:|")
    for r in table:
        dp = f"{r['dp'][0]:.3f} ({r['dp'][1]})" if "dp" in r else "- (> 20 items)"
        opt = f"{100 * r['optimal']:.1f}%" if "optimal" in r else "-"
        gap = f"{100 * r['gap']:.4f}%" if "gap" in r else "-"
        print(f"| {r['n']} | {r['method']} | {r['auto']:.3f} ({r['rows']}) "
              f"| {r['heuristic']:.3f} | {dp} | {opt} | {gap} |")


def uws_weights(V: np.ndarray) -> np.ndarray:
    """Weights log((1 - e) / e) from the additive triplet rule of UWS (Shin et al.
    2022): e_a = median over b != c of (r_ab + r_ac - r_bc) / 2, r_ab the rate at
    which LFs a and b order a pair differently, over the pairs both order."""
    from snorkel_structured.rankings import pairwise_votes

    S = pairwise_votes(V)
    m = S.shape[1]
    r = np.full((m, m), np.nan)
    for a in range(m):
        for b in range(a + 1, m):
            both = (S[:, a] != 0) & (S[:, b] != 0)
            if both.any():
                r[a, b] = r[b, a] = float((S[:, a] != S[:, b])[both].mean())
    e = np.full(m, np.nan)
    for a in range(m):
        vals = [
            (r[a, b] + r[a, c] - r[b, c]) / 2
            for b in range(m) for c in range(b + 1, m)
            if a not in (b, c) and np.isfinite(r[a, b] + r[a, c] + r[b, c])
        ]
        if vals:
            e[a] = np.median(vals)
    e = np.clip(np.where(np.isfinite(e), e, 0.5), 1e-3, 0.5)
    return np.log((1 - e) / e)


def oracle_weights(V: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """Each LF's true pairwise log-odds log(acc / (1 - acc)) (clipped at 0)."""
    from snorkel_structured.datasets.long_rankings import pairwise_accuracy

    acc, _ = pairwise_accuracy(V, Y)
    acc = np.clip(np.nan_to_num(acc, nan=0.5), 1e-3, 1 - 1e-3)
    return np.maximum(np.log(acc / (1 - acc)), 0.0)


REAL_METHODS = [
    "label model", "label model + 100 dev", "Borda", "RRF (k=60)", "Copeland",
    "Kemeny (unweighted)", "UWS-weighted Kemeny", "oracle-weighted Kemeny",
    "best single LF (oracle pick)",
]
UNWEIGHTED = ["Borda", "RRF (k=60)", "Copeland", "Kemeny (unweighted)"]


def section_real(seeds: list[int], n_dev: int, noise: str) -> None:
    import snorkel_structured as ss
    from snorkel_structured.datasets.long_rankings import LIST_TASKS
    from snorkel_structured.label_model.ranking import SINGLE_LF_TIE_WEIGHT

    summary, noises = [], set()
    for name, loader in LIST_TASKS.items():
        err = {m: [] for m in REAL_METHODS}
        choices, best_lfs, fit_s = [], [], []
        for seed in seeds:
            task = loader(seed=seed)
            space = ss.Rankings(task.n_items)
            Vt = task.V_test

            def e(P: np.ndarray, task: Any = task) -> float:
                return float(task.normalized_errors(P).mean())

            t0 = time.perf_counter()
            lm = quiet(ss.RankingLabelModel(space, noise=noise, seed=seed).fit, task.V_train)
            fit_s.append(time.perf_counter() - t0)
            noises.add(lm.noise_)
            err["label model"].append(e(lm.predict(Vt)))
            V_dev, Y_dev = task.sample_dev(n_dev, seed)
            lm_dev = quiet(ss.RankingLabelModel(space, noise=noise, seed=seed).fit,
                           task.V_train, V_dev=V_dev, Y_dev=Y_dev)
            err["label model + 100 dev"].append(e(lm_dev.predict(Vt)))
            choices.append(lm_dev.choice_)
            fused = fusion_orders(Vt)
            err["Borda"].append(e(fused["Borda"]))
            err["Copeland"].append(e(fused["Copeland"]))
            err["RRF (k=60)"].append(e(fused["RRF"]))  # k = 60
            m = task.n_lfs
            err["Kemeny (unweighted)"].append(e(kemeny_with(lm, Vt, np.ones(m))))
            err["UWS-weighted Kemeny"].append(e(kemeny_with(lm, Vt, uws_weights(task.V_train))))
            err["oracle-weighted Kemeny"].append(
                e(kemeny_with(lm, Vt, oracle_weights(task.V_train, task.Y_train))))
            singles = []
            for a in range(m):
                w = np.full(m, SINGLE_LF_TIE_WEIGHT)
                w[a] = 1.0
                singles.append(e(kemeny_with(lm, Vt, w)))
            best = int(np.argmin(singles))
            best_lfs.append(task.lf_names[best])
            err["best single LF (oracle pick)"].append(singles[best])
            log(f"real {name} seed={seed}: " + ", ".join(
                f"{k}={v[-1]:.4f}" for k, v in err.items()) + f"; dev choice {lm_dev.choice_}")
        med = {k: float(np.median(v)) for k, v in err.items()}
        summary.append((name, task, med, err, choices, best_lfs, fit_s))

    print(
        f"\n### real: normalized Kendall error on the test rows (median over seeds "
        f"{', '.join(map(str, seeds))}; lower is better); LM = "
        f"RankingLabelModel(noise={noise!r}), fitted as noise_ = "
        f"{', '.join(sorted(noises))}; the Kemeny columns use plain weights (no gap "
        f"slope)\n"
    )
    short = ["LM", f"LM + {n_dev} dev", "Borda", "RRF", "Copeland", "Kemeny",
             "UWS Kemeny", "oracle Kemeny", "best single LF"]
    print("| task (items, LFs) | " + " | ".join(short) + " |")
    print("|---|" + "---:|" * len(short))
    for name, task, med, *_ in summary:
        cells = []
        for mth in REAL_METHODS:
            c = f"{med[mth]:.4f}"
            if mth in ("label model", "label model + 100 dev"):
                c = f"**{c}**"
            cells.append(c)
        print(f"| {name} ({task.n_items}, {task.n_lfs}) | " + " | ".join(cells) + " |")
    print("\n| task | LM below every unweighted fusion | LM margin to best unweighted "
          "| LM + dev <= best single LF | dev choices (per seed) | best single LF "
          "| LM fit (s) |")
    print("|---|---|---:|---|---|---|---:|")
    for name, _task, med, err, choices, best_lfs, fit_s in summary:
        best_fusion = min(med[u] for u in UNWEIGHTED)
        below = med["label model"] < best_fusion
        per_seed = all(
            err["label model"][s] < min(err[u][s] for u in UNWEIGHTED)
            for s in range(len(seeds))
        )
        dev_ok = med["label model + 100 dev"] <= med["best single LF (oracle pick)"]
        dev_seeds = sum(
            err["label model + 100 dev"][s] <= err["best single LF (oracle pick)"][s]
            for s in range(len(seeds))
        )
        print(
            f"| {name} | {'yes' if below else 'NO'} (every seed: "
            f"{'yes' if per_seed else 'no'}) | {med['label model'] - best_fusion:+.4f} "
            f"| {'yes' if dev_ok else 'NO'} "
            f"({med['label model + 100 dev'] - med['best single LF (oracle pick)']:+.4f}; "
            f"{dev_seeds}/{len(seeds)} seeds) "
            f"| {'; '.join(choices)} | {'; '.join(sorted(set(best_lfs)))} "
            f"| {np.median(fit_s):.1f} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sections", nargs="+", default=SECTIONS, choices=SECTIONS)
    parser.add_argument("--repeats", type=int, default=3,
                        help="fresh-subprocess fits (speed) and timing repeats (decoding)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--big", action="store_true",
                        help="recovery also at 1e3 and 1e5 rows; memory at 1e6 rows")
    parser.add_argument("--eval-rows", type=int, default=2000,
                        help="rows on which recovery scores the orderings")
    parser.add_argument("--speed-rows", type=int, default=100_000)
    parser.add_argument("--memory-rows", type=int, default=None,
                        help="default 1e5 (1e6 with --big)")
    parser.add_argument("--chunk-rows", type=int, default=10_000)
    parser.add_argument("--memory-modes", nargs="+",
                        default=["generate only", "partial_fit", "fit(iterator)", "fit(dask)"])
    parser.add_argument("--decoding-sizes", type=int, nargs="+", default=[10, 12, 20, 50, 100])
    parser.add_argument("--n-dev", type=int, default=100)
    parser.add_argument("--noise", default="auto",
                        help="RankingLabelModel's noise in speed, memory, real and the "
                        "second recovery model (recovery's theta always uses 'mallows')")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(run_worker(json.loads(args.worker))), flush=True)
        return

    from _common import environment

    env = environment()
    print(f"bench_rank_lists: snorkel_structured {env['package']}, numpy {env['numpy']}, "
          f"python {env['python']}, {env['n_cpus']} CPUs ({env['cpu']})")
    memory_rows = args.memory_rows or (1_000_000 if args.big else 100_000)
    runs = {
        "recovery": lambda: section_recovery(
            [1_000, 10_000, 100_000] if args.big else [10_000], args.seeds,
            args.eval_rows, args.noise),
        "speed": lambda: section_speed(
            args.repeats, args.speed_rows, args.seeds[0], args.noise),
        "memory": lambda: section_memory(
            memory_rows, args.chunk_rows, args.seeds[0], args.memory_modes, args.noise),
        "decoding": lambda: section_decoding(
            args.decoding_sizes, args.repeats, args.seeds[0]),
        "real": lambda: section_real(args.seeds, args.n_dev, args.noise),
    }
    for name in args.sections:
        load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
        print(f"\n(section {name}: load average before it {load})")
        t0 = time.perf_counter()
        runs[name]()
        sys.stdout.flush()
        log(f"section {name}: {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
