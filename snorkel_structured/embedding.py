"""Isometric pseudo-Euclidean embedding of a finite metric space.

With S the matrix of squared distances and J = I - 11^T / r, the Gram matrix
G = -1/2 J S J = U diag(c) U^T. Keeping the eigenvalues with |c| > tol * max|c| and
setting X = U |c|^(1/2), s = sign(c) gives d^2(y_i, y_j) = sum_k s_k (X_ik - X_jk)^2
exactly (Goldfarb 1985). Algorithm 1 of the paper squares the distances twice; here S
is embedded once.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.linalg
import scipy.sparse.linalg as spla
from sklearn.base import BaseEstimator

from snorkel_structured._validation import (
    check_distance_matrix,
    check_is_fitted,
    check_scalar,
    check_seed,
)
from snorkel_structured.spaces.finite import FiniteMetricSpace

__all__ = ["PseudoEuclideanEmbedding", "pseudo_sq_dist"]

# Above this many labels a truncated embedding uses an iterative eigensolver.
_DENSE_LIMIT = 1500


def pseudo_sq_dist(u: np.ndarray, v: np.ndarray, signs: np.ndarray) -> np.ndarray:
    """Pseudo-Euclidean squared distance ``sum_k s_k (u_k - v_k)^2`` over the last axis."""
    diff = np.asarray(u) - np.asarray(v)
    return np.einsum("...k,k->...", diff * diff, signs)


class PseudoEuclideanEmbedding(BaseEstimator):
    """Embed a finite (semi)metric space isometrically into R^(d+, d-).

    Parameters
    ----------
    dim : int, optional
        Keep only the ``dim`` eigenpairs of largest |eigenvalue| (a truncated, no longer
        exact, embedding). Default: every eigenvalue above the tolerance (exact).
    tol : float, default=1e-9
        Relative eigenvalue cutoff: eigenvalues with ``|c| <= tol * max|c|`` are zero.
    seed : None, int or numpy.random.Generator, default=None
        Starting vector of the iterative eigensolver (large truncated problems only).

    Attributes
    ----------
    coords_ : ndarray of shape (r, d_pos + d_neg)
        Coordinates; the first ``d_pos`` count positively, the rest negatively.
    signature_ : tuple of int
        ``(d_pos, d_neg)``.
    signs_ : ndarray of shape (d_pos + d_neg,)
        +1 for the first ``d_pos`` coordinates, -1 after.
    eigenvalues_ : ndarray of shape (d_pos + d_neg,)
        The kept eigenvalues of G, positive ones first, each group by decreasing |c|.
    n_labels_ : int
        Number of embedded labels r.

    Examples
    --------
    >>> import snorkel_structured as ss
    >>> emb = ss.PseudoEuclideanEmbedding().fit(ss.Permutations(4, "kendall_tau"))
    >>> emb.signature_
    (6, 11)
    >>> bool(emb.isometry_error() < 1e-9)
    True
    """

    def __init__(
        self, dim: int | None = None, *, tol: float = 1e-9, seed: Any = None
    ) -> None:
        self.dim = dim
        self.tol = tol
        self.seed = seed

    def fit(self, space_or_sq_dists: Any) -> PseudoEuclideanEmbedding:
        """Embed a finite space, or an (r, r) matrix of *squared* distances.

        Parameters
        ----------
        space_or_sq_dists : FiniteMetricSpace or array-like of shape (r, r)
            A real matrix (complex input is refused).

        Returns
        -------
        self : PseudoEuclideanEmbedding
        """
        tol = check_scalar(self.tol, "tol", low=0.0, high=1.0, high_inclusive=False)
        if isinstance(space_or_sq_dists, FiniteMetricSpace):
            S = space_or_sq_dists.squared_distance_matrix
        else:
            try:
                is_complex = np.iscomplexobj(space_or_sq_dists)
            except (TypeError, ValueError):  # ragged or odd input: reported below
                is_complex = False
            if is_complex:
                raise ValueError(
                    "squared distance matrix S must be real; got a complex array "
                    f"(dtype {np.asarray(space_or_sq_dists).dtype}). Squared "
                    "distances are real numbers: pass S.real if the imaginary parts "
                    "are rounding noise."
                )
            S = check_distance_matrix(
                space_or_sq_dists, "squared distance matrix S", squared=True
            )
        r = S.shape[0]
        dim = None
        if self.dim is not None:
            dim = check_scalar(self.dim, "dim", kind="int", low=1)
            dim = min(dim, r)

        if dim is not None and r > _DENSE_LIMIT and dim < r // 4:
            vals, vecs = self._iterative_eigh(S, dim, check_seed(self.seed))
        else:
            G = self._gram(S)
            low_rank = None
            if r > _DENSE_LIMIT:
                low_rank = self._low_rank_eigh(G, check_seed(self.seed), tol)
            if low_rank is not None:
                vals, vecs = low_rank
            else:
                vals, vecs = scipy.linalg.eigh(G, overwrite_a=True, check_finite=False)
            order = np.argsort(-np.abs(vals), kind="stable")
            vals, vecs = vals[order], vecs[:, order]
            if dim is not None:
                vals, vecs = vals[:dim], vecs[:, :dim]

        scale = np.abs(vals).max() if vals.size else 0.0
        keep = np.abs(vals) > tol * scale if scale > 0 else np.zeros(len(vals), bool)
        vals, vecs = vals[keep], vecs[:, keep]
        # Positive eigenvalues first, each group by decreasing |c|.
        order = np.lexsort((-np.abs(vals), vals < 0))
        vals, vecs = vals[order], vecs[:, order]
        # Fix each eigenvector's sign (largest-magnitude entry positive): repeatable.
        flip = np.sign(vecs[np.abs(vecs).argmax(axis=0), np.arange(vecs.shape[1])])
        vecs = vecs * np.where(flip == 0, 1.0, flip)

        self.coords_ = vecs * np.sqrt(np.abs(vals))
        self.eigenvalues_ = vals
        n_pos = int((vals > 0).sum())
        self.signature_ = (n_pos, int(len(vals) - n_pos))
        self.signs_ = np.where(vals > 0, 1.0, -1.0)
        self.n_labels_ = r
        self._S = S
        return self

    @staticmethod
    def _gram(S: np.ndarray) -> np.ndarray:
        """-1/2 J S J without forming J (double centering)."""
        row = S.mean(axis=1)
        G = S - row[:, None] - row[None, :] + row.mean()
        G *= -0.5
        return G

    @staticmethod
    def _low_rank_eigh(
        G: np.ndarray, rng: np.random.Generator, tol: float
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """Exact eigenpairs of a low-rank G by a verified randomized range finder.

        Doubles the sketch size until ``G = Q Q^T G`` holds to ``tol`` (checked, not
        assumed); returns None when the rank is too high for this to pay off.
        """
        r = G.shape[0]
        scale = float(np.abs(G).max())
        k = 64
        while k <= r // 8:
            Q, _ = np.linalg.qr(G @ rng.standard_normal((r, k)))
            B = Q.T @ G
            if np.abs(G - Q @ B).max() <= tol * scale:
                w, V = np.linalg.eigh(B @ Q)
                return w, Q @ V
            k *= 2
        return None

    @staticmethod
    def _iterative_eigh(
        S: np.ndarray, dim: int, rng: np.random.Generator
    ) -> tuple[np.ndarray, np.ndarray]:
        r = S.shape[0]

        def matvec(x: np.ndarray) -> np.ndarray:
            x = np.asarray(x).reshape(r, -1)
            xc = x - x.mean(axis=0)
            y = S @ xc
            return -0.5 * (y - y.mean(axis=0))

        op = spla.LinearOperator((r, r), matvec=matvec, matmat=matvec, dtype=np.float64)
        v0 = rng.standard_normal(r)
        vals, vecs = spla.eigsh(op, k=dim, which="LM", v0=v0)
        order = np.argsort(-np.abs(vals), kind="stable")
        return vals[order], vecs[:, order]

    def transform(self, indices: Any) -> np.ndarray:
        """Coordinates of label indices, shape ``indices.shape + (d,)``."""
        check_is_fitted(self, "coords_")
        idx = np.asarray(indices)
        if idx.dtype.kind not in "iu" or (
            idx.size and (idx.min() < 0 or idx.max() >= self.n_labels_)
        ):
            raise ValueError(
                f"indices must be integers in [0, {self.n_labels_}); got "
                f"{idx.dtype} values in [{idx.min() if idx.size else ''}, "
                f"{idx.max() if idx.size else ''}]."
            )
        return self.coords_[idx]

    def sq_dist(self, u: Any, v: Any) -> np.ndarray:
        """Pseudo-Euclidean squared distance between coordinate arrays (last axis)."""
        check_is_fitted(self, "coords_")
        return pseudo_sq_dist(u, v, self.signs_)

    def embedded_sq_dists(self, rows: Any = None) -> np.ndarray:
        """Squared distances the embedding reproduces, for ``rows`` against all labels."""
        check_is_fitted(self, "coords_")
        X = self.coords_
        Xr = X if rows is None else X[np.asarray(rows)]
        sq = (Xr * Xr) @ self.signs_
        full = (X * X) @ self.signs_
        return sq[:, None] + full[None, :] - 2.0 * (Xr * self.signs_) @ X.T

    def isometry_error(self) -> float:
        """Largest |S_ij - embedded d^2_ij| relative to max S_ij (0 for an exact embedding)."""
        check_is_fitted(self, "coords_")
        S = self._S
        scale = max(float(S.max()), np.finfo(float).tiny)
        r = S.shape[0]
        step = max(1, 4_000_000 // r)
        worst = 0.0
        for start in range(0, r, step):  # bounded memory for large spaces
            rows = np.arange(start, min(r, start + step))
            worst = max(
                worst, float(np.abs(self.embedded_sq_dists(rows) - S[rows]).max())
            )
        return worst / scale
