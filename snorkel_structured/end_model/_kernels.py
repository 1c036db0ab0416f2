"""Kernels and the kernel-ridge weights alpha(x) shared by the structured end models.

Ciliberto et al. (2016): alpha(x) = (K + n nu I)^-1 K_x. Both the finite-space and the
manifold end models predict from these weights, so they live here once.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp
from scipy.linalg import LinAlgError, cho_factor, cho_solve

KERNELS = ("rbf", "linear")


def check_features(
    X: Any, name: str = "X", *, n_features: int | None = None, estimator: Any = None
) -> np.ndarray:
    """Features as a fresh finite float64 (n_samples, n_features) array, or a clear
    ValueError (sparse, complex, ragged, empty, non-finite, or not ``n_features``
    columns: the number ``estimator`` was fitted on).

    The messages contain scikit-learn's own phrases for these cases, so that code
    (and scikit-learn's estimator checks) matching them keeps working.
    """
    if sp.issparse(X):
        raise ValueError(
            f"Sparse data was passed as {name}, but dense data is required: the "
            "kernel end models need dense features, not a sparse matrix; pass X.toarray()."
        )
    arr = X.to_numpy() if isinstance(X, pd.DataFrame) else X
    if np.iscomplexobj(arr):
        raise ValueError(
            f"Complex data not supported: {name} has complex entries; features must "
            "be real numbers."
        )
    try:
        arr = np.array(arr, dtype=np.float64, copy=True)
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"{name} must be a numeric (n_samples, n_features) array; {exc}"
        ) from None
    if arr.ndim != 2:
        raise ValueError(
            f"{name} must be a 2-D (n_samples, n_features) array; got shape "
            f"{arr.shape}. Reshape your data: a single feature with X.reshape(-1, 1), "
            "a single sample with X.reshape(1, -1)."
        )
    if arr.shape[0] == 0 or arr.shape[1] == 0:
        raise ValueError(
            f"{name} must have at least one row and column: found {arr.shape[0]} "
            f"sample(s) and {arr.shape[1]} feature(s) (shape={arr.shape}) while a "
            "minimum of 1 is required."
        )
    if not np.isfinite(arr).all():
        idx = tuple(int(i) for i in np.argwhere(~np.isfinite(arr))[0])
        raise ValueError(
            f"{name} contains NaN or inf: entry {idx} is {arr[idx]!r}; features must "
            "be finite."
        )
    if n_features is not None and arr.shape[1] != n_features:
        raise ValueError(
            f"{name} has {arr.shape[1]} features, but {type(estimator).__name__} is "
            f"expecting {n_features} features as input (the number it was fitted on)."
        )
    return arr


def resolve_gamma(X: np.ndarray, gamma: float | str | None) -> float:
    """RBF bandwidth: a number, or ``"scale"`` / None = 1 / (n_features * X.var()).

    The variance is taken of X divided by its largest entry, then scaled back, so
    features of any magnitude give the same kernel; a bandwidth outside the
    floating-point range is refused.
    """
    if not (gamma is None or gamma == "scale"):
        return float(gamma)
    top = float(np.abs(X).max()) if X.size else 0.0
    var = float((X / top).var()) if top > 0 else 0.0
    if var == 0.0:
        return 1.0
    with np.errstate(over="ignore", under="ignore"):
        out = 1.0 / (X.shape[1] * var) / top / top
    if not np.isfinite(out) or out == 0.0:
        raise ValueError(
            f"The features' largest entry is {top:.3g}: the RBF bandwidth "
            "1 / (n_features * X.var()) is outside the floating-point range. "
            "Standardize the features (e.g. sklearn.preprocessing.StandardScaler)."
        )
    return out


def squared_distances(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """Squared Euclidean distances between the rows of A and B, (n_a, n_b).

    May hold inf where the features overflow; :func:`kernel_matrix` refuses that.
    """
    with np.errstate(over="ignore", invalid="ignore"):
        return (
            np.einsum("ij,ij->i", A, A)[:, None]
            + np.einsum("ij,ij->i", B, B)[None, :]
            - 2.0 * (A @ B.T)
        )


def kernel_matrix(
    A: np.ndarray, B: np.ndarray, kernel: str, gamma: float
) -> np.ndarray:
    """Kernel between the rows of ``A`` (n_a, p) and ``B`` (n_b, p) -> (n_a, n_b)."""
    if kernel == "linear":
        return A @ B.T
    sq = squared_distances(A, B)
    if not np.isfinite(sq).all():
        raise ValueError(
            "Squared distances between feature rows overflow floating point; "
            "standardize the features (e.g. sklearn.preprocessing.StandardScaler)."
        )
    np.maximum(sq, 0.0, out=sq)
    sq *= -gamma
    return np.exp(sq, out=sq)


def ridge_factor(K: np.ndarray, nu: float) -> tuple[np.ndarray, bool]:
    """Cholesky factor of ``K + n nu I`` (a new matrix; ``K`` is not touched)."""
    n = K.shape[0]
    A = K + (n * nu) * np.eye(n)
    try:
        return cho_factor(A, lower=True, check_finite=False)
    except LinAlgError:
        raise ValueError(
            "The kernel matrix plus n * nu * I is not positive definite; increase nu "
            f"(got nu={nu!r})."
        ) from None


def ridge_weights(factor: tuple[np.ndarray, bool], K_x: np.ndarray) -> np.ndarray:
    """alpha = (K + n nu I)^-1 K_x for K_x of shape (n_train, n_new)."""
    return cho_solve(factor, K_x, check_finite=False)
