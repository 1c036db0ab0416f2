"""Maximum likelihood for the finite noise model: the public EM entry points.

:func:`mle_estimate` picks a starting point and a support, then runs EM over unique vote
patterns (the steps live in :mod:`._em_core`, the support choice in
:mod:`._support_search`); :func:`em_refine` runs EM from a given start.

Starting points: with a given support or prior, theta = 1 for every LF (the first
E-step is then a soft majority vote), and a label-dependent model is fitted directly.
Otherwise the tensor estimate when it is identifiable (spaces of at most
1,000 labels); else a greedy search over supports among candidate labels (all labels,
or the 64 most-voted ones in a larger space): the best single-center model, then labels
added one at a time where the directional derivative of the likelihood is largest (the
vertex-direction method for mixtures), a few seeded random restarts, and the best
likelihood wins.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from snorkel_structured._validation import check_seed
from snorkel_structured.estimators._em_core import (
    _TENSOR_START_MAX,
    _THETA_MAX,
    _Problem,
    _run_em,
    _SqDists,
    support_log_table,
)
from snorkel_structured.estimators._stats import VoteStats
from snorkel_structured.estimators._support_search import (
    _bic_penalty,
    _profile_single_center,
    _search,
    _swap,
)
from snorkel_structured.exceptions import ConvergenceWarning, IdentifiabilityWarning

__all__ = ["MLEEstimate", "em_refine", "mle_estimate", "support_log_table"]


@dataclass(frozen=True, eq=False)
class MLEEstimate:
    """Result of :func:`mle_estimate`.

    Attributes
    ----------
    prior : ndarray of shape (r,)
        Estimated P(Y = y), zero outside ``support``.
    theta : ndarray of shape (n_lfs,) or (n_lfs, r)
        Canonical parameters (per LF, or per LF and true label).
    expected_sq_dist : ndarray of shape (n_lfs,)
        E[d^2(lambda_a, Y)] under the fitted model.
    support : ndarray of int of shape (k,)
        Labels the prior may put mass on.
    log_likelihood : float
        Total log-likelihood of the votes (sum over rows).
    n_iter : int
    converged : bool
    init : str
        Which starting point won ("tensor", "given", "profile" or "restart <i>").
    warnings : list of str
    """

    prior: np.ndarray
    theta: np.ndarray
    expected_sq_dist: np.ndarray
    support: np.ndarray
    log_likelihood: float
    n_iter: int
    converged: bool
    init: str = ""
    warnings: list[str] = field(default_factory=list)


def _tensor_start(
    stats: VoteStats, S: np.ndarray, n_components: int | None, seed: Any
) -> Any:
    """The tensor estimate, or None when the tensor estimator is missing or fails."""
    try:
        from snorkel_structured.estimators.tensor import tensor_estimate
    except ImportError:
        return None
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            est = tensor_estimate(stats, S, n_components=n_components, seed=seed)
        est_warnings = [str(w.message) for w in caught]
        return est, est_warnings
    except Exception as exc:  # noqa: BLE001 - any failure means: use the fallback
        return None, [
            f"tensor estimator failed ({type(exc).__name__}: {exc}); used the fallback start."
        ]


def em_refine(
    stats: VoteStats,
    S: np.ndarray,
    *,
    theta: Any,
    prior: Any,
    support: Any = None,
    fixed_prior: bool = False,
    fixed_theta: bool = False,
    label_dependent: bool = False,
    max_iter: int = 500,
    tol: float = 1e-8,
) -> MLEEstimate:
    """EM from a given start (no search): the likelihood refinement step alone.

    Parameters
    ----------
    stats : VoteStats
    S : ndarray of shape (r, r) or FiniteMetricSpace
        Squared distances, or the space (a large space computes only the rows it needs
        with ``space.dist``).
    theta : array-like of shape (n_lfs,) or (n_lfs, r)
        Starting parameters; shape (n_lfs,) with ``label_dependent=True`` is broadcast.
    prior : array-like of shape (r,)
        Starting prior (kept when ``fixed_prior``).
    support : array-like of int, optional
        Labels the prior may use; default the labels where ``prior`` > 0.
    fixed_prior : bool, default=False
    fixed_theta : bool, default=False
        Keep theta and estimate only the prior (e.g. the UWS label model).
    label_dependent : bool, default=False
    max_iter : int, default=500
    tol : float, default=1e-8
        Stop when the log-likelihood per row changes by less than ``tol``.

    Returns
    -------
    MLEEstimate
    """
    prob = _Problem(stats, _SqDists(S))
    p = np.asarray(prior, dtype=np.float64)
    T = (
        np.flatnonzero(p > 0)
        if support is None
        else np.asarray(support, dtype=np.int64)
    )
    w = p[T] / p[T].sum()
    th = np.asarray(theta, dtype=np.float64).copy()
    if th.ndim == 2:
        th = th[:, T]
    if label_dependent and th.ndim == 1 and not fixed_theta:
        w, th, _, n1, _ = _run_em(
            prob,
            T,
            w,
            th,
            fixed_w=fixed_prior,
            label_dependent=False,
            max_iter=max_iter,
            tol=tol,
        )
        th = np.repeat(th[:, None], T.size, axis=1)
    else:
        n1 = 0
    w, th, ll, it, conv = _run_em(
        prob,
        T,
        w,
        th,
        fixed_w=fixed_prior,
        label_dependent=label_dependent,
        max_iter=max_iter,
        tol=tol,
        fixed_theta=fixed_theta,
    )
    msgs = []
    if not conv:
        msgs.append(f"EM stopped at max_iter={max_iter}; raise max_iter or tol.")
        warnings.warn(msgs[-1], ConvergenceWarning, stacklevel=2)
    return _result(prob, T, w, th, ll, n1 + it, conv, "given", msgs)


def _result(
    prob: _Problem,
    T: np.ndarray,
    w: np.ndarray,
    th: np.ndarray,
    ll: float,
    it: int,
    conv: bool,
    init: str,
    msgs: list[str],
) -> MLEEstimate:
    prior = np.zeros(prob.r)
    prior[T] = w
    e = prob.expected_sq_dist(th, T, w)
    if (
        th.ndim == 2
    ):  # (m, k) over T -> (m, r); off the support: the prior-weighted mean
        full = np.repeat((th @ w)[:, None], prob.r, axis=1)
        full[:, T] = th
        th = full
    order = np.argsort(T)
    return MLEEstimate(prior, th, e, T[order], ll, it, conv, init, msgs)


def mle_estimate(
    stats: VoteStats,
    S: np.ndarray,
    *,
    n_components: int | None = None,
    support: Any = None,
    prior: Any = None,
    label_dependent: bool = False,
    init: Any = "auto",
    n_restarts: int = 2,
    max_iter: int = 500,
    tol: float = 1e-8,
    seed: Any = None,
) -> MLEEstimate:
    """Maximum-likelihood prior and theta of the finite noise model (EM over patterns).

    Parameters
    ----------
    stats : VoteStats
        Vote-pattern counts of the label matrix.
    S : ndarray of shape (r, r) or FiniteMetricSpace
        Squared distances of the label space, or the space itself (a large space then
        computes only the rows it needs with ``space.dist``, never the (r, r) matrix).
    n_components : int, optional
        Number of labels with prior mass. Default: the tensor estimate's support, or a
        greedy search that adds labels while BIC improves.
    support : array-like of int, optional
        Labels the prior may use (overrides the search); ``np.arange(r)`` = whole space.
    prior : array-like of shape (r,), optional
        A fixed prior (e.g. a known class balance); only theta is estimated.
    label_dependent : bool, default=False
        Estimate theta per LF and true label, shape (n_lfs, r).
    init : "auto", "tensor", "search" or an object with ``prior`` and ``theta``
        Starting point: "auto" uses the tensor estimate when it is available and
        identifiable, else the search.
    n_restarts : int, default=2
        Seeded random restarts of the search (used when the search runs).
    max_iter : int, default=500
        EM iterations (each SQUAREM cycle counts three).
    tol : float, default=1e-8
        Convergence tolerance on the log-likelihood per row.
    seed : None, int or numpy.random.Generator

    Returns
    -------
    MLEEstimate

    Warns
    -----
    ConvergenceWarning
        When EM stops at ``max_iter``.

    Examples
    --------
    >>> import numpy as np
    >>> from snorkel_structured.synthetic import make_ranking_data
    >>> from snorkel_structured.estimators import VoteStats
    >>> from snorkel_structured.estimators.em import mle_estimate
    >>> data = make_ranking_data(20000, seed=0)
    >>> stats = VoteStats.from_label_matrix(data.L, n_labels=24)
    >>> est = mle_estimate(stats, data.space.squared_distance_matrix, n_components=2, seed=0)
    >>> bool(np.abs(est.expected_sq_dist - data.expected_sq_dist).max() < 0.05)
    True
    """
    rng = check_seed(seed)
    sq = _SqDists(S)
    prob = _Problem(stats, sq)
    msgs: list[str] = []
    starts: list[
        tuple[str, np.ndarray, np.ndarray, np.ndarray]
    ] = []  # (name, T, w, theta)
    fixed = prior is not None
    given = fixed or support is not None
    if given:
        p = np.asarray(prior, dtype=np.float64) if fixed else None
        T = (
            np.flatnonzero(p > 0)
            if p is not None
            else np.unique(np.asarray(support, dtype=np.int64))
        )
        if p is not None:  # a normalized prior is kept bit for bit
            w0 = p[T] if abs(p.sum() - 1.0) <= 1e-12 else p[T] / p[T].sum()
        else:
            w0 = np.full(T.size, 1.0 / T.size)
        # theta = 1 for every LF: the first E-step is a soft majority vote over T
        starts.append(("given", T, w0, np.full(prob.m, 1.0)))
    elif not isinstance(init, str):
        p = np.asarray(init.prior, dtype=np.float64)
        T = np.flatnonzero(p > 0)
        starts.append(
            (
                "given",
                T,
                p[T] / p[T].sum(),
                np.asarray(init.theta, dtype=np.float64).reshape(prob.m, -1)[:, 0],
            )
        )
    else:
        tensor_ok = False
        if init in ("auto", "tensor") and sq.dense and prob.r <= _TENSOR_START_MAX:
            assert sq.S is not None
            got = _tensor_start(stats, sq.S, n_components, rng.spawn(1)[0])
            if got is not None:
                est, est_msgs = got
                msgs.extend(est_msgs)
                if est is not None:
                    p = np.asarray(est.prior, dtype=np.float64)
                    T = np.flatnonzero(p > 0)
                    ok = (
                        bool(getattr(est, "identifiable", True))
                        and T.size > 0
                        and np.isfinite(est.theta).all()
                    )
                    if ok:
                        th = np.clip(
                            np.asarray(est.theta, dtype=np.float64), 0.0, _THETA_MAX
                        )
                        starts.append(("tensor", T, p[T] / p[T].sum(), th))
                        tensor_ok = True
        if not tensor_ok or init == "search":
            C = prob.candidates()
            best, th0 = _profile_single_center(prob, C)
            seeds = [best] + list(
                rng.choice(C, size=min(n_restarts, C.size), replace=False)
            )
            for i, s0 in enumerate(seeds):
                T, w, th, _ = _search(
                    prob,
                    int(s0),
                    th0,
                    C,
                    n_components=n_components,
                    max_iter=max_iter,
                    tol=tol,
                )
                starts.append(("profile" if i == 0 else f"restart {i}", T, w, th))
    best_fit = None
    C = prob.candidates() if not given else None
    for name, T, w, th in starts:
        th = np.asarray(th, dtype=np.float64).copy()
        if given and label_dependent:  # straight to the label-dependent model
            th = np.repeat(th[:, None], T.size, axis=1)
        w_, th_, ll, it, conv = _run_em(
            prob,
            T,
            w,
            th,
            fixed_w=fixed,
            label_dependent=given and label_dependent,
            max_iter=max_iter,
            tol=tol,
        )
        if C is not None:
            T, w_, th_, ll = _swap(
                prob, T, w_, th_, ll, C, fixed_w=fixed, max_iter=max_iter, tol=tol
            )
        # Starts may end with supports of different sizes: when the size is free, compare
        # them by BIC (the penalty the greedy search uses), else a restart that grew a
        # spurious label would win on raw likelihood.
        score = ll - (
            T.size * _bic_penalty(prob) if n_components is None and not given else 0.0
        )
        if best_fit is None or score > best_fit[-1]:
            best_fit = (name, T, w_, ll, th_, it, conv, score)
    assert best_fit is not None
    name, T, w, ll, th, it, conv, _ = best_fit
    if label_dependent and not given:
        th = np.repeat(th[:, None], T.size, axis=1)
        w, th, ll, it2, conv = _run_em(
            prob,
            T,
            w,
            th,
            fixed_w=fixed,
            label_dependent=True,
            max_iter=max_iter,
            tol=tol,
        )
        it += it2
    if not conv:
        msg = (
            f"EM stopped at max_iter={max_iter} before the log-likelihood changed by less "
            f"than tol={tol} per row; raise max_iter or tol."
        )
        msgs.append(msg)
        warnings.warn(msg, ConvergenceWarning, stacklevel=2)
    at_bound = np.flatnonzero((np.atleast_2d(th.T).T >= 0.999 * _THETA_MAX).any(axis=1))
    if at_bound.size:
        # theta at its cap means the model sees the LF as never wrong: typically an LF
        # whose votes decide the model's labels (constant within groups of rows, or a
        # function of other LFs), which breaks conditional independence.
        msg = (
            f"LF(s) {at_bound.tolist()} reached theta={_THETA_MAX:g}, the upper bound: the "
            "model treats them as never wrong and lets them decide the labels. This "
            "usually means they are not conditionally independent of the other LFs "
            "(e.g. constant within groups, or copies of another LF); check them with "
            "StructuredLFAnalysis and consider dropping them."
        )
        msgs.append(msg)
        warnings.warn(msg, IdentifiabilityWarning, stacklevel=2)
    return _result(prob, T, w, th, ll, it, conv, name, msgs)
