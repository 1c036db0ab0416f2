"""Noise-aware training for structured end models (paper section 4, appendix C).

A pseudolabel Z is made from a point's votes by a rule: the MAP (by default, so that the
pseudolabels are the labels ``predict`` returns) or a draw from the posterior (the
paper's rule). Under a noise model, Z given the true label Y has the transition
matrix Q_ij = P(Z = y_j | Y = y_i) over the support y_1..y_k. If Q is invertible, the
corrected loss sum_l (Q^-1)_jl d^2(t, y_l) of a point whose pseudolabel is y_j has
expectation d^2(t, y_i) when Y = y_i (Natarajan et al. 2013), for every candidate t.
The rows of Q^-1 are therefore per-point *loss weights*: feed them to any model that
trains on weighted targets, e.g. :class:`~snorkel_structured.KernelStructuredPredictor`.

This module depends only on the noise model (S, theta, prior, abstain rates), not on a
fitted label model, so the same functions computed with the true parameters give the
paper's P and with estimated ones its Q.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy.special import logsumexp
from tqdm import tqdm

from snorkel_structured import _warnings
from snorkel_structured._validation import (
    ABSTAIN,
    check_distance_matrix,
    check_distribution,
    check_label_matrix,
    check_scalar,
    check_seed,
)
from snorkel_structured.exceptions import IllConditionedWarning
from snorkel_structured.noise.finite import (
    log_conditional_probs,
    log_posterior,
    sample_votes,
)
from snorkel_structured.spaces.finite import FiniteMetricSpace

__all__ = ["NoiseMatrix", "loss_weights", "noise_matrix"]

RULES = ("auto", "map", "sample")
METHODS = ("auto", "exact", "monte_carlo")
PSEUDOLABEL = "pseudolabel"
# min_prior="auto": the labels above DEFAULT_MIN_PRIOR (the few-centers setting), unless
# they are fewer than 2 or hold less than AUTO_MIN_MASS of the prior (a prior spread
# over many labels, as the label model's default fit gives on real tasks: no label of
# Permutations(5) above 5% on 4 of 6 benchmark tasks). Then the heaviest labels up to
# AUTO_TARGET_MASS of the prior, at most AUTO_MAX_LABELS of them (Q by Monte Carlo
# costs about 1 s for 30 labels, 15 s for 117).
DEFAULT_MIN_PRIOR = 0.05
AUTO_MIN_MASS = 0.5
AUTO_TARGET_MASS = 0.9
AUTO_MAX_LABELS = 40


@dataclass(frozen=True, eq=False)
class NoiseMatrix:
    """Transition matrix of pseudolabels given the true label, over the support.

    Attributes
    ----------
    Q : ndarray of shape (k, k)
        ``Q[i, j] = P(pseudolabel = support[j] | Y = support[i])``; rows sum to one.
    inverse : ndarray of shape (k, k)
        ``Q^-1``; row j holds the loss weights of a point whose pseudolabel is
        ``support[j]``.
    support : ndarray of int64 of shape (k,)
        Label indices (into the space) that ``Q`` is indexed by.
    prior : ndarray of shape (k,)
        The prior renormalized on the support (used by the posterior).
    rule : {"map", "sample"}
        The pseudolabel rule ``Q`` describes (what ``rule="auto"`` chose).
    method : {"exact", "monte_carlo"}
        How ``Q`` was computed.
    std_error : ndarray of shape (k, k)
        Standard error of each entry of ``Q`` (zeros when exact).
    n_evaluated : int
        Vote patterns enumerated (exact) or votes drawn per true label (Monte Carlo).
    condition_number : float
        ``sigma_max(Q) / sigma_min(Q)``.
    sigma_min : float
        Smallest singular value of ``Q``; the paper's bound grows with
        ``kappa(Q) / sigma_min(Q)``.
    """

    Q: np.ndarray
    inverse: np.ndarray
    support: np.ndarray
    prior: np.ndarray
    rule: str
    method: str
    std_error: np.ndarray
    n_evaluated: int
    condition_number: float
    sigma_min: float

    @property
    def max_std_error(self) -> float:
        """Largest standard error over the entries of ``Q``."""
        return float(self.std_error.max())

    def __repr__(self) -> str:
        return (
            f"NoiseMatrix(k={self.support.size}, rule={self.rule!r}, "
            f"method={self.method!r}, condition_number={self.condition_number:.3g}, "
            f"max_std_error={self.max_std_error:.2g})"
        )


# -- inputs ---------------------------------------------------------------------------
def _distances_source(space: Any) -> tuple[Any, int]:
    """The space (kept as is: large spaces give rows on demand) or a validated (r, r) S."""
    if isinstance(space, FiniteMetricSpace):
        return space, len(space)
    S = np.asarray(space, dtype=np.float64)
    if S.ndim != 2 or S.shape[0] != S.shape[1] or S.shape[0] == 0:
        raise ValueError(
            "space must be a FiniteMetricSpace or an (r, r) matrix of squared "
            f"distances; got an array of shape {S.shape}."
        )
    # The same checks FiniteMetricSpace applies to its distances (finite, non-negative,
    # symmetric, zero diagonal): a NaN would otherwise surface as a LinAlgError from
    # Q's SVD, and negative or asymmetric entries would give a Q for no metric at all.
    # The validated copy is discarded so that valid matrices give exactly the Q they
    # gave before (the validator symmetrizes within its tolerance).
    check_distance_matrix(S, "space (a matrix of squared distances)", squared=True)
    return S, S.shape[0]


def _support_log_cond(
    source: Any, theta: np.ndarray, sup: np.ndarray, family: _Family | None = None
) -> np.ndarray:
    """log P(lambda_a = v | y) for y in the support only: (m, k, r), from S's k rows.

    ``family`` (power p, outlier rates eps (m,), outlier distributions h (m, r)):
    (1 - eps_a) exp(-theta_a d^p) / Z + eps_a h_a, as StructuredLabelModel fits it;
    or its full tables (``log_cond``), whose support rows are returned as they are.
    """
    if family is not None and family.log_cond is not None:
        return family.log_cond[:, sup, :]
    rows = (
        source.squared_distance_rows(sup)
        if isinstance(source, FiniteMetricSpace)
        else source[sup]
    )
    if family is not None and family.power != 2.0:
        rows = np.maximum(rows, 0.0) ** (family.power / 2.0)
    logc = log_conditional_probs(rows, theta if theta.ndim == 1 else theta[:, sup])
    if family is None or family.outlier_rate is None:
        return logc
    eps = family.outlier_rate[:, None, None]
    with np.errstate(divide="ignore"):
        return np.logaddexp(
            np.log1p(-eps) + logc, np.log(eps) + np.log(family.outlier_dist)[:, None, :]
        )


@dataclass(frozen=True)
class _Family:
    """A noise family other than the paper's (see :func:`_check_family`)."""

    power: float
    outlier_rate: np.ndarray | None
    outlier_dist: np.ndarray | None
    log_cond: np.ndarray | None = None


def _check_family(
    m: int,
    r: int,
    power: Any,
    outlier_rate: Any,
    outlier_dist: Any,
    log_cond: Any = None,
) -> _Family | None:
    if power not in (1, 2):
        raise ValueError(f"power must be 1 or 2; got {power!r}.")
    if log_cond is not None:
        table = np.asarray(log_cond, dtype=np.float64)
        with np.errstate(under="ignore"):
            sums = np.exp(table).sum(axis=2) if table.shape == (m, r, r) else None
        if sums is None or np.isnan(table).any() or not np.allclose(sums, 1.0):
            raise ValueError(
                f"log_cond must be an ({m}, {r}, {r}) array of log-probabilities "
                "[a, y, v] (each row summing to 1 in probability); got shape "
                f"{table.shape}."
            )
        if outlier_rate is not None:
            raise ValueError("give log_cond or outlier_rate, not both.")
        return _Family(float(power), None, None, table)
    if outlier_rate is None:
        return None if power == 2 else _Family(float(power), None, None)
    eps = np.asarray(outlier_rate, dtype=np.float64)
    h = np.asarray(outlier_dist, dtype=np.float64) if outlier_dist is not None else None
    if (
        eps.shape != (m,)
        or not np.isfinite(eps).all()
        or (eps < 0).any()
        or (eps >= 1).any()
    ):
        raise ValueError(
            f"outlier_rate must be {m} numbers in [0, 1) (one per LF); got {eps!r}."
        )
    if h is None or h.shape != (m, r) or (h < 0).any() or not np.allclose(h.sum(1), 1):
        raise ValueError(
            f"outlier_dist must be an ({m}, {r}) array of distributions (rows summing "
            "to 1) when outlier_rate is given."
        )
    return _Family(float(power), eps, h)


def _sample_from_tables(
    logc_row: np.ndarray, rates: np.ndarray, n: int, rng: np.random.Generator
) -> np.ndarray:
    """n vote rows for one true label from its (m, r) table; abstains at ``rates``."""
    cdf = np.cumsum(np.exp(logc_row), axis=1)  # (m, r)
    u = rng.random((n, logc_row.shape[0])) * cdf[:, -1]
    L = np.empty((n, logc_row.shape[0]), dtype=np.int64)
    for a in range(logc_row.shape[0]):  # m searchsorted calls over n draws
        L[:, a] = np.minimum(
            np.searchsorted(cdf[a], u[:, a], side="right"), cdf.shape[1] - 1
        )
    L[rng.random(L.shape) < rates[None, :]] = ABSTAIN
    return L


def _check_model(
    r: int, theta: Any, prior: Any, abstain: Any
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    th = np.asarray(theta, dtype=np.float64)
    if th.ndim not in (1, 2) or th.shape[0] == 0 or (th.ndim == 2 and th.shape[1] != r):
        raise ValueError(
            f"theta must have shape (n_lfs,) or (n_lfs, {r}); got {th.shape}."
        )
    if not np.isfinite(th).all():
        raise ValueError("theta must be finite; got NaN or inf.")
    p = check_distribution(
        prior,
        r,
        f"prior must be {r} non-negative finite numbers with a positive sum; got "
        f"shape {np.shape(prior)}.",
    )
    return th, p, _check_abstain(th.shape[0], abstain)


def _check_abstain(m: int, abstain: Any) -> np.ndarray:
    """Abstain rates as a fresh (m,) float64 array, each in [0, 1)."""
    rates = np.asarray(abstain, dtype=np.float64)
    if rates.ndim > 1 or (rates.ndim == 1 and rates.shape != (m,)):
        raise ValueError(
            f"abstain must be a float or have shape ({m},); got {rates.shape}."
        )
    rates = np.broadcast_to(rates, (m,)).copy()
    if not np.isfinite(rates).all() or ((rates < 0) | (rates >= 1)).any():
        raise ValueError(f"abstain rates must be in [0, 1); got {rates.tolist()}.")
    return rates


def _auto_support(prior: np.ndarray) -> np.ndarray:
    """Q's support for ``min_prior="auto"`` (see ``AUTO_MIN_MASS``), with a warning
    when the labels kept hold less than ``AUTO_TARGET_MASS`` of the prior."""
    sup = np.flatnonzero(prior > DEFAULT_MIN_PRIOR)
    if sup.size >= 2 and prior[sup].sum() >= AUTO_MIN_MASS:
        return sup.astype(np.int64)
    order = np.argsort(-prior, kind="stable")
    need = int(np.searchsorted(np.cumsum(prior[order]), AUTO_TARGET_MASS - 1e-12)) + 1
    k = min(need, AUTO_MAX_LABELS, max(int((prior > 0).sum()), 1))
    sup = np.sort(order[:k]).astype(np.int64)
    covered = float(prior[sup].sum())
    if covered < AUTO_TARGET_MASS - 1e-12:
        _warnings.warn(
            f"Q's support holds the {k} heaviest labels, {covered:.0%} of the prior "
            f"(the prior is spread over {int((prior > 0).sum())} labels): a row's "
            "pseudolabel is always one of them, so an end model trained on these "
            "weights never learns the others. Pass support= (or a lower min_prior) to "
            "widen it; Q's cost grows with the support.",
            UserWarning,
            stacklevel=4,
        )
    return sup


def _resolve_support(prior: np.ndarray, support: Any, min_prior: Any) -> np.ndarray:
    r = prior.shape[0]
    if support is None:
        if isinstance(min_prior, str):
            return _auto_support(prior)
        sup = np.flatnonzero(prior > min_prior)
        if sup.size == 0:
            raise ValueError(
                f"no label has prior above min_prior={min_prior!r} (largest prior "
                f"{prior.max():.3g}); lower min_prior, use min_prior='auto' or pass "
                "support explicitly."
            )
        return sup.astype(np.int64)
    sup = np.asarray(support)
    if sup.ndim != 1 or sup.size == 0 or sup.dtype.kind not in "iu":
        raise ValueError(
            f"support must be a non-empty 1-D array of label indices; got shape "
            f"{sup.shape}, dtype {sup.dtype}."
        )
    if ((sup < 0) | (sup >= r)).any() or np.unique(sup).size != sup.size:
        raise ValueError(f"support must hold distinct label indices in [0, {r}).")
    if (prior[sup] <= 0).any():
        bad = int(sup[prior[sup] <= 0][0])
        raise ValueError(f"support label {bad} has zero prior; drop it from support.")
    return np.sort(sup).astype(np.int64)


# -- Q ------------------------------------------------------------
def _support_log_post(
    L: np.ndarray,
    logc_sup: np.ndarray,
    log_prior: np.ndarray,
    sup: np.ndarray,
    posterior: Any,
) -> np.ndarray:
    """log P(Y = sup_j | votes) restricted to the support, (n, k): the independent
    LFs' posterior, or ``posterior``'s (a label model's own) renormalized on it."""
    if posterior is None:
        return log_posterior(L, logc_sup, log_prior)
    out = np.array(posterior(L, sup), dtype=np.float64)
    none = np.isneginf(out).all(axis=1)  # no support label possible: the prior
    out[none] = log_prior
    return out - logsumexp(out, axis=1, keepdims=True)


def _enumerated_votes(rates: np.ndarray, r: int) -> list[np.ndarray]:
    """Each LF's votes in :func:`_exact_q`'s table order: -1 (when it may abstain)
    then 0..r-1."""
    return [np.arange(-1 if x > 0 else 0, r) for x in rates]


def _rule_probs(log_joint: np.ndarray, rule: str) -> np.ndarray:
    """P(Z = j | pattern) from log prior_j + log P(pattern | y_j): (k, B) -> (B, k)."""
    if rule == "sample":
        return np.exp(log_joint - logsumexp(log_joint, axis=0, keepdims=True)).T
    k = log_joint.shape[0]
    return np.eye(k)[np.argmax(log_joint, axis=0)]


def _exact_q(
    logc: np.ndarray,
    rates: np.ndarray,
    log_prior: np.ndarray,
    rule: str,
    posterior: Any = None,
    sup: Any = None,
) -> tuple[np.ndarray, int]:
    """Enumerate all vote patterns; ``logc`` is (m, k, r) [a, y, v] on the support.

    With ``posterior`` (see :func:`noise_matrix`) the pseudolabels are its, read on
    the enumerated patterns themselves."""
    m, k, r = logc.shape
    # The MAP rule reads each pattern's pseudolabel as loss_weights does, from the
    # posterior of the votes themselves: the argmax of log-likelihood + log prior,
    # summed in another order, broke exact ties (symmetric models) the other way by
    # one ulp, and the weights then inverted the Q of other pseudolabels (bias up to
    # 0.47 on Discrete(3) with equal thetas).
    by_votes = posterior is not None or rule == "map"
    if by_votes:
        votes = _enumerated_votes(rates, r)
        grids = np.meshgrid(*votes[1:], indexing="ij") if m > 1 else []
        rest_votes = np.stack([g.ravel() for g in grids], axis=1) if grids else None
        if rest_votes is None:
            rest_votes = np.zeros((1, 0), dtype=np.int64)
    tables = []  # per LF: log P(lambda_a = v | y) over v in votes (+ abstain), (k, V_a)
    for a in range(m):
        if rates[a] > 0:
            t = np.concatenate(
                [np.full((k, 1), np.log(rates[a])), np.log1p(-rates[a]) + logc[a]],
                axis=1,
            )
        else:
            t = logc[a]
        tables.append(t)
    rest = np.zeros((k, 1))
    for t in tables[1:]:  # outer sum over LFs 2..m: (k, prod V_a)
        rest = (rest[:, :, None] + t[:, None, :]).reshape(k, -1)
    Q = np.zeros((k, k))
    for v in range(tables[0].shape[1]):  # one vectorized block per vote of LF 1
        log_lik = tables[0][:, v : v + 1] + rest  # (k, B)
        if not by_votes:
            log_joint = log_lik + log_prior[:, None]
        else:
            L = np.column_stack([np.full(rest_votes.shape[0], votes[0][v]), rest_votes])
            log_joint = _support_log_post(L, logc, log_prior, sup, posterior).T
        Q += np.exp(log_lik) @ _rule_probs(log_joint, rule)
    return Q, tables[0].shape[1] * rest.shape[1]


def _monte_carlo_q(
    S: Any,
    theta: np.ndarray,
    rates: np.ndarray,
    support: np.ndarray,
    logc_sup: np.ndarray,
    log_prior: np.ndarray,
    rule: str,
    n_draws: int,
    rng: np.random.Generator,
    family: _Family | None = None,
    progress_bar: bool = False,
    posterior: Any = None,
) -> tuple[np.ndarray, np.ndarray]:
    k = support.size
    Q = np.empty((k, k))
    se = np.empty((k, k))
    streams = tqdm(
        rng.spawn(k), desc="Monte Carlo Q", unit="label", disable=not progress_bar
    )
    for i, stream in enumerate(streams):  # one batch of draws per true label
        if family is None:
            L = sample_votes(
                S, theta, np.full(n_draws, support[i]), abstain=rates, seed=stream
            )
        else:  # another family: draw from its tables
            L = _sample_from_tables(logc_sup[:, i, :], rates, n_draws, stream)
        # Rao-Blackwellized for "sample": average P(Z = j | votes), not draws of Z.
        log_post = _support_log_post(L, logc_sup, log_prior, support, posterior)
        probs = _rule_probs(log_post.T, rule)
        Q[i] = probs.mean(axis=0)
        se[i] = probs.std(axis=0, ddof=1) / np.sqrt(n_draws)
    return Q, se


def noise_matrix(
    space: Any,
    theta: Any,
    prior: Any,
    *,
    abstain: Any = 0.0,
    rule: str = "auto",
    support: Any = None,
    min_prior: float | str = "auto",
    method: str = "auto",
    max_patterns: int = 200_000,
    n_draws: int = 20_000,
    warn_condition: float = 100.0,
    seed: Any = None,
    power: float = 2.0,
    outlier_rate: Any = None,
    outlier_dist: Any = None,
    progress_bar: bool = False,
    posterior: Any = None,
    log_cond: Any = None,
) -> NoiseMatrix:
    """Q_ij = P(pseudolabel = y_j | Y = y_i) over the support, under a noise model.

    Parameters
    ----------
    space : FiniteMetricSpace or ndarray of shape (r, r)
        The label space, or its matrix of squared distances: finite, non-negative,
        symmetric, with a zero diagonal (the checks ``FiniteMetricSpace`` applies).
    theta : array-like of shape (n_lfs,) or (n_lfs, r)
        Canonical parameters of the model exp(-theta_a d^2) / Z_a(y) (estimated: Q;
        true: the paper's P); exp(-theta_a d^power) with ``power``.
    prior : array-like of shape (r,)
        P(Y = y) over the whole space.
    abstain : float or array-like of shape (n_lfs,), default=0.0
        Probability that each LF abstains, independently of Y; each in [0, 1).
    rule : {"auto", "map", "sample"}, default="auto"
        Pseudolabel rule: the MAP (the label ``predict`` returns), a draw from the
        posterior (the paper's rule), or "auto": the MAP, unless its Q has a
        condition number above ``warn_condition`` (or is singular: with weak LFs a
        rare label may never be the argmax) and the draw's Q is better conditioned.
        Q^-1 corrects the loss without bias for either rule, as long as Q is that
        rule's; the MAP adds no sampling noise and usually gives a Q nearer the
        identity (smaller weights). All rules restrict the posterior to the
        support. ``NoiseMatrix.rule`` records the rule used.
    support : array-like of int, optional
        Label indices to index Q by; default the labels with ``prior > min_prior``.
    min_prior : float or "auto", default="auto"
        Threshold defining the default support. Labels below it are left out of Q
        and of the posterior the pseudolabels come from: a label model's estimate
        often puts a sliver of mass (1-2%) on spurious labels next to the true ones,
        and keeping them makes Q ill-conditioned and lets an end model answer with a
        label "between" two real ones. "auto": 0.05, unless fewer than 2 labels
        pass it or they hold less than half the prior (a prior spread over many
        labels of similar weight); then the heaviest labels holding 90% of the prior,
        at most ``AUTO_MAX_LABELS`` (40), with a warning when they hold less.
    method : {"auto", "exact", "monte_carlo"}, default="auto"
        "exact" enumerates all (r + 1)^n_lfs vote patterns (r^n_lfs without abstains),
        weighted by P(pattern | y); "auto" does so when there are at most
        ``max_patterns`` of them and uses Monte Carlo otherwise.
    max_patterns : int, default=200_000
    n_draws : int, default=20_000
        Monte Carlo draws per true label.
    warn_condition : float, default=100.0
        Warn (``IllConditionedWarning``) when the condition number of Q exceeds this.
    seed : None, int or numpy.random.Generator
        Seeds the Monte Carlo draws (a Generator passed in advances).
    power : {1, 2}, default=2
        The noise family exp(-theta_a d^power) / Z_a(y).
    outlier_rate, outlier_dist : array-like of shape (n_lfs,) and (n_lfs, r), optional
        The outlier component: P(lambda_a = v | y) = (1 - eps_a) exp(-theta_a
        d^power) / Z + eps_a h_a(v) (``StructuredLabelModel``'s ``outlier_rate_``
        and ``outlier_dist_``).
    progress_bar : bool, default=False
        Show a tqdm progress bar over the true labels when Q is computed by Monte
        Carlo (seconds per label on large supports); the exact sum is not shown.
    posterior : callable, optional
        ``posterior(L, labels)`` for an (n, n_lfs) int vote matrix returns the
        (n, len(labels)) log P(Y = labels[j] | votes) the pseudolabels come from
        (-inf for a label it never predicts; renormalized over the support here).
        Only the support's labels are asked for, so a space of thousands of labels
        costs (n, k), not (n, r). Default: the posterior of independent LFs under
        ``theta`` and ``prior``. A label model passes its own (declared or detected
        dependencies weigh votes, abstains may depend on Y), so that its
        pseudolabels are those of its ``predict``; the votes are still drawn from
        ``theta`` and ``abstain``.
    log_cond : array-like of shape (n_lfs, r, r), optional
        The LFs' full tables log P(lambda_a = v | Y = y, lambda_a votes) [a, y, v]
        (a model whose errors do not follow the distances, e.g. Dawid and Skene's
        on ``Discrete``; ``StructuredLabelModel.log_conditional_probs()``): the
        votes are drawn from them instead of from ``theta``.

    Returns
    -------
    NoiseMatrix
        Q, its inverse, the support, the method, standard errors (zero when exact),
        condition number and smallest singular value.

    Raises
    ------
    ValueError
        For malformed parameters (including a squared-distance matrix that is not
        finite, non-negative, symmetric with a zero diagonal, naming the first bad
        entry), or when Q is singular (the LFs carry no information that separates
        some support labels; shrink the support or improve the LFs).

    Warns
    -----
    IllConditionedWarning
        When ``condition_number > warn_condition``.

    Notes
    -----
    Q_ij = sum_u P(Z = y_j | u) P(u | Y = y_i) over vote patterns u (paper eq. 6).
    For the "sample" rule P(Z = y_j | u) is the posterior; for "map" it is the
    indicator of the posterior's argmax (first index on ties). The Monte Carlo
    estimate averages P(Z = y_j | u) over votes drawn from the model (a
    Rao-Blackwellized estimate for "sample") and reports its standard error.

    Examples
    --------
    >>> import snorkel_structured as ss
    >>> space = ss.Permutations(3)
    >>> prior = [0.5, 0, 0, 0, 0, 0.5]
    >>> nm = ss.noise_matrix(space, [1.0, 1.0], prior)
    >>> nm.method, nm.support.tolist(), nm.Q.sum(axis=1).round(12).tolist()
    ('exact', [0, 5], [1.0, 1.0])
    """
    S, r = _distances_source(space)
    th, p, rates = _check_model(r, theta, prior, abstain)
    family = _check_family(th.shape[0], r, power, outlier_rate, outlier_dist, log_cond)
    if rule not in RULES:
        raise ValueError(f"rule must be one of {RULES}; got {rule!r}.")
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}; got {method!r}.")
    if not (isinstance(min_prior, str) and min_prior == "auto"):
        min_prior = check_scalar(
            min_prior, "min_prior", low=0.0, high=1.0, high_inclusive=False
        )
    max_patterns = check_scalar(max_patterns, "max_patterns", kind="int", low=1)
    n_draws = check_scalar(n_draws, "n_draws", kind="int", low=2)
    warn_condition = check_scalar(warn_condition, "warn_condition", low=1.0)
    if not isinstance(progress_bar, (bool, np.bool_)):
        raise TypeError(
            f"progress_bar must be a bool; got {type(progress_bar).__name__}."
        )
    sup = _resolve_support(p, support, min_prior)
    p_sup = p[sup] / p[sup].sum()
    log_prior = np.log(p_sup)
    logc_sup = _support_log_cond(S, th, sup, family)  # (m, k, r) [a, y, v]
    n_patterns = int(np.prod([r + 1 if x > 0 else r for x in rates], dtype=np.float64))
    use_exact = method == "exact" or (method == "auto" and n_patterns <= max_patterns)
    rng = None if use_exact else check_seed(seed)

    def compute(rule_used: str) -> tuple[np.ndarray, np.ndarray, int, np.ndarray]:
        if use_exact:
            Q, n_eval = _exact_q(logc_sup, rates, log_prior, rule_used, posterior, sup)
            se = np.zeros_like(Q)
        else:
            Q, se = _monte_carlo_q(
                S,
                th,
                rates,
                sup,
                logc_sup,
                log_prior,
                rule_used,
                n_draws,
                rng,
                family,
                bool(progress_bar),
                posterior,
            )
            n_eval = n_draws
        return Q, se, n_eval, np.linalg.svd(Q, compute_uv=False)

    used_rule = "map" if rule == "auto" else rule
    Q, se, n_eval, sv = compute(used_rule)
    if rule == "auto" and sv[-1] <= max(sv[0], 1e-300) / warn_condition:
        # The MAP can make Q singular (a support label that is never the argmax, e.g.
        # a rare class under weak LFs) or worse conditioned than a posterior draw:
        # then the draw, whose Q is invertible whenever the votes carry information.
        alt = compute("sample")
        if alt[3][-1] * sv[0] > sv[-1] * alt[3][0]:  # smaller condition number
            used_rule, (Q, se, n_eval, sv) = "sample", alt
    used = "exact" if use_exact else "monte_carlo"
    if sv[-1] <= 1e-10 * max(sv[0], 1e-300):
        raise ValueError(
            f"Q is singular (smallest singular value {sv[-1]:.2e}, largest "
            f"{sv[0]:.2e}) over a support of {sup.size} labels: the votes do not "
            "tell some support labels apart. Shrink the support (raise min_prior "
            "or pass support=) or use more informative labeling functions"
            + (
                "; with rule='map', a support label may never be the posterior's "
                "argmax: use rule='auto' or 'sample'."
                if rule == "map"
                else "."
            )
        )
    cond = float(sv[0] / sv[-1])
    if cond > warn_condition:
        _warnings.warn(
            f"Q is ill-conditioned (condition number {cond:.3g} > warn_condition="
            f"{warn_condition:g}, sigma_min {sv[-1]:.3g}): Q^-1 loss weights will be "
            "large and noisy. Shrink the support or use more informative LFs.",
            IllConditionedWarning,
            stacklevel=2,
        )
    inverse = np.linalg.solve(Q, np.eye(sup.size))
    for arr in (Q, inverse, se, sup, p_sup):
        arr.setflags(write=False)
    return NoiseMatrix(
        Q, inverse, sup, p_sup, used_rule, used, se, int(n_eval), cond, float(sv[-1])
    )


# -- loss weights as a DataFrame ----------------------------------------
def _label_names(space: Any, r: int) -> list[str]:
    """Column name of each label: ``str(item)`` when unambiguous, else ``label_<i>``."""
    if isinstance(space, FiniteMetricSpace):
        names = [str(item) for item in space.items]
        if len(set(names)) == r and PSEUDOLABEL not in names:
            return names
    return [f"label_{i}" for i in range(r)]


def loss_weights(
    L: Any,
    space: Any,
    theta: Any,
    prior: Any,
    *,
    abstain: Any = None,
    rule: str = "auto",
    support: Any = None,
    min_prior: float | str = "auto",
    noise: NoiseMatrix | None = None,
    index: Any = None,
    seed: Any = None,
    power: float = 2.0,
    outlier_rate: Any = None,
    outlier_dist: Any = None,
    posterior: Any = None,
    log_cond: Any = None,
    **noise_options: Any,
) -> pd.DataFrame:
    """Pseudolabels and noise-aware loss weights, one row per data point.

    Parameters
    ----------
    L : array-like or DataFrame of shape (n_samples, n_lfs)
        Votes (label indices, -1 = abstain). A DataFrame's index is kept.
    space : FiniteMetricSpace or ndarray of shape (r, r)
        The label space (its items name the columns) or its squared distances.
    theta, prior
        The noise model, as in :func:`noise_matrix`.
    abstain : float or array-like of shape (n_lfs,), optional
        LF abstain rates for Q, each in [0, 1) as in :func:`noise_matrix` (others
        raise ``ValueError``); default the fraction of -1 in each column of ``L``,
        where a column that is all -1 counts as just below 1.
    rule : {"auto", "map", "sample"}, default="auto"
        How pseudolabels are made: the posterior's argmax over the support (the
        label ``predict`` returns, when it lies in the support), a draw from it (the
        paper), or "auto" (the argmax unless its Q is much worse conditioned; see
        :func:`noise_matrix`). ``attrs["rule"]`` records the rule used.
    support, min_prior
        As in :func:`noise_matrix`.
    noise : NoiseMatrix, optional
        A precomputed Q (its support and rule are used; e.g. to weight many chunks with
        one Q). Otherwise Q is computed here.
    index : array-like of length n_samples, optional
        Row index of the result (overrides a DataFrame's index).
    seed : None, int or numpy.random.Generator
        Seeds the pseudolabel draws (and Monte Carlo Q).
    power, outlier_rate, outlier_dist, log_cond
        The noise family, or the LFs' full tables, as in :func:`noise_matrix`.
    posterior : callable, optional
        The posterior of the pseudolabels and of Q, as in :func:`noise_matrix`
        (``StructuredLabelModel.loss_weights`` passes the model's own).
    **noise_options
        ``method``, ``max_patterns``, ``n_draws``, ``warn_condition``,
        ``progress_bar`` of :func:`noise_matrix`.

    Returns
    -------
    weights : DataFrame of shape (n_samples, k + 1)
        Column ``"pseudolabel"`` (int64 label index into the space), then one float
        column per support label, named ``str(item)`` (or ``"label_<i>"`` when item
        strings are ambiguous), holding row ``pseudolabel`` of Q^-1. For any
        prediction t, ``sum_l w_l d^2(t, y_l)`` is an unbiased estimate of the clean
        loss ``d^2(t, y)`` (exactly so under the model that gave Q). ``attrs`` records
        the support, rule, method and condition number.

    Raises
    ------
    ValueError
        For malformed arguments, as :func:`noise_matrix` (e.g. an ``abstain`` rate
        outside [0, 1), or a squared-distance matrix with a NaN, negative or
        asymmetric entry), or an ``index`` or ``theta`` that does not match ``L``.

    Notes
    -----
    To train any model that accepts weighted targets, expand each row into k
    (features, target y_l, sample weight w_l) triples and minimize the weighted loss;
    weights can be negative, so the model must accept negative sample weights (the
    kernel predictor here does, via :class:`KernelStructuredPredictor.fit`).

    Rows where every LF abstains are kept: their posterior is the prior, their
    pseudolabel is drawn from it (or is its argmax), and their weights are the Q^-1
    row of that pseudolabel. Q accounts for the all-abstain pattern, so the estimate
    stays unbiased; drop such rows yourself only if you also accept the bias.

    Examples
    --------
    >>> import snorkel_structured as ss
    >>> data = ss.synthetic.make_ranking_data(200, theta=[0.0, 0.0, 1.0], seed=0)
    >>> W = ss.loss_weights(data.L, data.space, data.theta, data.prior, seed=0)
    >>> W.shape, list(W.columns[:2])
    ((200, 3), ['pseudolabel', '(3, 0, 1, 2)'])
    """
    row_index = getattr(L, "index", None) if isinstance(L, pd.DataFrame) else None
    S, r = _distances_source(space)
    Lc = check_label_matrix(L, n_labels=r)
    if index is not None:
        if np.ndim(index) != 1:
            raise ValueError(
                f"index must be one label per row of L (1-D, length {Lc.shape[0]}); "
                f"got {type(index).__name__} with {np.ndim(index)} dimensions."
            )
        row_index = pd.Index(index)
        if len(row_index) != Lc.shape[0]:
            raise ValueError(
                f"index has {len(row_index)} entries but L has {Lc.shape[0]} rows."
            )
    th, p, _ = _check_model(r, theta, prior, 0.0)
    if th.shape[0] != Lc.shape[1]:
        raise ValueError(
            f"L has {Lc.shape[1]} columns but theta describes {th.shape[0]} LFs."
        )
    # Validated before any clipping, with noise_matrix's rule and message: clipping a
    # rate of 1.5 to just below 1 would give weights of order 1e9, not an error.
    given_rates = None if abstain is None else _check_abstain(th.shape[0], abstain)
    family = _check_family(th.shape[0], r, power, outlier_rate, outlier_dist, log_cond)
    rng = check_seed(seed)
    q_rng, z_rng = rng.spawn(2)
    if noise is None:
        if given_rates is None:
            # An LF that abstains on every row of L has rate 1, outside Q's [0, 1):
            # just below 1 it still gives Q (its votes then carry no weight).
            rates = np.minimum((Lc == ABSTAIN).mean(axis=0), 1.0 - 1e-9)
            if Lc.size and (Lc == ABSTAIN).all():
                # every rate at 1 - 1e-9: Q is the prior's rows plus 1e-9 of votes,
                # singular in all but rounding, and its inverse gives weights of
                # order 1e8 (the singularity test reads 1e-9 as a real signal)
                raise ValueError(
                    "every LF abstains on every row of L, so the votes carry no "
                    "information and the noise matrix Q is singular: there are no "
                    "noise-aware weights. Check the LFs and L (e.g. with "
                    "StructuredLFAnalysis(L, space=space).lf_summary()), or pass abstain= "
                    "rates estimated on other data."
                )
        else:
            rates = given_rates
        noise = noise_matrix(
            S,
            th,
            p,
            abstain=rates,
            rule=rule,
            support=support,
            min_prior=min_prior,
            seed=q_rng,
            power=power,
            outlier_rate=outlier_rate,
            outlier_dist=outlier_dist,
            posterior=posterior,
            log_cond=log_cond,
            **noise_options,
        )
    sup = noise.support
    logc_sup = _support_log_cond(S, th, sup, family)
    log_post = _support_log_post(Lc, logc_sup, np.log(noise.prior), sup, posterior)
    if noise.rule == "map":
        z = np.argmax(log_post, axis=1)
    else:  # inverse CDF, one uniform per row
        cdf = np.cumsum(np.exp(log_post), axis=1)
        u = z_rng.random(Lc.shape[0]) * cdf[:, -1]
        z = np.minimum((cdf < u[:, None]).sum(axis=1), sup.size - 1)
    names = _label_names(space, r)
    out = pd.DataFrame(
        noise.inverse[z], columns=[names[i] for i in sup], index=row_index
    )
    out.insert(0, PSEUDOLABEL, sup[z].astype(np.int64))
    out.attrs.update(
        support=sup.tolist(),
        rule=noise.rule,
        method=noise.method,
        condition_number=noise.condition_number,
    )
    return out


def _weights_from_frame(
    frame: pd.DataFrame, space: FiniteMetricSpace
) -> tuple[np.ndarray, np.ndarray]:
    """Parse a loss-weights DataFrame: (weights (n, k), label indices (k,))."""
    names = _label_names(space, len(space))
    lookup = {name: i for i, name in enumerate(names)}
    cols = [c for c in frame.columns if c != PSEUDOLABEL]
    unknown = [c for c in cols if c not in lookup]
    if unknown:
        raise ValueError(
            f"loss-weight column {unknown[0]!r} names no label of the space; columns "
            f"must be 'pseudolabel' and label names such as {names[0]!r} (as written "
            "by loss_weights)."
        )
    if not cols:
        raise ValueError("the loss-weights DataFrame has no label columns.")
    W = frame[cols].to_numpy(dtype=np.float64, copy=True)
    if not np.isfinite(W).all():
        raise ValueError("loss weights must be finite; got NaN or inf.")
    return W, np.array([lookup[c] for c in cols], dtype=np.int64)
