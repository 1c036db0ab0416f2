"""Detect pairs of labeling functions that agree more than conditional independence allows.

The structured analogue of dependency structure learning for Snorkel (Varma et al., ICML
2019): with m >= 4 LFs the pairwise LF-LF statistics over-identify a conditionally
independent model, so a pair that is *too close* (copies, shared sources) shows up as
a residual the independent model cannot explain.

**Finite spaces, ``method="moments"`` (default).** Under conditional independence
every joint table of two LFs (abstain a category) is ``J_cd = mu_c W mu_d^T`` of rank
k (labels with prior mass), so for two disjoint halves O1, O2 of the *other* LFs
``J_ab = J_{a,O1} (J_{O2,O1})^+ J_{O2,b}`` (the multi-view identity). A pair's
statistic is its observed agreement mass P(lambda_a = lambda_b, both vote) minus
that prediction, which never reads the pair's own table.

**Manifolds.** Independent isotropic noise around the same Y gives an exact identity
per pair: ``E d^2(lambda_a, lambda_b) = e_a + e_b`` in Euclidean space, and
``E cos d = A_a A_b`` (sphere), ``E cosh d = A_a A_b`` (hyperbolic) by the spherical
and hyperbolic laws of cosines. For each pair the per-LF terms are fitted by weighted
least squares on all *other* pairs (in logs for the products); the statistic is the
pair's residual. No label model is needed.

**Calibration (both).** The statistics are smooth but non-linear functions of all
the pattern (row) frequencies: the prediction carries the sampling error of the
other LFs' tables, amplified by the pseudo-inverse where a table is ill-conditioned
(weak LFs), plus the pseudo-inverse's bias. A delta-method z ignores the
non-linearity and had heavy tails (false-alarm rates 0.10-0.20 at alpha = 0.05).
Instead the rows are resampled ``n_boot`` times (multinomial pattern counts, all
tables of all resamples from one sparse product; splits, ranks and least-squares
weights fixed at their values on the data) and every statistic is recomputed. Per
pair, ``z = (d - bias) / se`` with ``bias = median(d*) - d`` and ``se = sd(d*)``.

**Multiplicity.** Family-wise over all m (m - 1) / 2 pairs by the bootstrap max-T
step-down procedure (Westfall and Young 1993; Romano and Wolf 2005): the most
significant open pair is flagged when its z exceeds the 1 - alpha quantile of
``max over open pairs of (d* - median(d*)) / se`` over the resamples (finite-sample
p-value ``(1 + #{max* >= z}) / (n_boot + 1)``); it then leaves the other pairs'
predictions (they are recomputed on the same resamples) and the step repeats. The
max over pairs is resampled jointly, so the correlation between pairs (they share
tables) is accounted for, unlike Bonferroni or Holm. Under independence the first
step flags a pair with probability about alpha. Only "too close" is evidence
(one-sided). False-alarm rate and power are measured in
``benchmarks/bench_dependency_test.py``.

**Finite spaces, ``method="model"``.** A score test against a fitted independent
label model: on each row where a and b both vote, ``1(lambda_a = lambda_b)`` is
Bernoulli(p_i) given the other LFs' votes under the model, with ``p_i`` from the
posterior of Y given the other LFs (:func:`agreement_expectations`);
``z = sum_i [1(agree_i) - p_i] / sqrt(sum_i p_i (1 - p_i))``, Holm over pairs. A
fitted model absorbs a strong dependency into the pair's accuracies, so this method
is kept for diagnosis, not as the default.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import pandas as pd
from scipy import sparse
from scipy.special import logsumexp
from scipy.stats import norm

from snorkel_structured import _warnings
from snorkel_structured._validation import (
    ABSTAIN,
    check_is_fitted,
    check_label_matrix,
    check_manifold_outputs,
    check_scalar,
)
from snorkel_structured.estimators._stats import VoteStats
from snorkel_structured.spaces.finite import DENSE_MAX_LABELS, FiniteMetricSpace

__all__ = ["dependent_pairs", "lf_dependency_test"]

MIN_LFS = 4
_COLUMNS = [
    "lf_a",
    "lf_b",
    "n_both",
    "observed",
    "expected",
    "z",
    "p_value",
    "dependent",
]
# log-probabilities are clipped here so that an impossible event (-inf) can be
# subtracted out of a row total again without NaN (exp(-1e4) is 0 anyway).
_LOG_FLOOR = -1e4


def _is_finite_space(space: Any) -> bool:
    return isinstance(space, FiniteMetricSpace) or (
        hasattr(space, "distance_matrix") and hasattr(space, "index")
    )


def _manifold_kind(space: Any) -> str:
    from snorkel_structured.spaces.manifolds import Euclidean, Hyperbolic, Sphere

    if isinstance(space, Euclidean):
        return "euclidean"
    if isinstance(space, Sphere):
        return "sphere"
    if isinstance(space, Hyperbolic):
        return "hyperbolic"
    raise TypeError(
        "space must be a finite label space (ss.Permutations, ss.Discrete, "
        "ss.GraphSpace, ...) or one of ss.Euclidean, ss.Sphere, ss.Hyperbolic; got "
        f"{type(space).__name__}. Product manifolds have no pairwise identity the "
        "test can use."
    )


def _holm(p_values: np.ndarray, alpha: float) -> np.ndarray:
    """Holm's step-down rejections (family-wise error <= alpha); NaN p never rejects."""
    p = np.where(np.isnan(p_values), np.inf, p_values)
    n_tests = int(np.isfinite(p).sum())
    order = np.argsort(p, kind="stable")
    thresholds = alpha / np.maximum(n_tests - np.arange(p.size), 1)
    passed = p[order] <= thresholds
    # Reject the smallest p-values up to the first one that fails its threshold.
    n_reject = p.size if passed.all() else int(np.argmin(passed))
    reject = np.zeros(p.size, dtype=bool)
    reject[order[:n_reject]] = True
    return reject


def _pairs(m: int) -> tuple[np.ndarray, np.ndarray]:
    a, b = np.triu_indices(m, k=1)
    return a.astype(np.int64), b.astype(np.int64)


def _result_frame(
    a: np.ndarray,
    b: np.ndarray,
    n_both: np.ndarray,
    observed: np.ndarray,
    expected: np.ndarray,
    z: np.ndarray,
    alpha: float,
    lf_names: list[Any] | None,
) -> pd.DataFrame:
    p_value = norm.sf(z)  # one-sided: only "closer than independence" is evidence
    dependent = _holm(p_value, alpha)
    if lf_names is not None:
        names = np.empty(len(lf_names), dtype=object)
        names[:] = list(lf_names)
        a, b = names[a], names[b]
    return pd.DataFrame(
        {
            "lf_a": a,
            "lf_b": b,
            "n_both": n_both.astype(np.int64),
            "observed": observed,
            "expected": expected,
            "z": z,
            "p_value": p_value,
            "dependent": dependent,
        },
        columns=_COLUMNS,
    )


# -- finite spaces -----------------------------------------------------------------------
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
    r = len(space)
    abstain = np.asarray(label_model.abstain_, dtype=np.float64)[:, T]
    if hasattr(label_model, "noise_power_") and hasattr(label_model, "theta_"):
        # The model's own noise family (power, outlier component, label-dependent
        # theta), computed on the support's columns only: get_conditional_probs()
        # would need the (r, r) table, refused above 2,048 labels.
        from snorkel_structured.estimators.em import support_log_table

        eps = np.asarray(getattr(label_model, "outlier_rate_", np.zeros(1)))
        use_eps = bool(np.any(eps > 0))
        log_h = None
        if use_eps:
            with np.errstate(divide="ignore"):
                log_h = np.log(np.asarray(label_model.outlier_dist_, dtype=np.float64))
        table = support_log_table(
            space if r > DENSE_MAX_LABELS else space.squared_distance_matrix,
            label_model.theta_,
            T,
            power=float(label_model.noise_power_),
            eps=eps if use_eps else None,
            log_h=log_h,
        )
        log_vote = table[:, 1:, :]
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


def _finite_test(
    stats: VoteStats,
    log_prior: np.ndarray,
    log_vote: np.ndarray,
    abstain: np.ndarray,
) -> tuple[np.ndarray, ...]:
    """Per pair: n_both, observed and expected agreement rates, z."""
    P, counts = np.asarray(stats.patterns), np.asarray(stats.counts)
    m = P.shape[1]
    a_idx, b_idx = _pairs(m)
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


def _check_label_model(label_model: Any, space: Any, n_lfs: int) -> None:
    check_is_fitted(label_model, "theta_")
    lm_space = getattr(label_model, "space", None)
    if lm_space is not None and lm_space is not space and lm_space != space:
        raise ValueError(
            f"label_model was fitted on {lm_space!r} but the votes are in {space!r}; "
            "pass a model fitted on this space (or none, to fit one)."
        )
    lm_lfs = getattr(label_model, "n_lfs_", None)
    if lm_lfs is not None and int(lm_lfs) != n_lfs:
        raise ValueError(
            f"label_model was fitted with {lm_lfs} labeling functions but L has "
            f"{n_lfs}; pass the model fitted on these LFs (or none, to fit one)."
        )


def default_null_model(space: Any) -> Any:
    """The independent model the finite test fits when none is given.

    ``StructuredLabelModel(space, seed=0, shrinkage=0.0)``: the maximum-likelihood
    fit. Shrinking theta toward the LFs' mean helps prediction but biases each pair's
    predicted agreement (strong pairs under-predicted), which a test at n = 10,000
    would read as dependence.
    """
    from snorkel_structured.label_model.structured import StructuredLabelModel

    return StructuredLabelModel(space, seed=0, shrinkage=0.0)


# -- finite spaces, model-free: each pair's joint table predicted from the others ---------
def _halves(
    others: list[int], a: int, b: int, flagged: list[tuple[int, int]]
) -> tuple[list[int], list[int]] | None:
    """Split the other LFs in two so that no flagged pair straddles a used cross-table.

    The prediction reads the tables (a, O1), (O2, O1) and (O2, b): a flagged partner
    of a goes to O2, one of b to O1, and flagged pairs among the others stay on one
    side (their joint table is then never read). Groups are balanced greedily.
    """
    parent = {c: c for c in others}

    def find(c: int) -> int:
        while parent[c] != c:
            c = parent[c]
        return c

    for x, y in flagged:
        if x in parent and y in parent:
            parent[find(x)] = find(y)
    groups: dict[int, list[int]] = {}
    for c in others:
        groups.setdefault(find(c), []).append(c)
    partners_a = {y if x == a else x for x, y in flagged if a in (x, y)}
    partners_b = {y if x == b else x for x, y in flagged if b in (x, y)}
    O1: list[int] = []
    O2: list[int] = []
    free = []
    for g in groups.values():
        to_a, to_b = bool(partners_a & set(g)), bool(partners_b & set(g))
        if to_a and to_b:
            continue  # dependent on both: usable on neither side
        if to_a:
            O2 += g
        elif to_b:
            O1 += g
        else:
            free.append(g)
    for g in sorted(free, key=len, reverse=True):
        (O1 if len(O1) <= len(O2) else O2).extend(g)
    if not O1 or not O2:
        return None
    return sorted(O1), sorted(O2)


def _rank(sv: np.ndarray, shape: tuple[int, int], top: float, n: float, n_components):
    """How many singular directions the pseudo-inverse keeps (rank <= n_components).

    ``sv`` are the singular values of the data's table of shape ``shape`` and
    largest entry ``top``. Directions whose singular value is below the sampling
    noise of a frequency table of n rows (about 2 (sqrt(R) + sqrt(C))
    sqrt(top / n)) are dropped when no rank is given: they would only amplify noise,
    and the model's rank is at most the number of labels with prior mass.
    """
    if sv[0] <= 0:
        return 1
    if n_components is not None:
        k = min(int(n_components), int((sv > 1e-12 * sv[0]).sum()))
    else:
        floor = 2.0 * (np.sqrt(shape[0]) + np.sqrt(shape[1])) * np.sqrt(max(top, 0) / n)
        k = int((sv > max(floor, 1e-12 * sv[0])).sum())
    return max(k, 1)


def _batched_pinv(A: np.ndarray, n: float, n_components: int | None) -> np.ndarray:
    """Rank-k pseudo-inverses of a stack of tables, (B, R, C) -> (B, C, R).

    The rank is chosen on draw 0 (the data, :func:`_rank`) and held fixed over the
    resamples, so that every draw applies the same smooth map to its frequencies.
    Large tables (permutations: 25 values per LF) are not decomposed in full: each
    draw's top-k subspace is found by one subspace iteration started from the
    data's top k + 8 right singular vectors (the resamples differ from the data by
    sampling noise, far below the signal's singular values), then a small SVD.
    """
    R, C = A.shape[1:]
    extra = 8
    if min(R, C) <= 2 * (extra + (n_components or min(R, C))):
        U, sv, Vt = np.linalg.svd(A, full_matrices=False)
        k = _rank(sv[0], (R, C), float(A[0].max()), n, n_components)
    else:
        _, sv0, Vt0 = np.linalg.svd(A[0], full_matrices=False)
        k = _rank(sv0, (R, C), float(A[0].max()), n, n_components)
        omega = Vt0[: min(k + extra, sv0.size)].T  # (C, k + extra)
        Q, _ = np.linalg.qr(np.matmul(A, omega))  # (B, R, k + extra)
        At = np.swapaxes(A, 1, 2)
        Q, _ = np.linalg.qr(np.matmul(A, np.matmul(At, Q)))  # one power iteration
        Us, sv, Vt = np.linalg.svd(
            np.matmul(np.swapaxes(Q, 1, 2), A), full_matrices=False
        )
        U = np.matmul(Q, Us)
    s = sv[:, :k]
    inv = np.where(s > 0, 1.0 / np.where(s > 0, s, 1.0), 0.0)
    V_k = np.swapaxes(Vt[:, :k], 1, 2)  # (B, C, k)
    return np.matmul(V_k * inv[:, None, :], np.swapaxes(U[:, :, :k], 1, 2))


class _Tables:
    """Joint frequency tables of every pair of LFs, for the data and its resamples.

    ``weights`` (n_draws, n_patterns) holds the pattern counts of the data (row 0)
    and of the multinomial resamples; every table of every draw comes out of one
    sparse product, so a resample costs no Python loop over patterns or rows.
    """

    def __init__(self, P: np.ndarray, weights: np.ndarray) -> None:
        m = P.shape[1]
        self.n = weights.sum(axis=1)  # (n_draws,)
        self.codes, self.vals = [], []
        for c in range(m):  # each LF's alphabet: the values it used (abstain included)
            v, inv = np.unique(P[:, c], return_inverse=True)
            self.vals.append(v)
            self.codes.append(inv.ravel())
        self.sizes = [v.size for v in self.vals]
        a_idx, b_idx = _pairs(m)
        cells = np.array(
            [self.sizes[c] * self.sizes[d] for c, d in zip(a_idx, b_idx, strict=True)]
        )
        offset = np.concatenate([[0], np.cumsum(cells)])
        u = P.shape[0]
        cols = np.concatenate(
            [
                offset[t] + self.codes[c] * self.sizes[d] + self.codes[d]
                for t, (c, d) in enumerate(zip(a_idx, b_idx, strict=True))
            ]
        )
        rows = np.tile(np.arange(u), a_idx.size)
        onehot = sparse.csr_matrix(
            (np.ones(rows.size), (rows, cols)), shape=(u, int(offset[-1]))
        )
        # (n_draws, total cells): frequencies, each draw normalized by its own n.
        flat = np.asarray((onehot.T @ weights.T).T) / self.n[:, None]
        self._flat, self._offset = flat, offset
        self._index = {
            (int(c), int(d)): t
            for t, (c, d) in enumerate(zip(a_idx, b_idx, strict=True))
        }

    def __call__(self, c: int, d: int) -> np.ndarray:
        """J_cd for every draw, (n_draws, size_c, size_d)."""
        if c > d:
            return np.swapaxes(self(d, c), 1, 2)
        t = self._index[c, d]
        block = self._flat[:, self._offset[t] : self._offset[t + 1]]
        return block.reshape(-1, self.sizes[c], self.sizes[d])

    def block(self, rows: list[int], cols: list[int]) -> np.ndarray:
        return np.concatenate(
            [np.concatenate([self(d, c) for c in cols], axis=2) for d in rows], axis=1
        )


def _moment_pass(
    P: np.ndarray,
    tables: _Tables,
    n_components: int | None,
    flagged: list[tuple[int, int]],
) -> tuple[np.ndarray, ...]:
    """Per pair and draw: observed minus predicted agreement (one pass).

    Under conditional independence every joint table of two LFs (abstain included
    as a category) is J_cd = mu_c W mu_d^T with W = diag(prior) of rank k, so for
    disjoint sets O1, O2 of the other LFs J_ab = J_{a,O1} (J_{O2,O1})^+ J_{O2,b}
    exactly (the multi-view identity; the tetrad constraints for k = 1). The
    prediction never reads the pair's own table, so a copying pair cannot absorb its
    own excess. Both orientations (O1, O2) and (O2, O1) are averaged. The rank kept
    in the pseudo-inverse is chosen on the data (draw 0) and held fixed over the
    resamples, so that the resampled differences are the same smooth function of the
    pattern frequencies.

    Returns
    -------
    a_idx, b_idx : ndarray of int of shape (n_pairs,)
    n_both : ndarray of shape (n_pairs,)
        Rows where both LFs vote (data).
    agree : ndarray of shape (n_draws, n_pairs)
        P(lambda_a = lambda_b, both vote) per draw.
    pred : ndarray of shape (n_draws, n_pairs)
        Its prediction from the other LFs (NaN where no split exists).
    """
    m = P.shape[1]
    n = float(tables.n[0])
    a_idx, b_idx = _pairs(m)
    n_draws = tables.n.size
    agree = np.full((n_draws, a_idx.size), np.nan)
    pred = np.full((n_draws, a_idx.size), np.nan)
    n_both = np.zeros(a_idx.size)
    vals = tables.vals
    for t, (a, b) in enumerate(zip(a_idx, b_idx, strict=True)):  # m(m-1)/2 pairs
        # H marks the (vote of a, vote of b) cells where they agree on a label.
        H = (vals[a][:, None] == vals[b][None, :]) & (vals[a] != ABSTAIN)[:, None]
        voted = (vals[a] != ABSTAIN)[:, None] & (vals[b] != ABSTAIN)[None, :]
        J = tables(a, b)
        n_both[t] = float(J[0][voted].sum()) * n
        agree[:, t] = (J * H).sum(axis=(1, 2))
        split = _halves([c for c in range(m) if c not in (a, b)], a, b, flagged)
        if n_both[t] == 0 or split is None:
            continue
        O1, O2 = split
        G = _batched_pinv(tables.block(O2, O1), n, n_components)  # (B, |O1|, |O2|)
        Gt = np.swapaxes(G, 1, 2)  # pinv(A^T) = pinv(A)^T: the other orientation
        total = np.zeros(n_draws)
        for X1, X2, Gi in ((O1, O2, G), (O2, O1, Gt)):  # both orientations, averaged
            left = np.matmul(tables.block([a], X1), Gi)
            total += 0.5 * (np.matmul(left, tables.block(X2, [b])) * H).sum(axis=(1, 2))
        pred[:, t] = total
    return a_idx, b_idx, n_both, agree, pred


def _bootstrap_z(diff: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Bias-corrected, studentized statistics and their resampled null copies.

    Parameters
    ----------
    diff : ndarray of shape (n_draws, n_pairs)
        Row 0: the data's statistic (positive = closer than independence); rows 1..:
        the same statistic on resamples of the rows.

    Returns
    -------
    z : ndarray of shape (n_pairs,)
        (d - bias) / se with bias = median(d*) - d and se = sd(d*).
    z_null : ndarray of shape (n_draws - 1, n_pairs)
        (d* - median(d*)) / se: the resampled distribution of the statistic around
        its centre, the bootstrap image of z under the null.
    """
    d0, boot = diff[0], diff[1:]
    # a resample where a pair's prediction is undefined is left out of its stats
    centre = _column_nan_stat(np.nanmedian, boot, min_count=1)
    se = _column_nan_stat(functools.partial(np.nanstd, ddof=1), boot, min_count=2)
    with np.errstate(invalid="ignore", divide="ignore"):
        se = np.where(se > 0, se, np.nan)
        z = (2.0 * d0 - centre) / se
        z_null = (boot - centre) / se
    return z, z_null


def _column_nan_stat(stat: Any, x: np.ndarray, *, min_count: int) -> np.ndarray:
    """``stat(x, axis=0)`` ignoring NaN; NaN where a column has < min_count numbers.

    (numpy's nan-functions would warn on those columns, and silencing that warning
    needs the process-wide ``warnings.catch_warnings``.)
    """
    ok = np.count_nonzero(~np.isnan(x), axis=0) >= min_count
    out = np.full(x.shape[1], np.nan)
    if ok.any():
        out[ok] = stat(x[:, ok], axis=0)
    return out


def _max_t_step_down(
    z: np.ndarray, z_null: np.ndarray, open_: np.ndarray, alpha: float
) -> int | None:
    """The open pair to flag at this step of the max-T procedure, or None.

    The most significant open pair is flagged when its z exceeds the 1 - alpha
    quantile of max over the open pairs of the resampled null statistics
    (Westfall-Young / Romano-Wolf): under the complete null the first step
    rejects with probability about alpha whatever the correlation between pairs.
    """
    usable = open_ & np.isfinite(z)
    if not usable.any() or z_null.shape[0] == 0:
        return None
    t = int(np.argmax(np.where(usable, z, -np.inf)))
    max_null = np.nanmax(np.where(usable, z_null, -np.inf), axis=1)
    # conservative finite-sample p-value of the max: (1 + #{M* >= z}) / (B + 1)
    p_family = (1.0 + np.sum(max_null >= z[t])) / (max_null.size + 1.0)
    return t if p_family <= alpha else None


def _moment_test(
    L: np.ndarray,
    n_labels: int,
    n_components: int | None,
    alpha: float = 0.05,
    n_boot: int = 200,
    seed: Any = 0,
) -> tuple[np.ndarray, ...]:
    """Forward selection with a bootstrap max-T criterion.

    The pattern counts are resampled ``n_boot`` times (multinomial, i.e. rows
    drawn with replacement); every pair's observed-minus-predicted agreement is
    recomputed on each resample with the same splits and ranks. Each pair's
    statistic is studentized by its resampled standard deviation, after removing
    the resampled bias (the pseudo-inverse of a noisy table is biased). The most
    significant open pair is flagged while it beats the 1 - alpha quantile of the
    resampled max over open pairs; a flagged pair leaves the other pairs'
    predictions, which are recomputed (on the same resamples) before the next step.
    """
    stats = VoteStats.from_label_matrix(L, n_labels=n_labels)
    P, w = np.asarray(stats.patterns), np.asarray(stats.counts, dtype=np.float64)
    rng = np.random.default_rng(seed)
    n = int(round(w.sum()))
    draws = rng.multinomial(n, w / w.sum(), size=n_boot).astype(np.float64)
    tables = _Tables(P, np.vstack([w[None, :], draws]))
    flagged: list[tuple[int, int]] = []
    while True:
        a, b, n_both, agree, pred = _moment_pass(P, tables, n_components, flagged)
        z, z_null = _bootstrap_z(agree - pred)
        open_ = np.array([(x, y) not in flagged for x, y in zip(a, b, strict=True)])
        t = _max_t_step_down(z, z_null, open_, alpha)
        if t is None:
            break
        flagged.append((int(a[t]), int(b[t])))
    diff = agree - pred
    # the bias-corrected prediction: observed minus the bias-corrected difference
    bias = _column_nan_stat(np.nanmedian, diff[1:], min_count=1) - diff[0]
    with np.errstate(invalid="ignore", divide="ignore"):
        obs = agree[0] / (n_both / n)
        exp = (pred[0] - bias) / (n_both / n)
    return a, b, n_both, obs, exp, z, flagged


# -- manifolds ---------------------------------------------------------------------------
def _pair_invariants(kind: str, X: np.ndarray, a: np.ndarray, b: np.ndarray):
    """(n, n_pairs) invariant per row and pair: d^2, cos d or cosh d (NaN on abstains)."""
    xa, xb = X[:, a, :], X[:, b, :]
    if kind == "euclidean":
        diff = xa - xb
        return np.einsum("npi,npi->np", diff, diff)
    if kind == "sphere":  # cos d = <x_a, x_b> for unit vectors
        return np.clip(np.einsum("npi,npi->np", xa, xb), -1.0, 1.0)
    # hyperbolic: cosh d = -<x_a, x_b>_Lorentz
    lor = np.einsum("npi,npi->np", xa, xb) - 2.0 * xa[..., 0] * xb[..., 0]
    return np.maximum(-lor, 1.0)


def _manifold_test(
    X: np.ndarray, kind: str, alpha: float, n_boot: int = 200, seed: Any = 0
) -> tuple[Any, ...]:
    """Forward selection with the bootstrap max-T criterion of :func:`_moment_test`.

    Rows are resampled ``n_boot`` times (multinomial counts); each pair's residual
    is recomputed on every resample with the same least-squares weights, and
    flagged pairs leave the fits of the others.
    """
    n, m, _ = X.shape
    a_idx, b_idx = _pairs(m)
    voted = ~np.isnan(X).all(axis=-1)
    both = voted[:, a_idx] & voted[:, b_idx]  # (n, n_pairs)
    with np.errstate(invalid="ignore"):
        g = np.where(both, _pair_invariants(kind, X, a_idx, b_idx), 0.0)
    rng = np.random.default_rng(seed)
    weights = np.vstack(
        [np.ones((1, n)), rng.multinomial(n, np.full(n, 1.0 / n), size=n_boot)]
    )
    # Per draw and pair: the number of co-voting rows and the sum of the invariant.
    counts = weights @ both.astype(np.float64)
    sums = weights @ g
    flagged: list[int] = []
    while True:
        n_both, mean, expected, diff = _manifold_pass(
            g, both, counts, sums, kind, flagged
        )
        z, z_null = _bootstrap_z(diff)
        open_ = ~np.isin(np.arange(a_idx.size), flagged)
        t = _max_t_step_down(z, z_null, open_, alpha)
        if t is None:
            break
        flagged.append(t)
    pairs = [(int(a_idx[t]), int(b_idx[t])) for t in flagged]
    return a_idx, b_idx, n_both, mean, expected, z, pairs


def _manifold_pass(
    g: np.ndarray,
    both: np.ndarray,
    counts: np.ndarray,
    sums: np.ndarray,
    kind: str,
    excluded: list[int],
) -> tuple[np.ndarray, ...]:
    """Each pair's residual from the identity fitted on the other pairs, per draw.

    Parameters
    ----------
    g, both : ndarray of shape (n, n_pairs)
        Per-row invariant (0 where the pair does not co-vote) and co-vote mask.
    counts, sums : ndarray of shape (n_draws, n_pairs)
        Co-voting rows and the invariant's sum per draw (row 0: the data).
    excluded : list of int
        Flagged pairs, left out of every fit.

    Returns
    -------
    n_both, mean, expected : ndarray of shape (n_pairs,)
        Data: co-voting rows, mean invariant, its prediction from the other pairs.
    diff : ndarray of shape (n_draws, n_pairs)
        Residual per draw, signed so that positive = closer than independence.
    """
    n, n_pairs = g.shape
    m = int(round((1 + np.sqrt(1 + 8 * n_pairs)) / 2))
    a_idx, b_idx = _pairs(m)
    n_both = counts[0]
    with np.errstate(invalid="ignore", divide="ignore"):
        means = sums / counts  # (n_draws, n_pairs)
    mean = means[0]
    log_scale = kind != "euclidean"
    usable = n_both >= 2
    # Influence of each row on each pair's mean, for the least-squares weights only.
    with np.errstate(invalid="ignore", divide="ignore"):
        infl = np.where(both, g - mean, 0.0) * (n / n_both)
    if log_scale:
        usable &= mean > 0  # a sphere pair at mean cos <= 0 carries no product
        with np.errstate(invalid="ignore", divide="ignore"):
            h = np.log(np.where(means > 0, means, np.nan))
            infl = infl / mean  # delta method for log(mean)
    else:
        h = means
    infl = np.where(usable, infl, 0.0)
    var_h = (infl**2).sum(axis=0) / n**2
    usable &= var_h > 0
    design = np.zeros((n_pairs, m))
    design[np.arange(n_pairs), a_idx] = 1.0
    design[np.arange(n_pairs), b_idx] = 1.0
    w_ls = np.where(usable, 1.0 / np.where(usable, var_h, 1.0), 0.0)
    w_ls[excluded] = 0.0  # flagged pairs never predict the others
    h0 = np.where(usable, h, 0.0)
    h0 = np.where(np.isfinite(h0), h0, 0.0)
    coef = np.zeros((n_pairs, n_pairs))  # residual of pair t = coef[t] @ h
    ok = np.zeros(n_pairs, dtype=bool)
    for t in range(n_pairs):  # m(m-1)/2 small least-squares problems
        if not usable[t]:
            continue
        w = w_ls.copy()
        w[t] = 0.0
        Bw = design * w[:, None]
        gram = design.T @ Bw
        # The other pairs must identify every LF term (m >= 4 with all pairs seen).
        if np.linalg.matrix_rank(gram, tol=1e-10 * np.abs(gram).max()) < m:
            continue
        fit_row = design[t] @ np.linalg.solve(gram, Bw.T)  # prediction from others
        coef[t] = -fit_row
        coef[t, t] += 1.0
        ok[t] = True
    resid = h0 @ coef.T  # (n_draws, n_pairs)
    expected = np.where(ok, h0[0] - resid[0], np.nan)
    if log_scale:
        expected = np.exp(expected)
    # "Too close": smaller d^2 (Euclidean) / cosh d (hyperbolic), larger cos d (sphere).
    sign = 1.0 if kind == "sphere" else -1.0
    diff = np.where(ok, sign * resid, np.nan)
    return n_both, mean, expected, diff


# -- public ------------------------------------------------------------------------------
def lf_dependency_test(
    L: Any,
    label_model: Any = None,
    *,
    space: Any = None,
    alpha: float = 0.05,
    lf_names: Any = None,
    method: str = "moments",
    n_components: int | None = None,
    n_boot: int = 200,
    seed: Any = 0,
) -> pd.DataFrame:
    """Test every pair of LFs for agreeing more than conditional independence allows.

    Parameters
    ----------
    L : array-like of shape (n_samples, n_lfs) or (n_samples, n_lfs, ambient_dim)
        Votes: label indices (-1 = abstain) for a finite space, points (a row of
        NaN = abstain) for a manifold. At least 4 LFs.
    label_model : fitted StructuredLabelModel, optional
        Finite spaces. ``method="moments"``: only its support size is read (the rank
        of the joint tables). ``method="model"``: the conditionally independent null
        model, fitted on ``L`` without declared dependencies (when omitted,
        :func:`default_null_model` is fitted). Manifolds need no model.
    space : label space, optional
        Finite space or ``Euclidean``/``Sphere``/``Hyperbolic``. Defaults to
        ``label_model.space``.
    alpha : float in (0, 1), default=0.05
        Family-wise false-alarm rate over all m (m - 1) / 2 pairs: bootstrap max-T
        step-down ("moments" and manifolds), Holm's procedure ("model").
    lf_names : sequence, optional
        Names for the ``lf_a``/``lf_b`` columns (default: LF indices).
    method : {"moments", "model"}, default="moments"
        Finite spaces only. "moments": each pair's joint table is predicted from the
        other LFs' tables by the multi-view identity (no model fit; a copying pair
        cannot absorb its own excess), with step-down selection over pairs. "model":
        a score test against a fitted label model, P(agree | other LFs' votes) per
        row; exact given the model, but a fitted model absorbs a strong dependency
        into the pair's accuracies and then flags the wrong pairs (measured).
    n_components : int, optional
        Rank of the joint tables ("moments"): the number of labels with prior mass.
        Default: ``len(space)`` for ``Discrete``, ``label_model.support_.size`` when
        a model is given, else the support size of :func:`default_null_model`
        fitted on ``L``.
    n_boot : int, default=200
        Row resamples (multinomial pattern counts) for the bias correction, the
        standard errors and the max-T critical value ("moments" and manifolds).
        At least ``ceil(1 / alpha) - 1``; the critical value is the 1 - alpha
        quantile of n_boot maxima, so fewer than about 200 makes it noisy.
    seed : None, int or numpy.random.Generator, default=0
        Randomness of those resamples.

    Returns
    -------
    result : pandas.DataFrame
        One row per pair a < b: ``lf_a``, ``lf_b``, ``n_both`` (rows where both
        vote), ``observed`` and ``expected`` (finite: agreement rate P(lambda_a =
        lambda_b) and its expectation under the model given the other LFs' votes;
        manifolds: mean ``d^2`` (Euclidean), ``cos d`` (sphere) or ``cosh d``
        (hyperbolic) and what the other pairs predict for it), ``z`` (positive =
        closer than independence allows; bias-corrected and studentized by the
        resamples), one-sided per-pair ``p_value`` (normal tail of ``z``, not
        adjusted for multiplicity), and ``dependent`` (flagged by the max-T
        step-down procedure of the module docstring, family-wise at ``alpha``;
        flagged pairs leave the other pairs' predictions). A pair that never
        co-votes, or whose terms the other pairs do not identify, has NaN ``z``
        and is not flagged.

    Raises
    ------
    ValueError
        Fewer than 4 LFs (pairwise statistics then do not over-identify an
        independent model), a label model fitted on another space or another number
        of LFs, a label model passed for a manifold, bad ``alpha`` or ``lf_names``.
    TypeError
        If ``space`` is neither a finite space nor a supported manifold.

    Notes
    -----
    See the module docstring for the statistics and the calibration. Measured
    false-alarm rates and power: ``benchmarks/bench_dependency_test.py``. The
    resampling calibration is asymptotic: where a cross-table of the other LFs is
    nearly singular (weak LFs) the resamples under-state the spread of the
    prediction (about 10% in the standard error, measured on Discrete(2), m = 4),
    so the false-alarm rate there exceeds alpha.

    Examples
    --------
    >>> import numpy as np, snorkel_structured as ss
    >>> d = ss.synthetic.make_label_matrix(
    ...     5000, space=ss.Discrete(3), theta=[1.0, 1.2, 1.5, 0.8],
    ...     prior=[0.3, 0.3, 0.4], seed=0)
    >>> L = d.L.copy()
    >>> copy = np.random.default_rng(0).random(len(L)) < 0.5
    >>> L[copy, 3] = L[copy, 0]                       # LF 3 copies LF 0 half the time
    >>> res = lf_dependency_test(L, space=ss.Discrete(3))
    >>> dependent_pairs(res)
    [(0, 3)]
    """
    alpha = check_scalar(
        alpha, "alpha", low=0.0, high=1.0, low_inclusive=False, high_inclusive=False
    )
    if method not in ("moments", "model"):
        raise ValueError(f"method must be 'moments' or 'model'; got {method!r}.")
    if space is None:
        if label_model is None:
            raise ValueError(
                "Pass space (the label space of L) or a fitted label_model."
            )
        space = label_model.space
    if _is_finite_space(space):
        Lc = check_label_matrix(L, n_labels=len(space), name="L")
        m = Lc.shape[1]
    else:
        kind = _manifold_kind(space)
        if label_model is not None:
            raise ValueError(
                "The manifold test needs no label model (it compares the LFs' pairwise "
                "statistics with each other); pass label_model=None."
            )
        X = check_manifold_outputs(L, space, name="L")
        m = X.shape[1]
    if m < MIN_LFS:
        raise ValueError(
            f"The dependency test needs at least {MIN_LFS} labeling functions; L has "
            f"{m}. With 3 or fewer, the pairwise statistics are fully used up by the "
            "LFs' own accuracies and cannot reveal a dependency."
        )
    n_boot = check_scalar(n_boot, "n_boot", kind="int", low=1)
    if (method == "moments" or not _is_finite_space(space)) and alpha * (
        n_boot + 1
    ) < 1.0:
        raise ValueError(
            f"n_boot={n_boot} resamples cannot reach a family-wise p-value of "
            f"alpha={alpha} (the smallest is 1 / (n_boot + 1)); use n_boot >= "
            f"{int(np.ceil(1.0 / alpha)) - 1}, or 200 or more for a stable quantile."
        )
    names = None
    if lf_names is not None:
        names = list(lf_names)
        if len(names) != m:
            raise ValueError(
                f"lf_names has {len(names)} names but L has {m} labeling functions."
            )
    if _is_finite_space(space) and method == "moments":
        if label_model is not None:
            _check_label_model(label_model, space, m)
        if n_components is None:
            if label_model is not None:
                n_components = int(np.asarray(label_model.support_).size)
            elif type(space).__name__ == "Discrete":
                n_components = len(space)
            else:  # the rank is the support size of a fitted independent model
                with _warnings.captured():
                    lm = default_null_model(space).fit(Lc)
                n_components = int(np.asarray(lm.support_).size)
        else:
            n_components = check_scalar(n_components, "n_components", kind="int", low=1)
        *out, flagged = _moment_test(Lc, len(space), n_components, alpha, n_boot, seed)
        res = _result_frame(*out, alpha=alpha, lf_names=names)
        a_idx, b_idx = _pairs(m)
        res["dependent"] = [
            (int(x), int(y)) in flagged for x, y in zip(a_idx, b_idx, strict=True)
        ]
        return res
    if _is_finite_space(space):
        if label_model is None:
            with _warnings.captured():
                # the null model's own fit diagnostics are not the test's business
                label_model = default_null_model(space).fit(Lc)
        _check_label_model(label_model, space, m)
        _, log_prior, log_vote, abstain = null_model_tables(label_model, space)
        stats = VoteStats.from_label_matrix(Lc, n_labels=len(space))
        out = _finite_test(stats, log_prior, log_vote, abstain)
        return _result_frame(*out, alpha=alpha, lf_names=names)
    *out, flagged = _manifold_test(X, kind, alpha, n_boot, seed)
    res = _result_frame(*out, alpha=alpha, lf_names=names)
    a_idx, b_idx = _pairs(m)
    res["dependent"] = [
        (int(x), int(y)) in flagged for x, y in zip(a_idx, b_idx, strict=True)
    ]
    return res


def dependent_pairs(result: pd.DataFrame) -> list[tuple[Any, Any]]:
    """The pairs flagged by :func:`lf_dependency_test`, as a list of (a, b) tuples.

    With integer LF indices (the default) the list is ready for
    ``StructuredLabelModel.fit(L, dependencies=...)``.

    Parameters
    ----------
    result : pandas.DataFrame
        The output of :func:`lf_dependency_test` (or
        ``StructuredLFAnalysis.lf_dependencies``).

    Returns
    -------
    pairs : list of tuple
        Sorted by increasing p-value.
    """
    missing = [c for c in ("lf_a", "lf_b", "dependent", "p_value") if c not in result]
    if missing:
        raise ValueError(
            f"result must be the DataFrame of lf_dependency_test; it lacks columns "
            f"{missing}."
        )
    flagged = result[result["dependent"].astype(bool)].sort_values(
        "p_value", kind="stable"
    )
    return [
        (_plain(a), _plain(b))
        for a, b in zip(flagged["lf_a"].tolist(), flagged["lf_b"].tolist(), strict=True)
    ]


def _plain(v: Any) -> Any:
    return int(v) if isinstance(v, (np.integer,)) else v
