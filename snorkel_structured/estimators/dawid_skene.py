"""Dawid and Skene's model of plain classes: one full confusion table per LF, by EM.

Each LF a has its own table P(lambda_a = v | Y = y) over its k votes and abstain,
with no distance structure: the classic crowdsourcing model (Dawid and Skene,
1979), which Snorkel's ``LabelModel`` also fits (by matrix completion). On a
``Discrete`` space it is richer than the distance family exp(-theta d) of the
label models here, whose errors are spread evenly over the wrong classes: it can
learn that an LF confuses 3 with 8 but never with 1, or that an LF which votes one
class on every row says nothing. ``StructuredLabelModel`` fits it on classes where it
applies (its ``confusion`` option); LFs that share a source keep the distance
family's fallback there, since the tables, like any model of independent LFs, take
such LFs for accurate ones.

EM runs over the unique vote patterns of :class:`VoteStats`, read as the codes of a
few blocks of LFs (:mod:`._vote_blocks`): the E-step gathers one table per block,
the M-step (closed form) sums the posteriors per block code, so a step reads each
pattern once per block, not once per LF.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from snorkel_structured import _warnings
from snorkel_structured._numeric import normalize_log_rows
from snorkel_structured._validation import ABSTAIN, check_distribution, check_scalar
from snorkel_structured.estimators._stats import VoteStats
from snorkel_structured.estimators._support_posterior import SupportPosterior
from snorkel_structured.estimators._vote_blocks import VoteBlocks
from snorkel_structured.exceptions import ConvergenceWarning

__all__ = ["DawidSkeneEstimate", "conditional_log_table", "dawid_skene_estimate"]

# Dirichlet pseudo-count of every cell of the LFs' tables and of every class of the
# prior (add-one-half, as Jeffreys' and as the default prior of the label models),
# so that no vote is impossible under any class.
PSEUDO_COUNT = 0.5


@dataclass(frozen=True)
class DawidSkeneEstimate:
    """The fitted model.

    Attributes
    ----------
    prior : ndarray of shape (k,)
        P(Y = y).
    log_table : ndarray of shape (n_lfs, k + 1, k)
        ``log_table[a, v + 1, y]`` = log P(lambda_a = v | Y = y); row 0 is abstain
        (v = -1). Each ``exp(log_table[a, :, y])`` sums to 1.
    log_likelihood : float
        Log-likelihood of the rows under the fitted model (without the pseudo-counts;
        labeled rows with their classes).
    n_iter : int
        EM steps taken.
    converged : bool
        Whether EM stopped at ``tol`` rather than at ``max_iter`` (a
        ``ConvergenceWarning`` says so).
    """

    prior: np.ndarray
    log_table: np.ndarray
    log_likelihood: float
    n_iter: int
    converged: bool

    def posterior(self) -> SupportPosterior:
        """The fitted posterior as prediction reads it (``log_proba`` of label
        matrices; every class is in the support)."""
        k = self.prior.size
        with np.errstate(divide="ignore"):
            log_prior = np.log(self.prior)
        return SupportPosterior(self.log_table, log_prior, np.arange(k), k)


def conditional_log_table(log_table: np.ndarray) -> np.ndarray:
    """log P(lambda_a = v | Y = y, lambda_a votes) from a table with its abstain row:
    (n_lfs, k + 1, k) [a, v + 1, y] -> (n_lfs, k, k) [a, y, v]."""
    with np.errstate(divide="ignore"):
        voted = np.log1p(-np.exp(log_table[:, 0, :]))  # log P(votes | y), (m, k)
    return (log_table[:, 1:, :] - voted[:, None, :]).transpose(0, 2, 1)


def _majority_start(blocks: VoteBlocks, m: int, k: int) -> np.ndarray:
    """Each pattern's share of votes per class (uniform where no LF votes)."""
    to_class = np.zeros((m, k + 1, k))
    to_class[:, 1:, :] = np.eye(k)  # vote v (row v + 1) counts for class v
    R = blocks.log_lik(to_class)  # a sum of table entries: the votes per class
    total = R @ np.ones(k)
    empty = total == 0
    R[empty], total[empty] = 1.0, k
    R /= total[:, None]
    return R


def _labeled_terms(labeled: Any, m: int, k: int) -> tuple[Any, Any, Any]:
    """The labeled rows' fixed counts per (LF, vote, class) and per class, and their
    log-likelihood as a function of the tables and the log prior."""
    if labeled is None:
        return 0.0, 0.0, lambda log_table, log_prior: 0.0
    P, c, y = (np.asarray(x) for x in labeled)
    c = c.astype(np.float64)
    if P.ndim != 2 or P.shape[1] != m or not (c.shape == y.shape == (P.shape[0],)):
        raise ValueError(
            f"labeled must be (patterns (n, {m}), counts (n,), labels (n,)); got "
            f"shapes {P.shape}, {c.shape}, {y.shape}."
        )
    if ((y < 0) | (y >= k)).any() or ((P < ABSTAIN) | (P >= k)).any():
        raise ValueError(f"labeled rows hold labels or votes outside [0, {k}).")
    mass = np.zeros((m, k + 1, k))
    np.add.at(mass, (np.arange(m)[None, :], P + 1, y[:, None]), c[:, None])

    def log_lik(log_table: np.ndarray, log_prior: np.ndarray) -> float:
        per_row = log_prior[y] + log_table[
            np.arange(m)[None, :], P + 1, y[:, None]
        ].sum(axis=1)
        return float(c @ per_row)

    return mass, np.bincount(y, weights=c, minlength=k), log_lik


def dawid_skene_estimate(
    stats: VoteStats,
    *,
    prior: np.ndarray | None = None,
    labeled: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
    pseudo_count: float = PSEUDO_COUNT,
    max_iter: int = 500,
    tol: float = 1e-8,
) -> DawidSkeneEstimate:
    """Fit Dawid and Skene's model to vote-pattern counts by EM.

    EM starts from each pattern's share of votes per class (a soft majority vote,
    which also fixes which class is which) and maximizes the likelihood with a
    Dirichlet pseudo-count on every cell of the tables and every class of the prior.

    Parameters
    ----------
    stats : VoteStats
        Vote-pattern counts of a label matrix over ``k = stats.n_labels`` classes.
    prior : ndarray of shape (k,), optional
        A known P(Y), held fixed (Snorkel's ``class_balance``; a class at 0 is never
        the answer); default estimated.
    labeled : (patterns, counts, labels), optional
        Rows whose class is known: vote patterns of shape (n_labeled, n_lfs), how
        many rows had each, and their classes. They join the likelihood with their
        class fixed (semi-supervised EM).
    pseudo_count : float, default=0.5
        Added to every count of the M-step (tables and prior); 0 gives the plain
        maximum-likelihood steps, under which a vote an LF never gave for a class
        becomes impossible for it.
    max_iter : int, default=500
    tol : float, default=1e-8
        EM stops when what is left to gain is under ``tol`` nats per row: the last
        step's gain times rho / (1 - rho) while the gains shrink by a factor rho
        per step (Aitken's estimate of the distance to the limit), else the last
        gain itself.

    An LF that never voted gets the same table under every class, so that its
    votes, should it vote later, change no posterior.

    Returns
    -------
    DawidSkeneEstimate

    Raises
    ------
    ValueError
        Fewer than 3 LFs (two LFs do not identify their tables), no vote at all, or
        a bad ``prior``, ``pseudo_count``, ``max_iter`` or ``tol``.

    Examples
    --------
    >>> import numpy as np
    >>> from snorkel_structured.estimators import VoteStats, dawid_skene_estimate
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 3, 5000)
    >>> L = np.where(rng.random((5000, 4)) < 0.8, y[:, None], rng.integers(0, 3, (5000, 4)))
    >>> est = dawid_skene_estimate(VoteStats.from_label_matrix(L, n_labels=3))
    >>> logp, inverse = est.posterior().log_proba(L)  # per unique row, and the map back
    >>> bool((logp.argmax(axis=1)[inverse] == y).mean() > 0.95)
    True
    """
    if not isinstance(stats, VoteStats):
        raise TypeError(
            f"stats must be a VoteStats (VoteStats.from_label_matrix(L, n_labels=k)); "
            f"got {type(stats).__name__}."
        )
    pseudo_count = check_scalar(pseudo_count, "pseudo_count", low=0.0)
    max_iter = check_scalar(max_iter, "max_iter", kind="int", low=1)
    tol = check_scalar(tol, "tol", low=0.0, low_inclusive=False)
    m, k = stats.n_lfs, int(stats.n_labels)
    if m < 3:
        raise ValueError(
            f"Dawid-Skene needs at least 3 LFs to identify each LF's table from their "
            f"agreements; got {m}."
        )
    P, c = np.asarray(stats.patterns), np.asarray(stats.counts, dtype=np.float64)
    voted = c @ (P != ABSTAIN)  # rows each LF voted on
    if not voted.any():
        raise ValueError(
            "the votes are empty: every LF abstained (-1) on every row, so there is "
            "nothing to estimate from."
        )
    if prior is not None:
        prior = check_distribution(
            prior,
            k,
            f"prior must be {k} non-negative finite numbers (one per class) with a "
            f"positive sum; got {np.asarray(prior, dtype=np.float64)!r}.",
        )
        with np.errstate(divide="ignore"):  # a class of prior 0 is never the answer
            fixed_log_prior = np.log(prior)
    n = float(c.sum())
    lab_mass, lab_class, lab_ll = _labeled_terms(labeled, m, k)
    silent = voted + (0.0 if labeled is None else lab_mass[:, 1:].sum(axis=(1, 2))) == 0
    blocks = VoteBlocks(P, k)

    def run(R: np.ndarray, unlabeled_weight: float) -> DawidSkeneEstimate:
        """EM from posteriors R, the unlabeled rows weighing ``unlabeled_weight`` in
        the first M-step (0: the tables start from the labeled rows alone)."""
        ll, gain, converged, n_iter, w = -np.inf, np.inf, False, 0, unlabeled_weight
        while n_iter < max_iter and not converged:
            n_iter += 1
            counts = blocks.mass(w * c[:, None] * R) + lab_mass + pseudo_count
            # An LF that never voted: the same table under every class (its pseudo-
            # counts alone would make its abstain say which classes are rarer).
            counts[silent] = counts[silent].mean(axis=2, keepdims=True)
            log_table = np.log(counts / counts.sum(axis=1, keepdims=True))
            if prior is None:
                class_mass = w * (c @ R) + lab_class + pseudo_count
                log_prior = np.log(class_mass / class_mass.sum())
            else:
                log_prior = fixed_log_prior
            R, per_pattern = normalize_log_rows(blocks.log_lik(log_table) + log_prior)
            new = float(c @ per_pattern) + lab_ll(log_table, log_prior)
            # EM's gains shrink geometrically near the optimum, by rho per step: what
            # is left to gain is about gain rho / (1 - rho) (Aitken's estimate), which
            # is what tol bounds; the last gain itself when they do not shrink.
            rho = (new - ll) / gain if 0 < new - ll < gain < np.inf else 1.0
            gain = new - ll
            left = gain * rho / (1.0 - rho) if rho < 1.0 else gain
            converged = left < tol * n
            ll, w = new, 1.0
        return DawidSkeneEstimate(np.exp(log_prior), log_table, ll, n_iter, converged)

    R0 = _majority_start(blocks, m, k)
    fits = [run(R0, 1.0)]
    if labeled is not None:
        # Votes may name the classes wrongly (an LF that votes the next class): a
        # start from the labeled rows' own tables, the fit of higher likelihood kept.
        fits.append(run(R0, 0.0))
    best = max(fits, key=lambda fit: fit.log_likelihood)
    if not best.converged:
        _warnings.warn(
            f"Dawid-Skene EM stopped at max_iter={max_iter} before the gain left was "
            f"under tol={tol:g} per row; raise max_iter or tol.",
            ConvergenceWarning,
            stacklevel=2,
        )
    return best
