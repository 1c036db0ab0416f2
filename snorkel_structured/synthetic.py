"""Synthetic label matrices drawn exactly from the finite noise model (the paper's setups)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from snorkel_structured._validation import (
    check_distribution,
    check_scalar,
    check_seed,
)
from snorkel_structured.noise.finite import (
    _check_abstain_rates,
    _check_theta,
    expected_sq_dist_by_label,
    sample_votes,
)
from snorkel_structured.spaces.finite import FiniteMetricSpace
from snorkel_structured.spaces.permutations import Permutations

__all__ = [
    "SyntheticData",
    "make_close_centers_data",
    "make_label_matrix",
    "make_ranking_data",
]


@dataclass(frozen=True)
class SyntheticData:
    """Votes with the truth that generated them.

    Attributes
    ----------
    L : ndarray of int64 of shape (n_samples, n_lfs)
        Label indices, -1 = abstain.
    Y : ndarray of int64 of shape (n_samples,)
        True label indices.
    space : FiniteMetricSpace
    theta : ndarray of shape (n_lfs,) or (n_lfs, r)
    prior : ndarray of shape (r,)
        P(Y = y) over the whole space (zero outside the support).
    expected_sq_dist : ndarray of shape (n_lfs,)
        The population E[d^2(lambda_a, Y)] under ``prior`` (what estimators recover).
    abstain : ndarray of shape (n_lfs,)
        Each LF's abstain rate.
    """

    L: np.ndarray
    Y: np.ndarray
    space: FiniteMetricSpace
    theta: np.ndarray
    prior: np.ndarray
    expected_sq_dist: np.ndarray
    abstain: np.ndarray

    @property
    def support(self) -> np.ndarray:
        """Indices of the labels with positive prior mass."""
        return np.flatnonzero(self.prior > 0)


def make_label_matrix(
    n_samples: int,
    *,
    space: FiniteMetricSpace,
    theta: Any,
    prior: Any,
    abstain: Any = 0.0,
    seed: Any = None,
) -> SyntheticData:
    """Draw true labels from ``prior`` and LF votes from exp(-theta d^2) / Z(y).

    Works for large spaces (e.g. Permutations(8)): only the rows of S for the labels in
    the prior's support are computed.

    Parameters
    ----------
    n_samples : int
    space : FiniteMetricSpace
    theta : array-like of shape (n_lfs,) or (n_lfs, r)
        Finite (NaN or inf raises a ValueError).
    prior : array-like of shape (r,)
        Probabilities over the labels of ``space`` (normalized here).
    abstain : float or array-like of shape (n_lfs,), default=0.0
        Abstain rates in [0, 1].
    seed : None, int or numpy.random.Generator

    Returns
    -------
    SyntheticData
    """
    n_samples = check_scalar(n_samples, "n_samples", kind="int", low=1)
    rng = check_seed(seed)
    r = len(space)
    p = check_distribution(
        prior,
        r,
        f"prior must be {r} non-negative numbers with a positive sum; got shape "
        f"{np.shape(prior)}.",
    )
    th = np.asarray(theta, dtype=np.float64)
    if th.ndim not in (1, 2) or (th.ndim == 2 and th.shape[1] != r):
        raise ValueError(
            f"theta must have shape (n_lfs,) or (n_lfs, {r}); got {th.shape}."
        )
    _check_theta(th)
    rates = np.broadcast_to(
        np.asarray(abstain, dtype=np.float64), (th.shape[0],)
    ).copy()
    _check_abstain_rates(rates)
    y_rng, vote_rng = rng.spawn(
        2
    )  # independent streams: votes never reuse y's uniforms
    Y = y_rng.choice(r, size=n_samples, p=p)
    # Only the support's rows of S are needed: large spaces never build the (r, r) matrix.
    support = np.flatnonzero(p > 0)
    L = sample_votes(space, th, Y, abstain=rates, seed=vote_rng)
    rows = space.squared_distance_rows(support)
    expected = (
        expected_sq_dist_by_label(rows, th if th.ndim == 1 else th[:, support])
        @ p[support]
    )
    return SyntheticData(L, Y.astype(np.int64), space, th, p, expected, rates)


def make_ranking_data(
    n_samples: int,
    *,
    n_items: int = 4,
    metric: str = "kendall_tau",
    theta: Any = (0.6, 0.99, 0.8),
    centers: Any = None,
    n_centers: int = 2,
    center_probs: Any = (0.2, 0.8),
    abstain: Any = 0.0,
    seed: Any = None,
) -> SyntheticData:
    """The paper's ranking setup: a prior on a few random centers of S_n, LFs from the model.

    Defaults reproduce the paper's synthetic ranking setup (its section 6,
    Experiments): S4 under Kendall tau, two random centers with
    prior [0.2, 0.8], theta = [0.6, 0.99, 0.8] (true E[d^2] 1.1863 / 0.6800 / 0.8621).

    Parameters
    ----------
    n_samples : int
    n_items : int, default=4
    metric : str, default="kendall_tau"
    theta : array-like of shape (n_lfs,) or (n_lfs, n_items!)
        Finite (NaN or inf raises a ValueError).
    centers : array-like of int, optional
        Label indices of the centers: distinct whole numbers in ``[0, n_items!)``;
        drawn at random (distinct) when omitted.
    n_centers : int, default=2
    center_probs : array-like of shape (n_centers,), default=(0.2, 0.8)
    abstain : float or array-like of shape (n_lfs,), default=0.0
    seed : None, int or numpy.random.Generator

    Returns
    -------
    SyntheticData

    Examples
    --------
    >>> from snorkel_structured.synthetic import make_ranking_data
    >>> data = make_ranking_data(1000, seed=0)
    >>> data.L.shape, data.support.size
    ((1000, 3), 2)
    """
    rng = check_seed(seed)
    space = Permutations(n_items, metric)
    center_rng, data_rng = rng.spawn(2)
    if centers is None:
        n_centers = check_scalar(
            n_centers, "n_centers", kind="int", low=1, high=len(space)
        )
        centers = center_rng.choice(len(space), size=n_centers, replace=False)
    centers = _check_centers(centers, len(space))
    probs = np.asarray(center_probs, dtype=np.float64)
    if probs.shape != centers.shape:
        raise ValueError(
            f"center_probs has {probs.size} entries but there are {centers.size} centers."
        )
    prior = np.zeros(len(space))
    np.add.at(prior, centers, probs)
    return make_label_matrix(
        n_samples, space=space, theta=theta, prior=prior, abstain=abstain, seed=data_rng
    )


def _check_centers(centers: Any, r: int) -> np.ndarray:
    """``centers`` as distinct int64 label indices in ``[0, r)``, or a ValueError."""
    hint = (
        f"give distinct label indices in [0, {r}) (e.g. space.encode(ordering)), or "
        "omit centers to draw n_centers at random."
    )
    c = np.asarray(centers)
    if c.ndim != 1 or c.size == 0 or c.dtype.kind not in "iuf":
        raise ValueError(
            f"centers must be a non-empty 1-D array of label indices; got shape "
            f"{c.shape}, dtype {c.dtype}; {hint}"
        )
    if c.dtype.kind == "f":
        bad = ~np.isfinite(c) | (c != np.round(c))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"centers[{i}] = {c[i].item()!r} is not a whole number; {hint}"
            )
    bad = (c < 0) | (c >= r)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"centers[{i}] = {c[i].item()!r} is out of range; {hint}")
    c = c.astype(np.int64)
    uniq, counts = np.unique(c, return_counts=True)
    if (counts > 1).any():
        raise ValueError(
            f"centers holds label {int(uniq[counts > 1][0])} more than once; {hint}"
        )
    return c


def make_close_centers_data(n_samples: int, *, seed: Any = None) -> SyntheticData:
    """Three S4 (Kendall) centers, two of them one swap apart: a hard support to recover.

    Prior 0.5 / 0.2 / 0.3 on centers c0, c1 (Kendall distance 1 from c0) and c2 (at
    least 3 from c0), four LFs with theta ~ U(0.3, 0.45), all drawn from ``seed``. A
    greedy support search sees the two close centers as one broad center.

    Parameters
    ----------
    n_samples : int
    seed : None, int or numpy.random.Generator

    Returns
    -------
    SyntheticData
        Its ``support`` holds the three centers.
    """
    rng = check_seed(seed)
    D = Permutations(4).distance_matrix
    c0 = int(rng.integers(24))
    c1 = int(rng.choice(np.flatnonzero(D[c0] == 1)))
    c2 = int(rng.choice(np.flatnonzero(D[c0] >= 3)))
    return make_ranking_data(
        n_samples,
        theta=rng.uniform(0.3, 0.45, 4),
        centers=[c0, c1, c2],
        center_probs=[0.5, 0.2, 0.3],
        seed=rng,
    )
