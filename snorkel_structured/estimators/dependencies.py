"""Detect pairs of labeling functions that agree more than conditional independence allows.

The structured analogue of dependency structure learning for Snorkel (Varma et al., ICML
2019): with m >= 4 LFs the pairwise LF-LF statistics over-identify a conditionally
independent model, so a pair that is *too close* (copies, shared sources) shows up as
a residual the independent model cannot explain.

**Finite spaces.** Given a fitted independent model (prior, per-LF vote tables,
abstain rates), on each row where LFs a and b both vote the indicator
``1(lambda_a = lambda_b)`` is, under H0 and given the other LFs' votes, a Bernoulli with

    p_i = sum_y q_i(y) (1 - alpha_a(y)) (1 - alpha_b(y)) sum_v P_a(v | y) P_b(v | y)
          / sum_y q_i(y) (1 - alpha_a(y)) (1 - alpha_b(y)),

``q_i`` the posterior of Y from the prior and the *other* LFs' votes (abstains
included), ``alpha`` the abstain rates and ``P_a(v | y)`` LF a's vote distribution
given that it votes. The indicators are independent across rows, so
``z = sum_i [1(agree_i) - p_i] / sqrt(sum_i p_i (1 - p_i))`` is standard normal under
H0 when the model's parameters are the truth. With the parameters fitted by maximum
likelihood on the same rows, the statistic loses its projection on the score, so its
variance is at most the naive one: the test is conservative (measured in
``benchmarks/bench_dependency_test.py``). Everything runs on unique vote patterns with
counts and on the support's labels only, so nothing of size (r, r) is built.

**Manifolds.** Independent isotropic noise around the same Y gives an exact identity
per pair: ``E d^2(lambda_a, lambda_b) = e_a + e_b`` in Euclidean space, and
``E cos d = A_a A_b`` (sphere), ``E cosh d = A_a A_b`` (hyperbolic) by the spherical
and hyperbolic laws of cosines. For each pair the per-LF terms are fitted by weighted
least squares on all *other* pairs (in logs for the products); the pair's residual is
a fixed linear combination of pair means (of their logs), so its standard error
follows from per-row influence functions. No label model is needed.

Both tests are one-sided (only "too close" is a dependency) and Holm's step-down
procedure over the m (m - 1) / 2 pairs controls the family-wise false-alarm rate at
``alpha``.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd
from scipy.special import logsumexp
from scipy.stats import norm

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
def _joint(P: np.ndarray, w: np.ndarray, codes: list[np.ndarray], sizes, c, d):
    """Joint frequency table of LFs c, d over all rows (abstain = a category)."""
    flat = np.bincount(
        codes[c] * sizes[d] + codes[d], weights=w, minlength=sizes[c] * sizes[d]
    )
    return flat.reshape(sizes[c], sizes[d])


def _pinv_rank(A: np.ndarray, n: float, n_components: int | None) -> np.ndarray:
    """Pseudo-inverse of A on its signal directions (rank <= n_components).

    Directions whose singular value is below the sampling noise of a frequency table
    of n rows (about 2 (sqrt(R) + sqrt(C)) sqrt(max entry / n)) are dropped: they
    would only amplify noise, and the model's rank is at most the number of labels
    with prior mass.
    """
    U, sv, Vt = np.linalg.svd(A, full_matrices=False)
    floor = 2.0 * (np.sqrt(A.shape[0]) + np.sqrt(A.shape[1]))
    floor *= np.sqrt(max(float(A.max()), 0.0) / n)
    if n_components is not None:
        k = min(int(n_components), int((sv > 1e-12 * sv[0]).sum()))
    else:
        k = int((sv > max(floor, 1e-12 * sv[0])).sum())
    k = max(k, 1)
    return (Vt[:k].T / sv[:k]) @ U[:, :k].T


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


def _moment_pass(
    P: np.ndarray,
    w: np.ndarray,
    n_components: int | None,
    flagged: list[tuple[int, int]],
    n_boot: int,
    rng: np.random.Generator,
) -> tuple[np.ndarray, ...]:
    """Per pair: n_both, observed and predicted agreement rates, z (one pass).

    Under conditional independence every joint table of two LFs (abstain included
    as a category) is J_cd = mu_c W mu_d^T with W = diag(prior) of rank k, so for
    disjoint sets O1, O2 of the other LFs J_ab = J_{a,O1} (J_{O2,O1})^+ J_{O2,b}
    exactly (the multi-view identity; the tetrad constraints for k = 1). The
    prediction never reads the pair's own table, so a copying pair cannot absorb its
    own excess; its error is a smooth function of pattern frequencies, so the
    variance comes from per-pattern influence values (delta method). The
    pseudo-inverse of a noisy table is biased (noise inflates its singular values);
    ``n_boot`` multinomial resamples of the pattern counts estimate that bias.
    """
    n = float(w.sum())
    m = P.shape[1]
    vals, codes = [], []
    for c in range(m):  # each LF's alphabet: the values it used (abstain included)
        v, inv = np.unique(P[:, c], return_inverse=True)
        vals.append(v)
        codes.append(inv.ravel())
    sizes = [v.size for v in vals]

    def tables(weights: np.ndarray) -> dict:
        cache: dict = {}

        def joint(c: int, d: int) -> np.ndarray:
            if (c, d) not in cache:
                cache[c, d] = _joint(P, weights, codes, sizes, c, d) / n
            return cache[c, d]

        return joint

    def block(joint, rows, cols) -> np.ndarray:
        return np.block([[joint(d, c) for c in cols] for d in rows])

    boots = [
        tables(rng.multinomial(int(round(n)), w / n).astype(np.float64))
        for _ in range(n_boot)
    ]
    joint0 = tables(w)
    a_idx, b_idx = _pairs(m)
    n_pairs = a_idx.size
    out_obs, out_exp, out_z = (np.full(n_pairs, np.nan) for _ in range(3))
    n_both = np.zeros(n_pairs)
    for t, (a, b) in enumerate(zip(a_idx, b_idx, strict=True)):
        both = (P[:, a] != ABSTAIN) & (P[:, b] != ABSTAIN)
        nb = float(w[both].sum())
        n_both[t] = nb
        split = _halves([c for c in range(m) if c not in (a, b)], a, b, flagged)
        if nb == 0 or split is None:
            continue
        agree = both & (P[:, a] == P[:, b])
        # H marks the (vote of a, vote of b) cells where they agree on a label.
        H = (vals[a][:, None] == vals[b][None, :]) & (vals[a] != ABSTAIN)[:, None]
        H = H.astype(np.float64)
        pred = 0.0
        boot_pred = np.zeros(n_boot)
        psi = agree.astype(np.float64)  # influence of the observed agreement mass
        for O1, O2 in (split, split[::-1]):  # both orientations, averaged
            XA, XB, A = (
                block(joint0, [a], O1),
                block(joint0, O2, [b]),
                block(joint0, O2, O1),
            )
            G = _pinv_rank(A, n, n_components)
            left, right = XA @ G, G @ XB
            pred += 0.5 * float((H * (left @ XB)).sum())
            for i, jb in enumerate(boots):
                Gb = _pinv_rank(block(jb, O2, O1), n, n_components)
                boot_pred[i] += 0.5 * float(
                    (H * (block(jb, [a], O1) @ Gb @ block(jb, O2, [b]))).sum()
                )
            # d pred = <dXA, H right^T> + <dXB, left^T H> - <dA, left^T H right^T>
            coef_a = 0.5 * H @ right.T
            coef_b = 0.5 * left.T @ H
            coef_o = -0.5 * left.T @ H @ right.T
            col = np.cumsum([0] + [sizes[c] for c in O1])
            row = np.cumsum([0] + [sizes[d] for d in O2])
            for j, c in enumerate(O1):
                psi -= coef_a[codes[a], col[j] + codes[c]]
                for i, d in enumerate(O2):
                    psi -= coef_o[row[i] + codes[d], col[j] + codes[c]]
            for i, d in enumerate(O2):
                psi -= coef_b[row[i] + codes[d], codes[b]]
        if n_boot:  # bootstrap bias correction of the prediction
            pred = 2.0 * pred - float(boot_pred.mean())
        obs = float(w @ agree) / n
        psi -= w @ psi / n  # centre: the influence values average to zero
        se = np.sqrt(float(w @ psi**2)) / n
        out_obs[t] = obs * n / nb
        out_exp[t] = pred * n / nb
        out_z[t] = (obs - pred) / se if se > 0 else np.nan
    return a_idx, b_idx, n_both, out_obs, out_exp, out_z


def _moment_test(
    L: np.ndarray,
    n_labels: int,
    n_components: int | None,
    alpha: float = 0.05,
    n_boot: int = 20,
    seed: Any = 0,
) -> tuple[np.ndarray, ...]:
    """Forward selection: flag the most significant pair, re-test the rest, repeat.

    A copying pair also distorts the predictions that read its table; once it is
    flagged, the splits keep it out of the other pairs' predictions. The first step
    is a Bonferroni test over all pairs, so under independence the family-wise
    false-alarm rate is at most alpha; step s uses alpha / (n_pairs - s) (Holm).
    """
    stats = VoteStats.from_label_matrix(L, n_labels=n_labels)
    P, w = np.asarray(stats.patterns), np.asarray(stats.counts, dtype=np.float64)
    flagged: list[tuple[int, int]] = []
    rng = np.random.default_rng(seed)
    while True:
        a, b, n_both, obs, exp, z = _moment_pass(
            P, w, n_components, flagged, n_boot, rng
        )
        p_value = norm.sf(z)
        open_ = np.array([(x, y) not in flagged for x, y in zip(a, b, strict=True)])
        n_open = int((open_ & ~np.isnan(p_value)).sum())
        if n_open == 0:
            break
        cand = np.where(open_, np.nan_to_num(p_value, nan=np.inf), np.inf)
        t = int(np.argmin(cand))
        if cand[t] > alpha / n_open:
            break
        flagged.append((int(a[t]), int(b[t])))
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


def _manifold_test(X: np.ndarray, kind: str, alpha: float) -> tuple[Any, ...]:
    """Forward selection as in :func:`_moment_test`: flagged pairs leave the fits."""
    flagged: list[int] = []
    while True:
        a, b, n_both, mean, expected, z = _manifold_pass(X, kind, flagged)
        p_value = norm.sf(z)
        open_ = ~np.isin(np.arange(a.size), flagged) & ~np.isnan(p_value)
        if not open_.any():
            break
        cand = np.where(open_, p_value, np.inf)
        t = int(np.argmin(cand))
        if cand[t] > alpha / int(open_.sum()):
            break
        flagged.append(t)
    pairs = [(int(a[t]), int(b[t])) for t in flagged]
    return a, b, n_both, mean, expected, z, pairs


def _manifold_pass(
    X: np.ndarray, kind: str, excluded: list[int]
) -> tuple[np.ndarray, ...]:
    n, m, _ = X.shape
    a_idx, b_idx = _pairs(m)
    n_pairs = a_idx.size
    voted = ~np.isnan(X).all(axis=-1)
    both = voted[:, a_idx] & voted[:, b_idx]  # (n, n_pairs)
    with np.errstate(invalid="ignore"):
        g = _pair_invariants(kind, X, a_idx, b_idx)
    g = np.where(both, g, 0.0)
    n_both = both.sum(axis=0).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = g.sum(axis=0) / n_both
    centered = np.where(both, g - mean, 0.0)
    # Influence of each row on each pair's mean: (g_i - mean) 1[both] n / n_both.
    with np.errstate(invalid="ignore", divide="ignore"):
        infl = centered * (n / n_both)
    log_scale = kind != "euclidean"
    usable = n_both >= 2
    if log_scale:
        usable &= mean > 0  # a sphere pair at mean cos <= 0 carries no product
        with np.errstate(invalid="ignore", divide="ignore"):
            h = np.log(mean)
            infl = infl / mean  # delta method for log(mean)
    else:
        h = mean
    infl = np.where(usable, infl, 0.0)
    var_h = (infl**2).sum(axis=0) / n**2
    usable &= var_h > 0
    design = np.zeros((n_pairs, m))
    design[np.arange(n_pairs), a_idx] = 1.0
    design[np.arange(n_pairs), b_idx] = 1.0
    weights = np.where(usable, 1.0 / np.where(usable, var_h, 1.0), 0.0)
    weights[excluded] = 0.0  # flagged pairs never predict the others
    h0 = np.where(usable, h, 0.0)
    coef = np.zeros((n_pairs, n_pairs))  # residual of pair t = coef[t] @ h
    expected = np.full(n_pairs, np.nan)
    ok = np.zeros(n_pairs, dtype=bool)
    for t in range(n_pairs):  # m(m-1)/2 small least-squares problems
        if not usable[t]:
            continue
        w = weights.copy()
        w[t] = 0.0
        Bw = design * w[:, None]
        gram = design.T @ Bw
        # The other pairs must identify every LF term (m >= 4 with all pairs seen).
        if np.linalg.matrix_rank(gram, tol=1e-10 * np.abs(gram).max()) < m:
            continue
        solve = np.linalg.solve(gram, Bw.T)  # (m, n_pairs): beta = solve @ h
        fit_row = design[t] @ solve  # prediction of pair t from the others
        coef[t] = -fit_row
        coef[t, t] += 1.0
        expected[t] = fit_row @ h0
        ok[t] = True
    resid = coef @ h0
    psi = infl @ coef.T  # (n, n_pairs): per-row influence on each residual
    se = np.sqrt((psi**2).sum(axis=0)) / n
    # "Too close": smaller d^2 (Euclidean) / cosh d (hyperbolic), larger cos d (sphere).
    sign = 1.0 if kind == "sphere" else -1.0
    with np.errstate(invalid="ignore", divide="ignore"):
        z = np.where(ok & (se > 0), sign * resid / se, np.nan)
    if log_scale:
        expected = np.exp(expected)
    return a_idx, b_idx, n_both, mean, expected, z


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
    n_boot: int = 20,
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
        Family-wise false-alarm rate over all pairs (Holm's procedure).
    lf_names : sequence, optional
        Names for the ``lf_a``/``lf_b`` columns (default: LF indices).
    method : {"moments", "model"}, default="moments"
        Finite spaces only. "moments": each pair's joint table is predicted from the
        other LFs' tables by the multi-view identity (no model fit; a copying pair
        cannot absorb its own excess), with forward selection over pairs. "model":
        a score test against a fitted label model, P(agree | other LFs' votes) per
        row; exact given the model, but a fitted model absorbs a strong dependency
        into the pair's accuracies and then flags the wrong pairs (measured).
    n_components : int, optional
        Rank of the joint tables ("moments"): the number of labels with prior mass.
        Default: ``len(space)`` for ``Discrete``, ``label_model.support_.size`` when
        a model is given, else the support size of :func:`default_null_model`
        fitted on ``L``.
    n_boot : int, default=20
        Multinomial resamples for the bias correction of "moments" (0: none).
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
        closer than independence allows), one-sided ``p_value``, and ``dependent``
        (flagged by forward selection: the most significant open pair is flagged
        while its p-value is below alpha over the number of open pairs; flagged
        pairs leave the other pairs' predictions). A pair that never co-votes, or
        whose terms the other pairs do not identify, has NaN ``z`` and is not
        flagged.

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
    See the module docstring for the statistics. The finite test is exact given the
    model's parameters and conservative when they are fitted (its variance shrinks);
    its power depends on the null model: a copying pair also inflates its own
    fitted accuracies, which the other LFs' votes pin down.

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
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    lm = default_null_model(space).fit(Lc)
                n_components = int(np.asarray(lm.support_).size)
        else:
            n_components = check_scalar(n_components, "n_components", kind="int", low=1)
        n_boot = check_scalar(n_boot, "n_boot", kind="int", low=0)
        *out, flagged = _moment_test(Lc, len(space), n_components, alpha, n_boot, seed)
        res = _result_frame(*out, alpha=alpha, lf_names=names)
        a_idx, b_idx = _pairs(m)
        res["dependent"] = [
            (int(x), int(y)) in flagged for x, y in zip(a_idx, b_idx, strict=True)
        ]
        return res
    if _is_finite_space(space):
        if label_model is None:
            with warnings.catch_warnings():
                # the null model's own fit diagnostics are not the test's business
                warnings.simplefilter("ignore")
                label_model = default_null_model(space).fit(Lc)
        _check_label_model(label_model, space, m)
        _, log_prior, log_vote, abstain = null_model_tables(label_model, space)
        stats = VoteStats.from_label_matrix(Lc, n_labels=len(space))
        out = _finite_test(stats, log_prior, log_vote, abstain)
        return _result_frame(*out, alpha=alpha, lf_names=names)
    *out, flagged = _manifold_test(X, kind, alpha)
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
