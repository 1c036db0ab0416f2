"""Small numerical kernels shared by the hot paths of the estimators and label models."""

from __future__ import annotations

import numpy as np


def logsumexp(
    a: np.ndarray, axis: int | None = None, keepdims: bool = False
) -> np.ndarray:
    """log(sum(exp(a))) along ``axis``, as ``scipy.special.logsumexp`` for real input.

    Without weights or complex input, whose handling makes SciPy's several times
    slower per call on the small arrays an EM step works on.
    """
    a = np.asarray(a, dtype=np.float64)
    mx = np.max(a, axis=axis, keepdims=True)
    mx = np.where(np.isfinite(mx), mx, 0.0)
    with np.errstate(divide="ignore"):
        out = np.log(np.sum(np.exp(a - mx), axis=axis, keepdims=True)) + mx
    if keepdims:
        return out
    return out.reshape(()) if axis is None else np.squeeze(out, axis=axis)
