"""What every benchmark records beside its numbers: the package and the machine."""

from __future__ import annotations

import os
import platform
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import snorkel_structured as ss


def environment() -> dict:
    """Versions and CPU of this run (merged into every JSONL record)."""
    return {
        "package": ss.__version__,
        "numpy": np.__version__,
        "python": platform.python_version(),
        "cpu": platform.processor() or platform.machine(),
        "n_cpus": os.cpu_count(),
    }


def log(msg: str) -> None:
    """Progress to stderr, so that stdout holds only the tables."""
    print(msg, file=sys.stderr, flush=True)


def median_time(fn: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    """Median wall time of ``fn`` over ``repeats`` runs after one warm-up, and its
    last result."""
    out = fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times)), out


def dawid_skene_fit(L: np.ndarray, k: int) -> Callable[[np.ndarray], np.ndarray]:
    """``estimators.dawid_skene_estimate`` on the label matrix ``L`` over ``k``
    classes (counting included); returns its MAP rule (ties to the lowest class)."""
    from snorkel_structured.estimators import VoteStats, dawid_skene_estimate

    posterior = dawid_skene_estimate(VoteStats.from_label_matrix(L, k)).posterior()

    def predict(L_new: np.ndarray) -> np.ndarray:
        logp, inverse = posterior.log_proba(L_new)
        return logp.argmax(axis=1)[inverse]

    return predict
