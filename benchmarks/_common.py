"""What every benchmark records beside its numbers: the package and the machine."""

from __future__ import annotations

import os
import platform

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
