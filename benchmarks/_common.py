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
