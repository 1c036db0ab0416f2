"""Score test of LF dependencies against a fitted, conditionally independent label model.

On each row where LFs a and b both vote, ``1(lambda_a = lambda_b)`` is Bernoulli(p_i)
given the other LFs' votes under the model, with ``p_i`` from the posterior of Y given
the other LFs (:func:`agreement_expectations`);
``z = sum_i [1(agree_i) - p_i] / sqrt(sum_i p_i (1 - p_i))``, Holm over pairs. A fitted
model absorbs a strong dependency into the pair's accuracies (and then flags the wrong
pairs: measured), so this test is kept for diagnosis; the default, model-free test is
``snorkel_structured.estimators.dependencies``. It lives in the label-model layer
because it reads (and, when none is given, fits) a ``StructuredLabelModel``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from scipy.special import logsumexp
from scipy.stats import norm

from snorkel_structured import _warnings
from snorkel_structured._validation import ABSTAIN, check_label_matrix, check_scalar
from snorkel_structured.estimators._stats import VoteStats
from snorkel_structured.estimators.dependencies._api import (
    MIN_LFS,
    _check_label_model,
    is_finite_space,
    result_frame,
)
from snorkel_structured.estimators.dependencies._calibration import holm
from snorkel_structured.estimators.dependencies._finite import pairs

__all__ = [
    "agreement_expectations",
    "default_null_model",
    "model_dependency_test",
    "null_model_tables",
    "score_statistics",
]

# log-probabilities are clipped here so that an impossible event (-inf) can be
# subtracted out of a row total again without NaN (exp(-1e4) is 0 anyway).
_LOG_FLOOR = -1e4


def null_model_tables(
    label_model: Any, space: Any
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The fitted independent model on its support, as the test needs it.

    Parameters
    ----------
    label_model : fitted StructuredLabelModel
    space : FiniteMetricSpace
        The space the model was fitted on.

    Returns
    -------
    support : ndarray of int of shape (k,)
    log_prior : ndarray of shape (k,)
    log_vote : ndarray of shape (n_lfs, r, k)
        log P(lambda_a = v | Y = support_j, LF a votes), normalized over v.
    abstain : ndarray of shape (n_lfs, k)
        P(LF a abstains | Y = support_j).
    """
    T = np.asarray(label_model.support_, dtype=np.int64)
    prior = np.asarray(label_model.prior_, dtype=np.float64)[T]
    abstain = np.asarray(label_model.abstain_, dtype=np.float64)[:, T]
    post = getattr(label_model, "_posterior", None)
    if post is not None:
        # The fitted posterior's own tables over the support (whatever the noise model:
        # the distance family, its outliers, or Dawid and Skene's tables); never the
        # (r, r) table, refused above 2,048 labels.
        log_vote = np.asarray(post.table, dtype=np.float64)[:, 1:, :]
    else:  # Snorkel's table (n_lfs, r + 1, r), abstain first
        cp = np.asarray(label_model.get_conditional_probs(), dtype=np.float64)[:, :, T]
        with np.errstate(divide="ignore"):
            log_vote = np.log(cp[:, 1:, :]) - np.log1p(-cp[:, :1, :])
    # Renormalize over v: guards the comparison p_i against rounding in the tables.
    log_vote = log_vote - logsumexp(log_vote, axis=1, keepdims=True)
    with np.errstate(divide="ignore"):
        log_prior = np.log(prior / prior.sum())
    return T, log_prior, log_vote, abstain


def agreement_expectations(
    patterns: np.ndarray,
    a: int,
    b: int,
    log_prior: np.ndarray,
    log_vote: np.ndarray,
    abstain: np.ndarray,
    *,
    totals: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """p_i = P(lambda_a = lambda_b | other LFs' votes, both vote) under the model.

    Parameters
    ----------
    patterns : ndarray of int of shape (n_patterns, n_lfs)
        Vote patterns (-1 = abstain).
    a, b : int
        The pair.
    log_prior : ndarray of shape (k,)
    log_vote : ndarray of shape (n_lfs, r, k)
        log P(lambda_c = v | Y = y_j, c votes).
    abstain : ndarray of shape (n_lfs, k)
        P(c abstains | Y = y_j).
    totals : (contrib, total), optional
        Precomputed per-LF log-factors (n_lfs, n_patterns, k) and their sum plus the
        log prior (n_patterns, k), shared by all pairs (see :func:`_log_factors`).

    Returns
    -------
    rows : ndarray of int of shape (n_both,)
        Indices of the patterns where both a and b vote.
    p : ndarray of shape (n_both,)
    """
    contrib, total = (
        _log_factors(patterns, log_prior, log_vote, abstain)
        if totals is None
        else totals
    )
    rows = np.flatnonzero((patterns[:, a] != ABSTAIN) & (patterns[:, b] != ABSTAIN))
    with np.errstate(divide="ignore"):
        log_vote_a = np.maximum(np.log1p(-abstain[a]), _LOG_FLOOR)
        log_vote_b = np.maximum(np.log1p(-abstain[b]), _LOG_FLOOR)
    # log q(y) from the other LFs, times P(a votes, b votes | y): (n_both, k)
    base = total[rows] - contrib[a, rows] - contrib[b, rows] + (log_vote_a + log_vote_b)
    # log sum_v P_a(v | y) P_b(v | y), (k,)
    log_agree = logsumexp(log_vote[a] + log_vote[b], axis=0)
    p = np.exp(logsumexp(base + log_agree, axis=1) - logsumexp(base, axis=1))
    return rows, np.clip(p, 0.0, 1.0)


def _log_factors(
    patterns: np.ndarray,
    log_prior: np.ndarray,
    log_vote: np.ndarray,
    abstain: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Each LF's log P(its vote or abstain | y) per pattern, (m, u, k), and the total."""
    m = patterns.shape[1]
    with np.errstate(divide="ignore"):
        log_abs = np.maximum(np.log(abstain), _LOG_FLOOR)
        log_voted = np.maximum(np.log1p(-abstain), _LOG_FLOOR)
    contrib = np.empty((m, patterns.shape[0], log_prior.size))
    for c in range(m):  # one vectorized gather per LF
        v = patterns[:, c]
        voted = v != ABSTAIN
        contrib[c] = log_abs[c]
        contrib[c, voted] = log_voted[c] + np.maximum(log_vote[c][v[voted]], _LOG_FLOOR)
    total = np.maximum(log_prior, _LOG_FLOOR) + contrib.sum(axis=0)
    return contrib, total


def score_statistics(
    stats: VoteStats,
    log_prior: np.ndarray,
    log_vote: np.ndarray,
    abstain: np.ndarray,
) -> tuple[np.ndarray, ...]:
    """Per pair: n_both, observed and expected agreement rates, z (from the patterns).

    Returns
    -------
    a_idx, b_idx : ndarray of int of shape (n_pairs,)
    n_both, observed, expected, z : ndarray of shape (n_pairs,)
    """
    P, counts = np.asarray(stats.patterns), np.asarray(stats.counts)
    m = P.shape[1]
    a_idx, b_idx = pairs(m)
    totals = _log_factors(P, log_prior, log_vote, abstain)
    n_both = np.zeros(a_idx.size)
    obs = np.full(a_idx.size, np.nan)
    exp = np.full(a_idx.size, np.nan)
    z = np.full(a_idx.size, np.nan)
    for t, (a, b) in enumerate(
        zip(a_idx, b_idx, strict=True)
    ):  # m(m-1)/2 vectorized passes
        rows, p = agreement_expectations(
            P, a, b, log_prior, log_vote, abstain, totals=totals
        )
        w = counts[rows]
        n = w.sum()
        n_both[t] = n
        if n == 0:
            continue
        agree = P[rows, a] == P[rows, b]
        obs[t] = (w @ agree) / n
        exp[t] = (w @ p) / n
        var = w @ (p * (1.0 - p))
        if var > 0:
            z[t] = (w @ (agree - p)) / np.sqrt(var)
        else:  # the model makes agreement certain (or impossible) on every row
            z[t] = np.inf if obs[t] > exp[t] + 1e-12 else 0.0
    return a_idx, b_idx, n_both, obs, exp, z


def default_null_model(space: Any) -> Any:
    """The independent model the finite test fits when none is given.

    ``StructuredLabelModel(space, seed=0, shrinkage=0.0)``: the maximum-likelihood
    fit. Shrinking theta toward the LFs' mean helps prediction but biases each pair's
    predicted agreement (strong pairs under-predicted), which a test at n = 10,000
    would read as dependence.
    """
    from snorkel_structured.label_model.structured import StructuredLabelModel

    return StructuredLabelModel(space, seed=0, shrinkage=0.0)


def model_dependency_test(
    L: Any,
    label_model: Any = None,
    *,
    space: Any = None,
    alpha: float = 0.05,
    lf_names: Any = None,
) -> pd.DataFrame:
    """Score test of every LF pair against a fitted independent label model.

    Parameters
    ----------
    L : array-like of shape (n_samples, n_lfs)
        Label indices into a finite space, -1 = abstain. At least 4 LFs.
    label_model : fitted StructuredLabelModel, optional
        The conditionally independent null model, fitted on ``L`` without declared
        dependencies. Default: :func:`default_null_model` fitted on ``L``.
    space : finite label space, optional
        Defaults to ``label_model.space``.
    alpha : float in (0, 1), default=0.05
        Family-wise false-alarm rate over all pairs (Holm's procedure).
    lf_names : sequence, optional
        Names for the ``lf_a``/``lf_b`` columns.

    Returns
    -------
    result : pandas.DataFrame
        The frame of ``lf_dependency_test``; ``observed`` and ``expected`` are the
        agreement rate and its expectation under the model given the other LFs'
        votes, ``dependent`` is Holm's decision.

    Raises
    ------
    ValueError
        Fewer than 4 LFs, a model fitted on another space or number of LFs, a
        manifold space, bad ``alpha`` or ``lf_names``.
    """
    alpha = check_scalar(
        alpha, "alpha", low=0.0, high=1.0, low_inclusive=False, high_inclusive=False
    )
    if space is None:
        if label_model is None:
            raise ValueError(
                "Pass space (the label space of L) or a fitted label_model."
            )
        space = label_model.space
    if not is_finite_space(space):
        raise ValueError(
            f"method='model' needs a finite label space; got {space!r}. Manifolds "
            "use the model-free test (method='moments')."
        )
    Lc = check_label_matrix(L, n_labels=len(space), name="L")
    m = Lc.shape[1]
    if m < MIN_LFS:
        raise ValueError(
            f"The dependency test needs at least {MIN_LFS} labeling functions; L has "
            f"{m}. With 3 or fewer, the pairwise statistics are fully used up by the "
            "LFs' own accuracies and cannot reveal a dependency."
        )
    names = None
    if lf_names is not None:
        names = list(lf_names)
        if len(names) != m:
            raise ValueError(
                f"lf_names has {len(names)} names but L has {m} labeling functions."
            )
    if label_model is None:
        with _warnings.captured():
            # the null model's own fit diagnostics are not the test's business
            label_model = default_null_model(space).fit(Lc)
    _check_label_model(label_model, space, m, none="(or none, to fit one)")
    _, log_prior, log_vote, abstain = null_model_tables(label_model, space)
    stats = VoteStats.from_label_matrix(Lc, n_labels=len(space))
    a, b, n_both, obs, exp, z = score_statistics(stats, log_prior, log_vote, abstain)
    dependent = holm(norm.sf(z), alpha)
    return result_frame(a, b, n_both, obs, exp, z, dependent, names)
