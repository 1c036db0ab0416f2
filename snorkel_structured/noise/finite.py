"""The finite noise model P(lambda_a = v | Y = y) = exp(-theta_a S[y, v]) / Z_a(theta_a, y).

S is the squared-distance matrix of a finite space. The partition function depends on y
unless the space is homogeneous (permutations are, trees are not), so it is never
dropped. The paper calls this model "Mallows"; it is not (Mallows uses d, not d^2).

``theta`` may be one value per LF, shape (m,), or one per LF and true label, shape
(m, r) (a label-dependent model, as Snorkel's class-conditional accuracies).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.special import logsumexp

from snorkel_structured._validation import ABSTAIN, check_scalar, check_seed
from snorkel_structured.spaces.finite import FiniteMetricSpace

__all__ = [
    "FiniteNoiseModel",
    "expected_sq_dist",
    "expected_sq_dist_by_label",
    "log_conditional_probs",
    "log_posterior",
    "sample_votes",
    "theta_cap",
    "theta_from_expected_sq_dist",
]

# theta times the smallest positive dissimilarity stays below this: at the cap an LF
# votes a nearest wrong label e^-50 times as often as the right one, i.e. never.
THETA_CAP = 50.0


def dissimilarity_unit(sq_dists: np.ndarray, power: float = 2.0) -> float:
    """The smallest positive d^p among ``sq_dists`` (squared distances); 1 if none."""
    sq = np.asarray(sq_dists, dtype=np.float64)
    positive = sq[sq > 0]
    return float(positive.min()) ** (power / 2.0) if positive.size else 1.0


def theta_cap(sq_dists: np.ndarray, power: float = 2.0) -> float:
    """The largest theta of exp(-theta d^p): ``THETA_CAP`` / (smallest positive d^p).

    A cap in units of the space's own distances, so that scaling every distance by c
    scales the fitted theta by c^-p and changes nothing else (a fixed cap would turn
    good LFs into perfect ones on a space measured in small units).

    Parameters
    ----------
    sq_dists : ndarray
        Squared distances (the matrix, or some of its rows).
    power : float, default=2.0
        The p of d^p.
    """
    return THETA_CAP / dissimilarity_unit(sq_dists, power)


def _theta_by_label(theta: np.ndarray, r: int) -> np.ndarray:
    theta = np.asarray(theta, dtype=np.float64)
    return (
        np.broadcast_to(theta[:, None], (theta.shape[0], r))
        if theta.ndim == 1
        else theta
    )


def log_conditional_probs(S: np.ndarray, theta: np.ndarray) -> np.ndarray:
    """log P(lambda_a = v | Y = y) as an array of shape (m, r, r) indexed [a, y, v].

    Parameters
    ----------
    S : ndarray of shape (r, r)
        Squared distances.
    theta : ndarray of shape (m,) or (m, r)
        Canonical parameters, per LF or per LF and true label.
    """
    th = _theta_by_label(theta, S.shape[0])
    logits = -th[:, :, None] * S[None, :, :]
    return logits - logsumexp(logits, axis=2, keepdims=True)


def log_posterior(
    L: np.ndarray, log_cond: np.ndarray, log_prior: np.ndarray
) -> np.ndarray:
    """log P(Y = y | votes) for each row of ``L``: shape (n, r).

    P(Y = y | lambda) is proportional to prior_y prod_a P(lambda_a | y) over the LFs that
    voted; abstains contribute nothing. ``log_prior`` may hold -inf outside the support.

    Parameters
    ----------
    L : ndarray of int of shape (n, m)
        Validated votes, -1 = abstain (e.g. the unique patterns of a VoteStats).
    log_cond : ndarray of shape (m, r, r)
        log P(lambda_a = v | Y = y) indexed [a, y, v] (see :func:`log_conditional_probs`).
    log_prior : ndarray of shape (r,)
    """
    n, m = L.shape
    out = np.broadcast_to(
        np.asarray(log_prior, dtype=np.float64), (n, log_cond.shape[1])
    ).copy()
    for a in range(m):  # one vectorized gather per LF
        voted = L[:, a] != ABSTAIN
        out[voted] += log_cond[a][:, L[voted, a]].T
    all_neg_inf = np.isneginf(out).all(axis=1)
    if (
        all_neg_inf.any()
    ):  # votes impossible under every supported label: fall back to prior
        out[all_neg_inf] = log_prior
    return out - logsumexp(out, axis=1, keepdims=True)


def expected_sq_dist_by_label(S: np.ndarray, theta: np.ndarray) -> np.ndarray:
    """E[d^2(lambda_a, y) | Y = y], shape (m, r)."""
    logp = log_conditional_probs(S, theta)
    return np.einsum("ayv,yv->ay", np.exp(logp), S)


def _prior_weights(prior: Any, r: int) -> np.ndarray:
    """``prior`` over the r labels as probabilities (uniform when None): finite,
    non-negative, of positive sum, normalized; a ValueError otherwise."""
    if prior is None:
        return np.full(r, 1.0 / r)
    w = np.asarray(prior, dtype=np.float64)
    if w.shape != (r,):
        raise ValueError(f"prior must have shape ({r},); got {w.shape}.")
    if not (np.isfinite(w).all() and (w >= 0).all() and w.sum() > 0):
        raise ValueError(
            "prior must hold finite, non-negative weights with a positive sum (they "
            f"are normalized); got {w.tolist() if r <= 10 else w}."
        )
    return w / w.sum()


def expected_sq_dist(S: np.ndarray, theta: np.ndarray, prior: np.ndarray) -> np.ndarray:
    """E[d^2(lambda_a, Y)] under the prior, shape (m,)."""
    return expected_sq_dist_by_label(S, theta) @ np.asarray(prior, dtype=np.float64)


def _moments(
    S: np.ndarray, theta: np.ndarray, weights: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Mean and variance of d^2 under exp(-theta S[y, .]) for each (target, label)."""
    # theta: (t,), weights over labels: (t, r) -> mean/var per target, weighted over y.
    logits = -theta[:, None, None] * S[None, :, :]
    p = np.exp(logits - logsumexp(logits, axis=2, keepdims=True))
    m1 = np.einsum("tyv,yv->ty", p, S)
    m2 = np.einsum("tyv,yv->ty", p, S * S)
    return (m1 * weights).sum(1), ((m2 - m1 * m1) * weights).sum(1)


def theta_from_expected_sq_dist(
    S: np.ndarray,
    expected: Any,
    prior: Any = None,
    *,
    theta_min: float = 0.0,
    theta_max: float | None = None,
    xtol: float = 1e-12,
    max_iter: int = 200,
) -> np.ndarray:
    """Invert theta -> E[d^2] for each target (a bracketed, safeguarded Newton solve).

    E[d^2] is strictly decreasing in theta (its derivative is -Var[d^2]), so each target
    has one root. Targets outside the range reached on ``[theta_min, theta_max]`` are
    clipped to the nearer end: an estimate above the uniform mean (theta = 0) means a
    labeling function no better than random.

    Parameters
    ----------
    S : ndarray of shape (r, r)
        Squared distances.
    expected : array-like of shape (m,) or (m, r)
        Target E[d^2]; with shape (m, r) one target per LF and true label (the
        label-dependent model), each solved against its own row of S.
    prior : array-like of shape (r,), optional
        Weights over the true label for shape-(m,) targets; default uniform.
    theta_min, theta_max : float, optional
        The search range; ``theta_max`` defaults to :func:`theta_cap` of ``S``.
    xtol : float, default=1e-12
        Tolerance on theta, in units of 1 / (smallest positive squared distance), so
        that scaling the distances scales the solution and nothing else.
    max_iter : int, default=200

    Returns
    -------
    theta : ndarray of the shape of ``expected``
    """
    S = np.asarray(S, dtype=np.float64)
    if theta_max is None:
        theta_max = theta_cap(S)
    r = S.shape[0]
    target = np.asarray(expected, dtype=np.float64)
    if target.ndim == 2:
        if target.shape[1] != r:
            raise ValueError(f"expected must have shape (m, {r}); got {target.shape}.")
        weights = np.repeat(np.eye(r)[None], target.shape[0], axis=0).reshape(-1, r)
        flat = target.reshape(-1)
    else:
        w = _prior_weights(prior, r)
        flat = target.reshape(-1)
        weights = np.broadcast_to(w, (flat.size, r))
    if not np.isfinite(flat).all():
        raise ValueError("expected must be finite; got NaN or inf.")
    # xtol is relative to theta's own unit, 1 / (smallest positive d^2): an absolute
    # tolerance stopped at once on spaces measured in large units (theta ~ 1e-13).
    unit = 1.0 / dissimilarity_unit(S)
    lo = np.full(flat.size, float(theta_min))
    hi = np.full(flat.size, float(theta_max))
    f_lo, _ = _moments(S, lo, weights)
    f_hi, _ = _moments(S, hi, weights)
    theta = np.where(flat >= f_lo, lo, np.where(flat <= f_hi, hi, np.nan))
    active = np.isnan(theta)
    x = np.where(active, 0.5 * (lo + hi), theta)
    for _ in range(max_iter):  # vectorized over all targets still unsolved
        if not active.any():
            break
        f, var = _moments(S, x[active], weights[active])
        g = f - flat[active]  # decreasing in theta
        a_lo, a_hi = lo[active], hi[active]
        a_lo = np.where(g > 0, x[active], a_lo)
        a_hi = np.where(g <= 0, x[active], a_hi)
        with np.errstate(over="ignore"):  # an infinite step falls back to bisection
            newton = x[active] + g / np.maximum(var, 1e-300)
        inside = (newton > a_lo) & (newton < a_hi)
        nxt = np.where(inside, newton, 0.5 * (a_lo + a_hi))
        done = (np.abs(nxt - x[active]) <= xtol * (unit + np.abs(nxt))) | (
            a_hi - a_lo <= xtol * unit
        )
        lo[active], hi[active], x[active] = a_lo, a_hi, nxt
        idx = np.flatnonzero(active)
        active[idx[done]] = False
    return x.reshape(target.shape)


def _check_theta(theta: np.ndarray, name: str = "theta") -> None:
    """Raise a ValueError naming the first NaN or infinite entry of ``theta``."""
    bad = ~np.isfinite(theta)
    if bad.any():
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        raise ValueError(
            f"{name} must be finite; got {theta[where].item()!r} at index "
            f"{where[0] if len(where) == 1 else where}. For a near-perfect LF pass a "
            "large finite theta (e.g. 50 / the smallest positive squared distance, "
            "theta_cap(S)), not inf."
        )


def _check_abstain_rates(rates: np.ndarray, name: str = "abstain") -> None:
    """Raise a ValueError unless every abstain rate is a number in [0, 1] (not NaN)."""
    bad = ~((rates >= 0) & (rates <= 1))  # NaN fails both comparisons
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"{name} rates must be in [0, 1]; got {rates[i].item()!r} at index {i} "
            f"({name}={rates.tolist()})."
        )


def sample_votes(
    S: np.ndarray,
    theta: Any,
    y: Any,
    *,
    abstain: Any = 0.0,
    seed: Any = None,
) -> np.ndarray:
    """Draw LF votes for true labels ``y`` from the model: an (n, m) label matrix.

    One inverse-CDF lookup per vote: the per-label CDF rows are offset by their row
    number and flattened, so a single ``searchsorted`` serves every (row, LF) at once.

    Parameters
    ----------
    S : ndarray of shape (r, r), or FiniteMetricSpace
        Squared distances; with a space only the rows of the labels in ``y`` are
        computed (:meth:`FiniteMetricSpace.squared_distance_rows`), so large spaces such
        as Permutations(8) never build the (r, r) matrix.
    theta : array-like of shape (m,) or (m, r)
        Finite (NaN or inf raises a ValueError).
    y : array-like of int of shape (n,)
        True label indices.
    abstain : float or array-like of shape (m,), default=0.0
        Probability in [0, 1] that each LF abstains (independently of everything
        else); NaN raises a ValueError.
    seed : None, int or numpy.random.Generator

    Returns
    -------
    L : ndarray of int64 of shape (n, m), -1 where the LF abstains.
    """
    rng = check_seed(seed)
    y = np.asarray(y)
    r = len(S) if isinstance(S, FiniteMetricSpace) else S.shape[0]
    integral = y.dtype.kind in "iu" or (
        y.dtype.kind == "f" and bool(np.all(np.isfinite(y) & (y == np.round(y))))
    )
    if y.ndim != 1 or not integral:
        raise ValueError(
            f"y must be a 1-D array of integer label indices in [0, {r}); got "
            f"dtype {y.dtype} and shape {y.shape}."
        )
    y = y.astype(np.int64, copy=False)
    th = np.asarray(theta, dtype=np.float64)
    _check_theta(th)
    if th.ndim not in (1, 2) or (th.ndim == 2 and th.shape[1] != r):
        raise ValueError(
            f"theta must have shape (m,) or (m, {r}) (one value per LF, or per LF "
            f"and label); got {th.shape}."
        )
    m = th.shape[0]
    abstain_arr = np.asarray(abstain, dtype=np.float64)
    if abstain_arr.ndim > 1 or abstain_arr.size not in (1, m):
        raise ValueError(
            f"abstain must be one rate or one per LF ({m}); got shape "
            f"{abstain_arr.shape}."
        )
    labels, inverse = np.unique(y, return_inverse=True)
    if labels.size and (labels[0] < 0 or labels[-1] >= r):
        raise ValueError(
            f"y must hold label indices in [0, {r}); got {labels[[0, -1]]}."
        )
    rows = (
        S.squared_distance_rows(labels)
        if isinstance(S, FiniteMetricSpace)
        else S[labels]
    )
    rates = np.broadcast_to(np.asarray(abstain, dtype=np.float64), (m,))
    _check_abstain_rates(rates)
    n = y.shape[0]
    L = np.empty((n, m), dtype=np.int64)
    k = labels.size
    offsets = np.arange(k, dtype=np.float64)
    for a in range(m):  # one vectorized draw per LF (m is small)
        logp = log_conditional_probs(
            rows, th[a : a + 1] if th.ndim == 1 else th[a : a + 1, labels]
        )[0]
        cdf = np.cumsum(np.exp(logp), axis=1)
        cdf /= cdf[:, -1:]
        flat = (cdf + offsets[:, None]).ravel()
        u = rng.random(n)
        pos = np.searchsorted(flat, inverse + u, side="right")
        L[:, a] = np.minimum(pos - inverse * r, r - 1)
        if rates[a] > 0:
            L[rng.random(n) < rates[a], a] = ABSTAIN
    return L


class FiniteNoiseModel:
    """The noise model of one set of labeling functions on a finite space (a value object).

    Parameters
    ----------
    space : FiniteMetricSpace
    theta : array-like of shape (m,) or (m, r)
        Canonical parameters (larger = more accurate; 0 = uniformly random votes).

    Examples
    --------
    >>> import numpy as np, snorkel_structured as ss
    >>> model = ss.FiniteNoiseModel(ss.Permutations(4), theta=[0.6, 0.99, 0.8])
    >>> np.round(model.expected_sq_dist(), 4).tolist()
    [1.1863, 0.68, 0.8621]
    >>> L = model.sample(np.zeros(5, dtype=int), seed=0)
    >>> L.shape
    (5, 3)
    """

    def __init__(self, space: FiniteMetricSpace, theta: Any) -> None:
        if not isinstance(space, FiniteMetricSpace):
            raise TypeError(
                f"space must be a FiniteMetricSpace; got {type(space).__name__}."
            )
        th = np.array(theta, dtype=np.float64)
        r = len(space)
        if (
            th.ndim not in (1, 2)
            or (th.ndim == 2 and th.shape[1] != r)
            or th.shape[0] == 0
        ):
            raise ValueError(f"theta must have shape (m,) or (m, {r}); got {th.shape}.")
        if not np.isfinite(th).all():
            raise ValueError("theta must be finite.")
        th.setflags(write=False)
        self.space = space
        self.theta = th

    @property
    def n_lfs(self) -> int:
        return int(self.theta.shape[0])

    def log_conditional_probs(self) -> np.ndarray:
        """log P(lambda_a = v | Y = y), shape (m, r, r) indexed [a, y, v]."""
        return log_conditional_probs(self.space.squared_distance_matrix, self.theta)

    def conditional_probs(self) -> np.ndarray:
        """P(lambda_a = v | Y = y), shape (m, r, r) indexed [a, y, v]."""
        return np.exp(self.log_conditional_probs())

    def expected_sq_dist(self, prior: Any = None) -> np.ndarray:
        """E[d^2(lambda_a, Y)], shape (m,); prior over Y (weights, normalized here)
        defaults to uniform."""
        p = _prior_weights(prior, len(self.space))
        return expected_sq_dist(self.space.squared_distance_matrix, self.theta, p)

    @classmethod
    def from_expected_sq_dist(
        cls, space: FiniteMetricSpace, expected: Any, prior: Any = None
    ) -> FiniteNoiseModel:
        """The model whose E[d^2] per LF (or per LF and label) equals ``expected``."""
        theta = theta_from_expected_sq_dist(
            space.squared_distance_matrix, expected, prior
        )
        return cls(space, theta)

    def sample(self, y: Any, *, abstain: Any = 0.0, seed: Any = None) -> np.ndarray:
        """Votes of every LF for the true labels ``y``: (n, m) ints, -1 = abstain."""
        check_scalar(float(np.max(abstain)), "abstain", low=0.0, high=1.0)
        return sample_votes(
            self.space.squared_distance_matrix,
            self.theta,
            y,
            abstain=abstain,
            seed=seed,
        )

    def __eq__(self, other: object) -> bool:
        return (
            type(other) is type(self)
            and self.space == other.space  # type: ignore[attr-defined]
            and np.array_equal(self.theta, other.theta)  # type: ignore[attr-defined]
        )

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.space, self.theta.tobytes()))

    def __repr__(self) -> str:
        return f"FiniteNoiseModel({self.space!r}, theta={self.theta.tolist()!r})"
