"""Additive sufficient statistics of manifold-valued LF outputs: per-pair sums."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from snorkel_structured._validation import MAX_DISTANCE, check_manifold_outputs
from snorkel_structured.spaces.manifolds import Euclidean, Hyperbolic, Sphere

# A sphere pair's mean cos d enters a log-scale fit (the triplet estimate, the
# dependency test) only this many standard errors above 0: closer to 0 its log is not
# estimated, and one such pair of an LF of junk votes pulled every fit it entered.
MIN_MEAN_COS_SE = 2.0

__all__ = ["LabeledManifoldStats", "ManifoldStats"]

_CHUNK = (
    1 << 16
)  # rows per chunk: bounds the temporary (chunk, n_pairs, ambient) arrays


def _check_euclidean_scale(X: np.ndarray, space: Any, name: str) -> None:
    """Refuse Euclidean points with a coordinate beyond ``MAX_DISTANCE`` (1e50).

    The statistics sum d^4 over rows: from coordinates about 1e77 on these overflow
    to inf (the weights then change silently, and past 1e154 the estimate is NaN).
    The model is scale-equivariant, so rescaled targets lose nothing. (Sphere and
    hyperbolic points are bounded by the space's own checks.)
    """
    if not isinstance(space, Euclidean) or X.size == 0:
        return
    with np.errstate(invalid="ignore"):
        largest = np.nanmax(np.abs(X), initial=0.0)
    if largest > MAX_DISTANCE:
        raise ValueError(
            f"{name} holds a Euclidean coordinate of absolute value {largest:.3g}, "
            f"above {MAX_DISTANCE:g}: the model's statistics (sums of d^4 over rows) "
            "would overflow. The model is scale-equivariant: divide the targets by "
            f"a common factor (e.g. {largest:.1g}) before fitting, and multiply the "
            "predictions back by it (expected_sq_dist_ by its square)."
        )


def _plug_in_var(mean_sq: np.ndarray, mean: np.ndarray) -> np.ndarray:
    """``E[x^2] - E[x]^2`` from additive sums, clipped at 0 (NaN stays NaN).

    The sums are additive (chunks, Dask partitions), so a centred two-pass form is not
    available. The difference cancels when the spread is tiny against the mean: for
    LFs a few metres apart on the Earth (sigma2 ~ 1e-9) cos d is 1 - 1e-9 and the true
    variance (~1e-18) is below the rounding of ``E[cos^2 d]`` (~1e-16), so the
    difference comes out slightly negative, and its square root (a standard error)
    NaN, which dropped the best LFs' pairs as "not above 0". The variance is then 0 to
    working precision.
    """
    return np.maximum(mean_sq - mean**2, 0.0)


def pair_invariant_and_sq_dist(space: Any, a: np.ndarray, b: np.ndarray):
    """Invariant (cosh d, cos d or d^2) and d^2 between points ``a`` and ``b``."""
    if isinstance(space, Hyperbolic):
        q, d = space._cosh_and_dist(a, b)  # q = |a - b|_L^2 = 2 cosh d - 2
        return 1.0 + 0.5 * q, d * d
    if isinstance(space, Sphere):
        diff, summ = a - b, a + b
        dn2 = np.einsum("...i,...i->...", diff, diff)
        d = 2.0 * np.arctan2(np.sqrt(dn2), np.linalg.norm(summ, axis=-1))
        return 1.0 - 0.5 * dn2, d * d
    diff = a - b
    sq = np.einsum("...i,...i->...", diff, diff)
    return sq, sq


@dataclass(frozen=True, eq=False)
class ManifoldStats:
    """Per-pair sums over rows where both labeling functions voted.

    Build with :meth:`from_outputs`; add chunks with ``+`` (``sum(chunks)`` works).

    Attributes
    ----------
    space : Euclidean, Sphere or Hyperbolic
    n_samples : int
        Rows seen.
    vote_count : ndarray of shape (n_lfs,)
        Rows where each LF voted.
    pair_count : ndarray of shape (n_lfs, n_lfs)
        Rows where both LFs voted (diagonal = ``vote_count``).
    pair_invariant_sum : ndarray of shape (n_lfs, n_lfs)
        Sum of ``cosh d`` (hyperbolic), ``cos d`` (sphere) or ``d^2`` (Euclidean).
    pair_sq_dist_sum, pair_sq_dist_sq_sum : ndarray of shape (n_lfs, n_lfs)
        Sums of ``d^2`` and of ``d^4`` (for the variance of the mean of ``d^2``).
    pair_invariant_sq_sum : ndarray of shape (n_lfs, n_lfs)
        Sum of the squared invariant (for the variance of its mean).

    Notes
    -----
    With ``row_weights`` (see :meth:`from_outputs`) every sum is weighted by
    ``w_ia * w_ib`` and ``pair_count`` holds the summed weights (floats): the robust
    label model uses this to compute moments of the inlier component only.
    """

    space: Any
    n_samples: int
    vote_count: np.ndarray
    pair_count: np.ndarray
    pair_invariant_sum: np.ndarray
    pair_sq_dist_sum: np.ndarray
    pair_sq_dist_sq_sum: np.ndarray
    pair_invariant_sq_sum: np.ndarray

    def __post_init__(self) -> None:
        for name in (
            "vote_count",
            "pair_count",
            "pair_invariant_sum",
            "pair_sq_dist_sum",
            "pair_sq_dist_sq_sum",
            "pair_invariant_sq_sum",
        ):
            getattr(self, name).setflags(write=False)

    @classmethod
    def from_outputs(
        cls,
        X: Any,
        space: Any,
        *,
        atol: float = 1e-6,
        row_weights: Any = None,
    ) -> ManifoldStats:
        """Statistics of LF outputs ``X`` of shape (n_samples, n_lfs, ambient_dim).

        A row of NaN is an abstain. Points within ``atol`` of the manifold are projected;
        others raise ``ValueError`` (see ``check_manifold_outputs``).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_lfs, ambient_dim)
        space : Euclidean, Sphere or Hyperbolic
        atol : float, default=1e-6
        row_weights : array-like of shape (n_samples, n_lfs), optional
            Non-negative weight of each vote (e.g. the probability that it is an
            inlier); a pair's row enters with weight ``w_ia * w_ib``. Default 1.
        """
        X = check_manifold_outputs(X, space, name="X", atol=atol)
        if row_weights is not None:
            row_weights = np.asarray(row_weights, dtype=np.float64)
            if row_weights.shape != X.shape[:2] or not np.all(
                np.isfinite(row_weights) & (row_weights >= 0)
            ):
                raise ValueError(
                    f"row_weights must be finite, non-negative, of shape {X.shape[:2]}; "
                    f"got shape {row_weights.shape}."
                )
        return cls._from_checked(X, space, row_weights)

    @classmethod
    def _from_checked(
        cls,
        X: np.ndarray,
        space: Any,
        row_weights: np.ndarray | None = None,
        *,
        name: str = "X",
    ) -> ManifoldStats:
        _check_euclidean_scale(X, space, name)
        n, m, _ = X.shape
        voted = ~np.isnan(X[..., 0])
        ia, ib = np.triu_indices(m, 1)
        cnt = np.zeros(len(ia))
        s_inv, s_d2, s_d4 = np.zeros(len(ia)), np.zeros(len(ia)), np.zeros(len(ia))
        s_inv2 = np.zeros(len(ia))
        for start in range(0, n, _CHUNK):
            Xc, vc = X[start : start + _CHUNK], voted[start : start + _CHUNK]
            both = (vc[:, ia] & vc[:, ib]).astype(np.float64)
            if row_weights is not None:
                wc = row_weights[start : start + _CHUNK]
                both = both * wc[:, ia] * wc[:, ib]
            with np.errstate(invalid="ignore"):
                inv, d2 = pair_invariant_and_sq_dist(space, Xc[:, ia], Xc[:, ib])
            inv, d2 = np.where(both > 0, inv, 0.0), np.where(both > 0, d2, 0.0)
            cnt += both.sum(axis=0)
            s_inv += np.einsum("ij,ij->j", both, inv)
            s_inv2 += np.einsum("ij,ij,ij->j", both, inv, inv)
            s_d2 += np.einsum("ij,ij->j", both, d2)
            s_d4 += np.einsum("ij,ij,ij->j", both, d2, d2)

        def sym(v, diag=None):
            M = np.zeros((m, m))
            M[ia, ib] = v
            M[ib, ia] = v
            if diag is not None:
                M[np.arange(m), np.arange(m)] = diag
            return M

        if row_weights is None:
            vote_count = voted.sum(axis=0).astype(np.int64)
            pair_count = sym(np.rint(cnt), vote_count).astype(np.int64)
        else:
            vote_count = np.where(voted, row_weights, 0.0).sum(axis=0)
            pair_count = sym(cnt, vote_count)
        return cls(
            space=space,
            n_samples=int(n),
            vote_count=vote_count,
            pair_count=pair_count,
            pair_invariant_sum=sym(s_inv),
            pair_sq_dist_sum=sym(s_d2),
            pair_sq_dist_sq_sum=sym(s_d4),
            pair_invariant_sq_sum=sym(s_inv2),
        )

    @property
    def n_lfs(self) -> int:
        """Number of labeling functions."""
        return int(self.vote_count.shape[0])

    def _mean(self, total: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            out = np.where(self.pair_count > 0, total / self.pair_count, np.nan)
        np.fill_diagonal(out, np.nan)
        return out

    @property
    def pair_invariant_mean(self) -> np.ndarray:
        """Mean invariant per pair, (n_lfs, n_lfs); NaN on the diagonal / no overlap."""
        return self._mean(self.pair_invariant_sum)

    @property
    def pair_sq_dist_mean(self) -> np.ndarray:
        """Mean squared distance per pair, (n_lfs, n_lfs); NaN where undefined."""
        return self._mean(self.pair_sq_dist_sum)

    @property
    def pair_sq_dist_var(self) -> np.ndarray:
        """Variance of d^2 per pair (plug-in, at least 0), (n_lfs, n_lfs); NaN where
        undefined."""
        return _plug_in_var(
            self._mean(self.pair_sq_dist_sq_sum), self.pair_sq_dist_mean
        )

    @property
    def pair_invariant_var(self) -> np.ndarray:
        """Variance of the invariant per pair (plug-in, at least 0), (n_lfs, n_lfs)."""
        return _plug_in_var(
            self._mean(self.pair_invariant_sq_sum), self.pair_invariant_mean
        )

    def __add__(self, other: object) -> ManifoldStats:
        if not isinstance(other, ManifoldStats):
            return NotImplemented
        if other.space != self.space or other.n_lfs != self.n_lfs:
            raise ValueError(
                "Cannot add ManifoldStats of different spaces or numbers of LFs: "
                f"{self.space!r} with {self.n_lfs} LFs vs {other.space!r} with "
                f"{other.n_lfs} LFs."
            )
        return ManifoldStats(
            space=self.space,
            n_samples=self.n_samples + other.n_samples,
            vote_count=self.vote_count + other.vote_count,
            pair_count=self.pair_count + other.pair_count,
            pair_invariant_sum=self.pair_invariant_sum + other.pair_invariant_sum,
            pair_sq_dist_sum=self.pair_sq_dist_sum + other.pair_sq_dist_sum,
            pair_sq_dist_sq_sum=self.pair_sq_dist_sq_sum + other.pair_sq_dist_sq_sum,
            pair_invariant_sq_sum=self.pair_invariant_sq_sum
            + other.pair_invariant_sq_sum,
        )

    def __radd__(self, other: object) -> ManifoldStats:
        if isinstance(other, int) and other == 0:
            return self
        return NotImplemented


@dataclass(frozen=True, eq=False)
class LabeledManifoldStats:
    """Per-LF sums over labeled rows of the invariant and ``d^2`` to the true label.

    Build with :meth:`from_outputs`; add with ``+``. These enter the triplet and pair
    estimators as one extra equation per LF (see ``estimators.triplet``).

    Attributes
    ----------
    space : Euclidean, Sphere or Hyperbolic
    n_samples : int
        Labeled rows seen.
    count : ndarray of shape (n_lfs,)
        Labeled rows where each LF voted (summed weights with ``row_weights``).
    invariant_sum, invariant_sq_sum : ndarray of shape (n_lfs,)
        Sums of the invariant (``cosh d``, ``cos d`` or ``d^2``) between the LF's output
        and the label, and of its square.
    sq_dist_sum, sq_dist_sq_sum : ndarray of shape (n_lfs,)
        Sums of ``d^2`` and ``d^4`` to the label.
    """

    space: Any
    n_samples: int
    count: np.ndarray
    invariant_sum: np.ndarray
    invariant_sq_sum: np.ndarray
    sq_dist_sum: np.ndarray
    sq_dist_sq_sum: np.ndarray

    def __post_init__(self) -> None:
        for name in (
            "count",
            "invariant_sum",
            "invariant_sq_sum",
            "sq_dist_sum",
            "sq_dist_sq_sum",
        ):
            getattr(self, name).setflags(write=False)

    @classmethod
    def _from_checked(
        cls,
        X: np.ndarray,
        Y: np.ndarray,
        space: Any,
        row_weights: np.ndarray | None = None,
    ) -> LabeledManifoldStats:
        """X (n, m, D) checked LF outputs, Y (n, D) checked labels."""
        _check_euclidean_scale(X, space, "X_dev")
        _check_euclidean_scale(Y, space, "Y_dev")
        voted = ~np.isnan(X[..., 0])
        w = voted.astype(np.float64)
        if row_weights is not None:
            w = w * row_weights
        with np.errstate(invalid="ignore"):
            inv, d2 = pair_invariant_and_sq_dist(space, X, Y[:, None, :])
        inv, d2 = np.where(w > 0, inv, 0.0), np.where(w > 0, d2, 0.0)
        return cls(
            space=space,
            n_samples=int(X.shape[0]),
            count=w.sum(axis=0),
            invariant_sum=(w * inv).sum(axis=0),
            invariant_sq_sum=(w * inv * inv).sum(axis=0),
            sq_dist_sum=(w * d2).sum(axis=0),
            sq_dist_sq_sum=(w * d2 * d2).sum(axis=0),
        )

    @property
    def n_lfs(self) -> int:
        """Number of labeling functions."""
        return int(self.count.shape[0])

    def _mean(self, total: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self.count > 0, total / self.count, np.nan)

    @property
    def invariant_mean(self) -> np.ndarray:
        """Mean invariant to the label per LF, (n_lfs,); NaN without labeled votes."""
        return self._mean(self.invariant_sum)

    @property
    def invariant_var(self) -> np.ndarray:
        """Plug-in variance of the invariant per LF (at least 0), (n_lfs,)."""
        return _plug_in_var(self._mean(self.invariant_sq_sum), self.invariant_mean)

    @property
    def sq_dist_mean(self) -> np.ndarray:
        """Mean squared distance to the label per LF, (n_lfs,)."""
        return self._mean(self.sq_dist_sum)

    @property
    def sq_dist_var(self) -> np.ndarray:
        """Plug-in variance of ``d^2`` to the label per LF (at least 0), (n_lfs,)."""
        return _plug_in_var(self._mean(self.sq_dist_sq_sum), self.sq_dist_mean)

    def __add__(self, other: object) -> LabeledManifoldStats:
        if not isinstance(other, LabeledManifoldStats):
            return NotImplemented
        if other.space != self.space or other.n_lfs != self.n_lfs:
            raise ValueError(
                "Cannot add LabeledManifoldStats of different spaces or numbers of LFs."
            )
        return LabeledManifoldStats(
            space=self.space,
            n_samples=self.n_samples + other.n_samples,
            count=self.count + other.count,
            invariant_sum=self.invariant_sum + other.invariant_sum,
            invariant_sq_sum=self.invariant_sq_sum + other.invariant_sq_sum,
            sq_dist_sum=self.sq_dist_sum + other.sq_dist_sum,
            sq_dist_sq_sum=self.sq_dist_sq_sum + other.sq_dist_sq_sum,
        )

    def __radd__(self, other: object) -> LabeledManifoldStats:
        if isinstance(other, int) and other == 0:
            return self
        return NotImplemented
