"""Small numerical kernels shared by the hot paths of the estimators and label models."""

from __future__ import annotations

import numpy as np

# Along an axis this short, logsumexp loops over its entries: NumPy reduces a short
# trailing axis several times slower than it adds whole arrays.
_SHORT_AXIS = 8


def logsumexp(
    a: np.ndarray, axis: int | None = None, keepdims: bool = False
) -> np.ndarray:
    """log(sum(exp(a))) along ``axis``, as ``scipy.special.logsumexp`` for real input.

    Without weights or complex input, whose handling makes SciPy's several times
    slower per call on the small arrays an EM step works on.
    """
    a = np.asarray(a, dtype=np.float64)
    if axis is not None and 1 < a.shape[axis] <= _SHORT_AXIS:
        parts = np.moveaxis(a, axis, 0)
        mx = parts[0].copy()
        for part in parts[1:]:
            np.maximum(mx, part, out=mx)
        shift = np.where(np.isfinite(mx), mx, 0.0)
        total = np.zeros_like(shift)
        for part in parts:
            total += np.exp(part - shift)
        with np.errstate(divide="ignore"):
            out = np.log(total) + shift
        return np.expand_dims(out, axis) if keepdims else out
    mx = np.max(a, axis=axis, keepdims=True)
    mx = np.where(np.isfinite(mx), mx, 0.0)
    with np.errstate(divide="ignore"):
        out = np.log(np.sum(np.exp(a - mx), axis=axis, keepdims=True)) + mx
    if keepdims:
        return out
    return out.reshape(()) if axis is None else np.squeeze(out, axis=axis)
