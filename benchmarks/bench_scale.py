"""Benchmarks of issue 8 (scale) and the Snorkel speed target of issue 3.

Sections (``--sections``):

- ``inmem``: n = 1e7 rows, m = 3, S4, in memory: fit time against the floor (one
  ``np.bincount`` over the rows encoded as one integer code), peak memory.
- ``stream``: n = 1e8 rows generated chunk by chunk (never held at once), through
  ``partial_fit`` (re-estimating after each chunk), ``fit(generator)`` (one estimate),
  and ``fit(dask array)`` on a two-worker ``LocalCluster`` whose workers generate their
  own chunks; time and peak RSS per process.
- ``perm``: Permutations(7) (5,040 labels) and Permutations(8) (40,320) at n = 1e5, k
  centers: fit/predict time, peak traced memory, support recovery and |E d^2 - truth|.
- ``snorkel``: Snorkel's generator (n = 1e5, m = 10, cardinality 2 and 4): accuracy and
  fit time of Snorkel's LabelModel and ours (label-dependent), medians of ``--repeats``
  runs in the same process (Snorkel warmed up first).

Prints a table on stderr and one JSONL record per configuration on stdout. No asserts.

    python benchmarks/bench_scale.py --sections inmem stream perm snorkel > scale.jsonl
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import sys
import time
import tracemalloc
import warnings

import numpy as np

import snorkel_structured as ss
from snorkel_structured.synthetic import make_label_matrix

ENV = {
    "package": ss.__version__,
    "numpy": np.__version__,
    "cpu": platform.machine(),
    "n_cpu": __import__("os").cpu_count(),
}
CENTERS4 = (3, 17)  # fixed centers of S4 so every streamed chunk has the same truth


def emit(record: dict) -> None:
    print(json.dumps({**record, **ENV}), flush=True)


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def rss_peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # KiB on Linux


def traced(fn):
    """(result, peak MB of Python/numpy allocations during fn) via tracemalloc."""
    tracemalloc.start()
    try:
        out = fn()
        peak = tracemalloc.get_traced_memory()[1] / 1e6
    finally:
        tracemalloc.stop()
    return out, peak


def quiet_fit(model, data):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return model.fit(data)


def ranking_chunk(n: int, seed: int) -> np.ndarray:
    return ss.synthetic.make_ranking_data(n, centers=CENTERS4, seed=seed).L


# -- in memory ---------------------------------------------------------------------------
def inmem(n: int, repeats: int) -> None:
    log(f"\n== In memory: n={n:.0e}, m=3, S4 (medians of {repeats}) ==")
    data = ss.synthetic.make_ranking_data(n, centers=CENTERS4, seed=0)
    L = data.L
    t_floor, t_fit = [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        codes = (L[:, 0] + 1) * 625 + (L[:, 1] + 1) * 25 + (L[:, 2] + 1)
        np.bincount(codes)
        t_floor.append(time.perf_counter() - t0)
        del codes
        t0 = time.perf_counter()
        lm = quiet_fit(
            ss.StructuredLabelModel(
                data.space, estimator="mle", n_components=2, seed=0
            ),
            L,
        )
        t_fit.append(time.perf_counter() - t0)
    _, peak = traced(
        lambda: quiet_fit(
            ss.StructuredLabelModel(
                data.space, estimator="mle", n_components=2, seed=0
            ),
            L,
        )
    )
    err = np.abs(lm.expected_sq_dist_ - data.expected_sq_dist).max()
    tf, tb = float(np.median(t_fit)), float(np.median(t_floor))
    log(
        f"fit {tf:.2f}s  floor (encode + bincount) {tb:.2f}s  ratio {tf / tb:.1f}x  "
        f"peak traced during fit {peak:.0f} MB (L itself {L.nbytes / 1e6:.0f} MB)  "
        f"process peak RSS {rss_peak_mb():.0f} MB  max|E d2 err| {err:.4f}"
    )
    emit(
        {
            "section": "inmem",
            "n": n,
            "fit_s": tf,
            "floor_s": tb,
            "ratio": tf / tb,
            "peak_traced_mb": peak,
            "L_mb": L.nbytes / 1e6,
            "rss_peak_mb": rss_peak_mb(),
            "max_abs_err": float(err),
            "repeats": repeats,
        }
    )


# -- streamed --------------------------------------------------------------------------
def _worker_peak_mb() -> dict:
    """Peak (VmHWM) and current (VmRSS) resident memory of this process, in MB."""
    import os

    out = {"pid": os.getpid()}
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(("VmHWM", "VmRSS")):
                out[line.split(":")[0]] = int(line.split()[1]) / 1024.0
    return out


def stream(n: int, chunk: int, modes: list[str]) -> None:
    n_chunks = n // chunk
    space = ss.Permutations(4)
    truth = ss.synthetic.make_ranking_data(
        10, centers=CENTERS4, seed=0
    ).expected_sq_dist
    log(f"\n== Streamed: n={n:.0e} in {n_chunks} chunks of {chunk:.0e}, m=3, S4 ==")
    for mode in modes:
        rss0 = rss_peak_mb()
        t0 = time.perf_counter()
        t_gen = 0.0
        lm = ss.StructuredLabelModel(space, estimator="mle", n_components=2, seed=0)
        workers = {}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if mode == "partial_fit":
                for i in range(n_chunks):
                    g0 = time.perf_counter()
                    L = ranking_chunk(chunk, 1000 + i)
                    t_gen += time.perf_counter() - g0
                    lm.partial_fit(L)
            elif mode == "fit_generator":

                def gen():
                    nonlocal t_gen
                    for i in range(n_chunks):
                        g0 = time.perf_counter()
                        L = ranking_chunk(chunk, 1000 + i)
                        t_gen += time.perf_counter() - g0
                        yield L

                lm.fit(gen())
            else:
                import dask
                import dask.array as da
                from dask.distributed import Client, LocalCluster

                with (
                    LocalCluster(
                        n_workers=2,
                        threads_per_worker=1,
                        processes=True,
                        dashboard_address=None,
                    ) as cluster,
                    Client(cluster) as client,
                ):
                    t0 = time.perf_counter()  # cluster start-up excluded
                    parts = [
                        da.from_delayed(
                            dask.delayed(ranking_chunk)(chunk, 1000 + i),
                            shape=(chunk, 3),
                            dtype=np.int64,
                        )
                        for i in range(n_chunks)
                    ]
                    lm.fit(da.concatenate(parts))
                    workers = client.run(_worker_peak_mb)
        dt = time.perf_counter() - t0
        err = np.abs(lm.expected_sq_dist_ - truth).max()
        peak = max(rss_peak_mb(), rss0)
        wtxt = "  ".join(
            f"worker {i} (pid {v['pid']}) peak RSS {v['VmHWM']:.0f} MB"
            for i, v in enumerate(workers.values())
        )
        log(
            f"{mode:>14}: {dt:.1f}s total ({t_gen:.1f}s of it generating on the client)  "
            f"client peak RSS {peak:.0f} MB  {wtxt}  n_samples {lm.stats_.n_samples:.2e}  "
            f"max|E d2 err| {err:.5f}"
        )
        emit(
            {
                "section": "stream",
                "mode": mode,
                "n": n,
                "chunk": chunk,
                "total_s": dt,
                "client_generate_s": t_gen,
                "client_rss_peak_mb": peak,
                "worker_rss_peak_mb": [v["VmHWM"] for v in workers.values()],
                "max_abs_err": float(err),
            }
        )


# -- large permutation spaces ----------------------------------------------------------
def perm(items: list[int], n: int, k: int, seed: int) -> None:
    theta = [0.3, 0.5, 0.4]
    probs = np.full(k, 1.0 / k) if k != 2 else np.array([0.3, 0.7])
    for n_items in items:
        space = ss.Permutations(n_items)
        r = len(space)
        centers = np.sort(np.random.default_rng(seed).choice(r, size=k, replace=False))
        prior = np.zeros(r)
        prior[centers] = probs
        data = make_label_matrix(
            n, space=space, theta=theta, prior=prior, seed=seed + 1
        )
        L, Y, expected = data.L, data.Y, data.expected_sq_dist
        log(f"\n== Permutations({n_items}): r={r}, n={n:.0e}, k={k}, theta={theta} ==")
        t0 = time.perf_counter()
        lm, peak_fit = traced(
            lambda sp=space, L=L: quiet_fit(
                ss.StructuredLabelModel(sp, estimator="mle", n_components=k, seed=seed),
                L,
            )
        )
        t_fit = time.perf_counter() - t0
        t0 = time.perf_counter()
        (probs_s, preds), peak_pred = traced(
            lambda lm=lm, L=L: (lm.predict_proba(L, labels="support"), lm.predict(L))
        )
        t_pred = time.perf_counter() - t0
        full_error = ""
        try:
            lm.predict_proba(L)
        except ValueError as exc:
            full_error = str(exc)[:120]
        err = np.abs(lm.expected_sq_dist_ - expected)
        ok = bool(np.array_equal(lm.support_, centers))
        acc = float((preds == Y).mean())
        log(
            f"fit {t_fit:.2f}s (traced; peak {peak_fit:.0f} MB)  predict_proba(support)+predict "
            f"{t_pred:.2f}s (peak {peak_pred:.0f} MB)  support ok {ok}  |E d2 err| "
            f"{np.round(err, 4).tolist()} (truth {np.round(expected, 3).tolist()})  "
            f"accuracy {acc:.4f}  prior err {np.abs(lm.prior_[centers] - probs).max():.4f}"
        )
        if full_error:
            log(f"predict_proba(L) (full r columns): {full_error}...")
        emit(
            {
                "section": "perm",
                "n_items": n_items,
                "r": r,
                "n": n,
                "k": k,
                "fit_s": t_fit,
                "fit_peak_mb": peak_fit,
                "predict_s": t_pred,
                "predict_peak_mb": peak_pred,
                "support_ok": ok,
                "abs_err": err.tolist(),
                "truth": expected.tolist(),
                "accuracy": acc,
                "rss_peak_mb": rss_peak_mb(),
                "distance_matrix_built": "distance_matrix" in space.__dict__,
            }
        )


# -- against Snorkel ---------------------------------------------------------------------
def snorkel(
    cards: list[int], seed: int, repeats: int, n: int, m: int, threads: int
) -> None:
    import torch
    from snorkel.labeling.model import LabelModel

    if threads > 0:  # torch's spinning threads collapse when the 2 cores are shared
        torch.set_num_threads(threads)
    from snorkel.synthetic.synthetic_data import generate_simple_label_matrix

    log(
        f"\n== Against Snorkel's generator: n={n:.0e}, m={m}, medians of {repeats}, "
        f"torch threads {torch.get_num_threads()} =="
    )
    log(
        f"{'k':>3} {'snorkel acc':>12} {'snorkel fit':>12} {'ours acc':>9} {'ours fit':>9} "
        f"{'ratio':>6}"
    )
    np.random.seed(seed)  # noqa: NPY002 - Snorkel's generator only uses the global RNG
    _, _, Lw = generate_simple_label_matrix(1000, m, 2)
    LabelModel(cardinality=2, verbose=False).fit(
        Lw, progress_bar=False
    )  # torch warm-up
    for k in cards:
        np.random.seed(seed)  # noqa: NPY002 - Snorkel's generator uses the global RNG
        _, Y, L = generate_simple_label_matrix(n, m, k)
        ts, to = [], []
        for _ in range(repeats):
            t0 = time.perf_counter()
            sn = LabelModel(cardinality=k, verbose=False)
            sn.fit(L, n_epochs=100, seed=seed, progress_bar=False)
            ts.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            lm = ss.StructuredLabelModel(
                ss.Discrete(k),
                estimator="mle",
                label_dependent=True,
                prior_support="all",
                seed=seed,
            ).fit(L)
            to.append(time.perf_counter() - t0)
        acc_sn = float((sn.predict(L, tie_break_policy="random") == Y).mean())
        acc = float((lm.predict(L, tie_break_policy="random") == Y).mean())
        tsn, tours = float(np.median(ts)), float(np.median(to))
        log(
            f"{k:>3} {acc_sn:>12.4f} {tsn:>11.3f}s {acc:>9.4f} {tours:>8.3f}s {tours / tsn:>6.2f}"
        )
        emit(
            {
                "section": "snorkel",
                "k": k,
                "n": n,
                "m": m,
                "seed": seed,
                "snorkel_acc": acc_sn,
                "snorkel_fit_s": tsn,
                "ours_acc": acc,
                "ours_fit_s": tours,
                "ratio": tours / tsn,
                "repeats": repeats,
                "snorkel_fit_all_s": ts,
                "ours_fit_all_s": to,
                "torch_threads": torch.get_num_threads(),
            }
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--sections", nargs="+", default=["inmem", "stream", "perm", "snorkel"]
    )
    ap.add_argument("--inmem-n", type=int, default=10_000_000)
    ap.add_argument("--stream-n", type=int, default=100_000_000)
    ap.add_argument("--chunk", type=int, default=2_000_000)
    ap.add_argument(
        "--stream-modes", nargs="+", default=["partial_fit", "fit_generator", "dask"]
    )
    ap.add_argument("--perm-items", nargs="+", type=int, default=[7, 8])
    ap.add_argument("--perm-n", type=int, default=100_000)
    ap.add_argument("--perm-k", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--torch-threads",
        type=int,
        default=0,
        help="torch.set_num_threads for Snorkel (0: torch's default)",
    )
    args = ap.parse_args()
    if "inmem" in args.sections:
        inmem(args.inmem_n, args.repeats)
    if "stream" in args.sections:
        stream(args.stream_n, args.chunk, args.stream_modes)
    if "perm" in args.sections:
        perm(args.perm_items, args.perm_n, args.perm_k, args.seed)
    if "snorkel" in args.sections:
        snorkel([2, 4], args.seed, args.repeats, 100_000, 10, args.torch_threads)


if __name__ == "__main__":
    main()
