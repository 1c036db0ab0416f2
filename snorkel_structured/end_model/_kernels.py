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
from tqdm import tqdm

from snorkel_structured._persistence import (
    check_state_array,
    state_attr,
    state_float,
    state_int,
)
from snorkel_structured._validation import check_scalar

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

    The variance is taken of X, centred and divided by its largest entry, then scaled
    back, so features of any magnitude or common offset give the same kernel; a
    bandwidth outside the floating-point range is refused.
    """
    if not (gamma is None or gamma in ("scale", "auto")):  # "auto" starts here
        return float(gamma)
    # X.var() is free of a shift common to all entries, but computed on raw features
    # that share a large offset (x + 1.7e9) it keeps only a few significant digits:
    # centre on the midrange (overflow-free) first, an exact subtraction for them.
    with np.errstate(over="ignore", invalid="ignore"):
        X = X - (0.5 * X.min() + 0.5 * X.max()) if X.size else X
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


#: Largest squared row norm (the linear kernel's diagonal, x . x) accepted at fit, and
#: 1 / LINEAR_KERNEL_MAX the smallest nonzero one: the ridge systems form K^T K summed
#: over rows, which must stay far below the float64 maximum (1.8e308).
LINEAR_KERNEL_MAX = 1e100
_STANDARDIZE = "Standardize the features (e.g. sklearn.preprocessing.StandardScaler)."


def check_kernel_range(X: np.ndarray, kernel: str) -> None:
    """Refuse training features whose linear kernel X @ X.T is outside floating range.

    The linear kernel's entries are up to the largest squared row norm; beyond
    ``LINEAR_KERNEL_MAX`` (about 1e50 per feature) its products overflow to inf or NaN,
    and below ``1 / LINEAR_KERNEL_MAX`` they underflow. The RBF kernel needs no such
    check (:func:`resolve_gamma` makes it free of the features' magnitude).
    """
    if kernel != "linear" or X.size == 0:
        return
    top = float(np.abs(X).max())
    if top == 0.0:
        return
    with np.errstate(over="ignore", under="ignore"):
        sq = float(np.einsum("ij,ij->i", X / top, X / top).max()) * top * top
    if not 1.0 / LINEAR_KERNEL_MAX <= sq <= LINEAR_KERNEL_MAX:
        raise ValueError(
            f"X's largest entry is {top:.3g}: features too "
            f"{'large' if top > 1.0 else 'small'} for the linear kernel, whose "
            f"entries (x . x' up to {sq:.3g}) must lie within "
            f"[{1.0 / LINEAR_KERNEL_MAX:.0e}, {LINEAR_KERNEL_MAX:.0e}] to stay in "
            f"floating-point range. {_STANDARDIZE}"
        )


def check_finite_output(values: np.ndarray, what: str) -> np.ndarray:
    """``values``, or a ValueError when they overflowed (features far beyond the
    training features' magnitude)."""
    if not np.isfinite(values).all():
        raise ValueError(
            f"The {what} overflow floating point for these rows of X: their features "
            f"are far larger than the training features. {_STANDARDIZE[:-1]} as for "
            "training."
        )
    return values


def _centre(X: np.ndarray) -> np.ndarray:
    """Per-feature midrange of the rows of X, (n_features,): a point inside the data.

    The midrange, not the mean: it cannot overflow (a sum of rows near the float64
    maximum does), and it minimizes the largest centred entry, which bounds the
    round-off of the expansion in :func:`squared_distances`.
    """
    return 0.5 * X.min(axis=0) + 0.5 * X.max(axis=0)


def squared_distances(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """Squared Euclidean distances between the rows of A and B, (n_a, n_b).

    Parameters
    ----------
    A : ndarray of shape (n_a, n_features)
    B : ndarray of shape (n_b, n_features)

    Returns
    -------
    sq : ndarray of shape (n_a, n_b)
        Non-negative; its diagonal is exactly 0 when ``A is B``. May hold inf or NaN
        where the features overflow; :func:`kernel_matrix` refuses that.

    Notes
    -----
    The expansion |a|^2 + |b|^2 - 2 a.b cancels catastrophically when the features
    share a large offset (Unix timestamps, IDs: x + 1.7e9 leaves no significant digit
    of a distance of 1). Distances are free of a common shift, so both arguments are
    first centred on a point of B: for such features the centring subtraction is
    exact (Sterbenz), and the expansion's round-off is then relative to the spread
    of the data, not to its offset.
    """
    with np.errstate(over="ignore", invalid="ignore"):
        c = _centre(B)
        Bc = B - c
        # The same array for both (not two equal copies), so that Bc @ Bc.T is one
        # symmetric BLAS product and K(X, X) comes out exactly symmetric.
        Ac = Bc if A is B else A - c
        sq = (
            np.einsum("ij,ij->i", Ac, Ac)[:, None]
            + np.einsum("ij,ij->i", Bc, Bc)[None, :]
            - 2.0 * (Ac @ Bc.T)
        )
        # Round-off can leave tiny negatives (and nonzero self-distances); NaN passes.
        np.maximum(sq, 0.0, out=sq)
    if A is B:
        np.fill_diagonal(sq, 0.0)
    return sq


def kernel_matrix(
    A: np.ndarray, B: np.ndarray, kernel: str, gamma: float
) -> np.ndarray:
    """Kernel between the rows of ``A`` (n_a, p) and ``B`` (n_b, p) -> (n_a, n_b)."""
    if kernel == "linear":
        with np.errstate(over="ignore", invalid="ignore"):
            K = A @ B.T
        if not np.isfinite(K).all():
            raise ValueError(
                "The linear kernel (dot products of feature rows) overflows floating "
                f"point. {_STANDARDIZE}"
            )
        return K
    sq = squared_distances(A, B)
    if not np.isfinite(sq).all():
        raise ValueError(
            "Squared distances between feature rows overflow floating point; "
            "standardize the features (e.g. sklearn.preprocessing.StandardScaler)."
        )
    sq *= -gamma
    return np.exp(sq, out=sq)


def ridge_factor(K: np.ndarray, nu: float) -> tuple[np.ndarray, bool]:
    """Cholesky factor of ``K + n nu I`` (a new matrix; ``K`` is not touched)."""
    n = K.shape[0]
    A = K + (n * nu) * np.eye(n)
    try:
        return cho_factor(A, lower=True, check_finite=False)
    except LinAlgError:
        scale = float(np.mean(np.diag(K))) if n else 0.0
        raise ValueError(
            "The kernel matrix plus n * nu * I is not positive definite; increase nu "
            f"(got nu={nu!r}; the kernel's diagonal averages {scale:.3g}, and a ridge "
            "far below that is lost to round-off), or standardize the features."
        ) from None


def ridge_weights(factor: tuple[np.ndarray, bool], K_x: np.ndarray) -> np.ndarray:
    """alpha = (K + n nu I)^-1 K_x for K_x of shape (n_train, n_new)."""
    return cho_solve(factor, K_x, check_finite=False)


# -- low-rank (Nystroem) kernels and the spectral ridge system ------------------------------
#: Training sizes up to this use the exact n x n solve when ``n_components="auto"``
#: (KernelStructuredPredictor); above it, a Nystroem kernel of ``AUTO_N_COMPONENTS``
#: landmarks. Beyond it the exact solve costs O(n^3) time and O(n^2) memory, and
#: predicting O(n_train) per row, against O(n m^2), O(m^2) and O(m).
EXACT_MAX_SAMPLES = 2_000
#: The manifold regressor keeps the exact solve longer: its prediction needs weights on
#: every training row anyway, so the low-rank kernel only saves the O(n^3) fit.
EXACT_MAX_SAMPLES_MANIFOLD = 5_000
#: Landmarks of the Nystroem kernel under ``n_components="auto"``.
AUTO_N_COMPONENTS = 1_000
#: ``gamma="auto"`` tries these multiples of the "scale" bandwidth.
GAMMA_GRID = 2.0 ** np.arange(-3.0, 4.0)
#: ``nu="auto"`` picks nu from this grid (the system solved is K + n nu I), in units
#: of the mean kernel diagonal (1 for the RBF kernel, mean |x|^2 for the linear one).
#: The floor keeps GCV above the round-off of the kernel's eigenvalues: below about
#: 1e-8 of the largest they are noise, and GCV then shows a spurious minimum.
NU_GRID = np.logspace(-7.0, 1.0, 33)
#: Rows (a seeded subsample) and landmarks with which GCV compares bandwidths.
GCV_MAX_SAMPLES = 2_000
GCV_LANDMARKS = 500
#: Floats in one (rows x landmarks) kernel block while streaming over the data.
BLOCK_FLOATS = 1 << 22


def check_n_components(n_components: Any) -> None:
    """``n_components`` is "auto", None or an int >= 1 (ValueError/TypeError)."""
    if n_components is None or (
        isinstance(n_components, str) and n_components == "auto"
    ):
        return
    if isinstance(n_components, str):
        raise ValueError(
            f"n_components must be 'auto', None or an int >= 1; got {n_components!r}."
        )
    check_scalar(n_components, "n_components", kind="int", low=1)


def kernel_scale(X: np.ndarray, kernel: str) -> float:
    """Mean of the kernel's diagonal: the unit of ``NU_GRID``."""
    if kernel == "linear":
        return max(float(np.einsum("ij,ij->", X, X)) / max(X.shape[0], 1), 1e-300)
    return 1.0


def choose_n_components(n_components: Any, n: int, exact_max: int) -> int | None:
    """Landmark count for ``n`` training rows; None = the exact solve."""
    if n_components is None:
        return None
    if isinstance(n_components, str):  # "auto"
        return None if n <= exact_max else min(AUTO_N_COMPONENTS, n)
    return min(int(n_components), n)


def pick_landmarks(n: int, m: int, rng: np.random.Generator) -> np.ndarray:
    """Indices of ``m`` landmark rows: all rows in order when ``m >= n``, else a
    uniform sample without replacement (sorted, so that reads are sequential)."""
    if m >= n:
        return np.arange(n)
    return np.sort(rng.choice(n, size=m, replace=False))


def nystroem_map(K_mm: np.ndarray) -> np.ndarray:
    """``N`` of shape (m, r) with ``N N^T = K_mm^+`` (eigenvalues below 1e-12 of the
    largest dropped): features ``phi(x) = k_m(x)^T N`` give ``phi phi^T = K_nm K_mm^+
    K_mn``, the Nystroem kernel (equal to K when the landmarks are all the rows)."""
    e, V = np.linalg.eigh((K_mm + K_mm.T) / 2.0)
    top = float(e.max()) if e.size else 0.0
    keep = e > 1e-12 * max(top, 0.0)
    if not keep.any():
        raise ValueError(
            "The kernel matrix of the landmark rows is zero; check the features and "
            "gamma."
        )
    return V[:, keep] / np.sqrt(e[keep])


class RidgeSystem:
    """The ridge problem ``min ||F - W||^2 + lam ||f||_H^2`` in spectral form.

    ``evals`` (r,) are the eigenvalues of K (exact) or of Phi^T Phi (Nystroem);
    ``proj`` (r, k) are the targets' coordinates on the matching orthonormal basis of
    the range of K (U^T W); ``outside`` (k, k) is the Gram matrix of the part of W
    outside that range; ``coords`` (r, k) and ``basis`` (n_basis, r) give the dual
    coefficients ``basis @ (coords / (evals + lam))`` on the basis rows (all training
    rows, or the landmarks). The targets enter linearly everywhere, so any right
    factor (the squared-distance matrix of the candidates) can be applied afterwards.
    """

    def __init__(self, evals, proj, outside, coords, basis, n):
        self.evals = np.maximum(evals, 0.0)
        self.proj = proj
        self.outside = outside
        self.coords = coords
        self.basis = basis
        self.n = n

    def gcv(self, lams: np.ndarray, A: np.ndarray | None = None) -> np.ndarray:
        """Generalized cross-validation ``n ||(I - H) W A||^2 / (n - tr H)^2`` for each
        ``lam`` (H the hat matrix), with targets ``W A`` (A = identity if None)."""
        lams = np.asarray(lams, dtype=np.float64)
        if A is None:
            q = np.einsum("jk,jk->j", self.proj, self.proj)
            out = float(np.trace(self.outside))
        else:
            PA = self.proj @ A
            q = np.einsum("jk,jk->j", PA, PA)
            out = float(np.einsum("ij,ik,jk->", self.outside, A, A))
        out = max(out, 0.0)  # a difference of sums: round-off may make it negative
        s = self.evals[None, :]
        denom = s + lams[:, None]  # (n_lams, r)
        # lam = 0 (nu=0) on a zero eigenvalue (round-off clipped to 0) is 0 / 0: that
        # direction is not fitted at all, so it keeps its residual and has no dof.
        fitted = denom > 0
        safe = np.where(fitted, denom, 1.0)
        shrink = np.where(fitted, lams[:, None] / safe, 1.0)
        resid = out + (shrink**2 * q[None, :]).sum(axis=1)
        dof = self.n - np.where(fitted, s / safe, 0.0).sum(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(
                dof > 0, self.n * resid / np.maximum(dof, 1e-300) ** 2, np.inf
            )

    def dual(self, lam: float) -> np.ndarray:
        """Dual coefficients (n_basis, k) of the ridge solution for ``lam`` > 0."""
        return self.basis @ (self.coords / (self.evals + lam)[:, None])


def exact_system(K: np.ndarray, W: np.ndarray) -> RidgeSystem:
    """Spectral ridge system of the exact kernel (eigendecomposition of K)."""
    e, V = np.linalg.eigh((K + K.T) / 2.0)
    P = V.T @ W
    outside = np.zeros((W.shape[1], W.shape[1]))
    return RidgeSystem(e, P, outside, P, V, K.shape[0])


def iter_blocks(n: int, width: int, chunk_size: int | None = None):
    """Row slices of at most ``chunk_size`` rows and ``BLOCK_FLOATS / width``."""
    rows = max(1, BLOCK_FLOATS // max(1, width))
    if chunk_size is not None:
        rows = min(rows, chunk_size)
    for start in range(0, n, rows):
        yield slice(start, min(start + rows, n))


def nystroem_system(
    X: np.ndarray,
    landmarks: np.ndarray,
    W: np.ndarray,
    kernel: str,
    gamma: float,
    *,
    keep_features: bool = False,
    progress_bar: bool = False,
) -> tuple[RidgeSystem, np.ndarray, np.ndarray | None]:
    """Spectral ridge system of the Nystroem kernel, streamed over row blocks.

    Memory is O(m^2 + block * m): Phi^T Phi, Phi^T W and W^T W are sums over rows.
    Returns the system, the map N (m, r) and, if ``keep_features``, Phi (n, r).
    ``progress_bar`` shows a tqdm bar over the rows.
    """
    N = nystroem_map(kernel_matrix(landmarks, landmarks, kernel, gamma))
    m, r, k = landmarks.shape[0], N.shape[1], W.shape[1]
    # Phi^T Phi = N^T (K_Zn K_nZ) N: accumulating K_Zn K_nZ (one symmetric rank-k
    # update per block, BLAS syrk) halves the work of forming Phi block by block.
    C = np.zeros((m, m))
    KW = np.zeros((m, k))
    WtW = np.zeros((k, k))
    Phi = np.empty((X.shape[0], r)) if keep_features else None
    bar = tqdm(
        total=X.shape[0], desc="Nystroem kernel", unit="row", disable=not progress_bar
    )
    for sl in iter_blocks(X.shape[0], m):
        bar.update(sl.stop - sl.start)
        Kb = kernel_matrix(X[sl], landmarks, kernel, gamma)
        C += Kb.T @ Kb
        KW += Kb.T @ W[sl]
        WtW += W[sl].T @ W[sl]
        if Phi is not None:
            Phi[sl] = Kb @ N
    bar.close()
    G = N.T @ C @ N
    B = N.T @ KW
    s, V = np.linalg.eigh((G + G.T) / 2.0)
    s = np.maximum(s, 0.0)
    C = V.T @ B  # coordinates of Phi^T W on the eigenbasis
    pos = s > 1e-12 * max(float(s.max()), 1e-300)
    P = np.where(pos[:, None], C / np.sqrt(np.where(pos, s, 1.0))[:, None], 0.0)
    outside = WtW - P.T @ P
    system = RidgeSystem(s, P, outside, C, N @ V, X.shape[0])
    if Phi is not None:
        Phi = Phi @ V  # features on the eigenbasis (the manifold model needs them)
    return system, N, Phi


def select_gamma_nu(
    X: np.ndarray,
    W: np.ndarray,
    A: np.ndarray | None,
    kernel: str,
    gammas: np.ndarray,
    nus: np.ndarray,
    rng: np.random.Generator,
) -> tuple[float, float]:
    """(gamma, nu) of least GCV over the grids.

    Cheap by design: on a seeded subsample of at most ``GCV_MAX_SAMPLES`` rows, with a
    Nystroem kernel of at most ``GCV_LANDMARKS`` landmarks (exact when the subsample
    is that small): one m x m eigendecomposition per bandwidth, O(m) per nu. nu is the
    per-row ridge (the system is K + n nu I), so it carries over to the full data.
    """
    n = X.shape[0]
    rows = pick_landmarks(n, GCV_MAX_SAMPLES, rng)
    Xs, Ws = X[rows], W[rows]
    lm = Xs[pick_landmarks(Xs.shape[0], GCV_LANDMARKS, rng)]
    best = (np.inf, float(gammas[0]), float(nus[0]))
    for g in gammas:
        system, _, _ = nystroem_system(Xs, lm, Ws, kernel, float(g))
        scores = system.gcv(Xs.shape[0] * nus, A)
        i = int(np.argmin(scores))
        if scores[i] < best[0]:
            best = (float(scores[i]), float(g), float(nus[i]))
    return best[1], best[2]


def check_kernel_state(model: Any) -> tuple[int, int]:
    """The loaded-state checks both kernel end models share: ``X_fit_`` (returned as
    its shape (n, p)), ``n_features_in_`` and ``gamma_``."""
    X = check_state_array(state_attr(model, "X_fit_"), "X_fit_", (None, None))
    n, p = X.shape
    if state_int(model, "n_features_in_", low=1) != p:
        raise ValueError(
            f"the fitted attribute n_features_in_ is {model.n_features_in_} but "
            f"X_fit_ has {p} columns."
        )
    if state_float(model, "gamma_") < 0:
        raise ValueError(
            f"the fitted attribute gamma_ must be >= 0; got {model.gamma_}."
        )
    return n, p
