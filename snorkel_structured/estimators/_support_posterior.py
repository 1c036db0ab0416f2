"""The fitted posterior of a finite label model over its support, as small tables.

:class:`SupportPosterior` holds the log-probability tables of the votes given each
label of the support and the log prior: all that ``predict_proba``, ``predict`` and
the dev-row choice read, and what Dask workers receive for partition-wise
prediction. Plain numpy; the Snorkel-facing methods that read it live in
``label_model/_posterior.py``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from snorkel_structured._numeric import logsumexp
from snorkel_structured._validation import ABSTAIN, check_label_matrix, check_seed
from snorkel_structured.estimators._em_core import pattern_weights
from snorkel_structured.estimators._stats import unique_rows

__all__ = ["SupportPosterior", "least_cost_ties"]

# Expected costs this close (relative) to the least are a tie (see predict_min_cost).
_COST_TIE = 1e-9


class SupportPosterior:
    """The fitted posterior restricted to the support: small arrays, picklable.

    ``table[a, v + 1, j]`` = log P(lambda_a = v | Y = support_j) (row 0: abstain, 0);
    P(Y | votes) is zero off the support, so nothing of size r x r is ever needed.
    This is what Dask workers receive for partition-wise prediction.
    """

    def __init__(
        self,
        table: np.ndarray,
        log_prior: np.ndarray,
        support: np.ndarray,
        r: int,
        groups: np.ndarray | None = None,
        group_corr: np.ndarray | None = None,
    ) -> None:
        self.table = table
        self.log_prior = log_prior
        self.support = support
        self.r = r
        self.n_lfs = table.shape[0]
        # dependency groups: votes of j LFs of one group weigh 1/j each (or, with
        # the correlations of their errors, 1 / their design effect)
        self.groups = groups
        self.group_corr = group_corr

    def check(self, L: Any, name: str = "L") -> np.ndarray:
        return check_label_matrix(
            L, n_labels=self.r, min_lfs=3, name=name, n_lfs=self.n_lfs
        )

    def log_proba(self, L: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """log P(Y = support_j | pattern) over the unique rows, and the inverse map."""
        out, _, inverse = self.log_proba_patterns(L)
        return out, inverse

    def log_proba_patterns(
        self, L: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`log_proba` with the unique rows themselves: (log P, rows, inverse)."""
        patterns, inverse = unique_rows(L, self.r)
        out = np.tile(self.log_prior, (patterns.shape[0], 1))
        pw = pattern_weights(
            patterns, getattr(self, "groups", None), getattr(self, "group_corr", None)
        )
        for a in range(self.n_lfs):  # one (n_patterns, k) gather per LF
            term = self.table[a][patterns[:, a] + 1]
            out += term if pw is None else term * pw[:, a : a + 1]
        # Rows where no LF voted get the prior, as in Snorkel (even when the model's
        # abstains depend on Y); votes impossible under every supported label too.
        no_votes = (patterns == ABSTAIN).all(axis=1)
        impossible = np.isneginf(out).all(axis=1) | no_votes
        if impossible.any():
            out[impossible] = self.log_prior
        return out - logsumexp(out, axis=1, keepdims=True), patterns, inverse

    def proba(self, L: Any, labels: str = "all") -> np.ndarray:
        L = self.check(L)
        logp, inverse = self.log_proba(L)
        probs = np.exp(logp)
        if labels != "support" and not np.array_equal(self.support, np.arange(self.r)):
            full = np.zeros((probs.shape[0], self.r))
            full[:, self.support] = probs
            probs = full
        # One gather of whole rows, per pattern to per row: the output's own size.
        return np.take(probs, inverse, axis=0)

    def predict(
        self,
        L: Any,
        tie_break_policy: str = "abstain",
        seed: Any = None,
        space: Any = None,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(preds, posterior over the support per unique pattern, inverse map).

        With ``space`` (a metric space other than plain classes), labels tied in
        probability are told apart first by their expected distance to Y
        (:meth:`closest_of_tied`); ``tie_break_policy`` then decides what stays tied.
        """
        L = self.check(L)
        logp, inverse = self.log_proba(L)
        probs_u = np.exp(logp)
        tied = np.abs(probs_u - probs_u.max(axis=1, keepdims=True)) < 1e-5  # (u, k)
        if space is not None:
            tied = self.closest_of_tied(probs_u, tied, space)
        n_tied = tied.sum(axis=1)
        preds = self.support[np.argmax(tied, axis=1)][inverse]
        rows = np.flatnonzero(n_tied[inverse] > 1)
        if rows.size:
            if tie_break_policy == "abstain":
                preds[rows] = ABSTAIN
            else:
                t = tied[inverse[rows]]
                if (
                    tie_break_policy == "random"
                ):  # deterministic per row index and label
                    keys = (
                        (
                            rows[:, None].astype(np.uint64) * np.uint64(2654435761)
                            + self.support.astype(np.uint64)[None, :] * np.uint64(40503)
                        )
                        % np.uint64(1 << 31)
                    ).astype(np.float64)
                else:
                    keys = check_seed(seed).random(t.shape)
                preds[rows] = self.support[
                    np.argmax(np.where(t, keys + 1.0, 0.0), axis=1)
                ]
        return preds, probs_u, inverse

    def closest_of_tied(
        self, probs_u: np.ndarray, tied: np.ndarray, space: Any
    ) -> np.ndarray:
        """Of each row's labels tied in probability, those of least expected distance
        E[d(z, Y) | votes], (u, k) bool.

        An unweighted vote ties often: with Kendall's distance (integers) and LFs
        of equal weight, labels at equal total distance from the votes are equally
        probable (71% of the rows of a 6-LF ranking task). Of those, the label
        nearest the rest of the posterior's mass is the better answer under the
        space's metric, and abstaining on them would leave those rows unlabeled.
        Costs within 1e-5 of the largest distance are still a tie (the probabilities
        tied within 1e-5, too).
        """
        rows = np.flatnonzero(tied.sum(axis=1) > 1)
        if not rows.size:
            return tied
        labels = np.flatnonzero(tied[rows].any(axis=0))  # positions in the support
        expected = np.empty((rows.size, labels.size))
        d_max = 0.0
        step = max(1, (1 << 22) // max(self.r, 1))  # (step, r) rows: ~32 MB
        for start in range(0, labels.size, step):  # blocks of the tied labels
            block = labels[start : start + step]
            sq = space.squared_distance_rows(self.support[block])[:, self.support]
            dist = np.sqrt(np.maximum(sq, 0.0))  # (block, k)
            expected[:, start : start + step] = probs_u[rows] @ dist.T
            d_max = max(d_max, float(dist.max()))
        expected[~tied[rows][:, labels]] = np.inf
        least = expected.min(axis=1, keepdims=True)
        out = tied.copy()
        out[rows] = False
        out[rows[:, None], labels[None, :]] = expected <= least + 1e-5 * d_max
        return out

    def predict_block(
        self,
        L: Any,
        tie_break_policy: str = "abstain",
        cost: Any = None,
        space: Any = None,
    ) -> np.ndarray:
        if cost is not None:
            return self.predict_min_cost(L, cost)
        return self.predict(L, tie_break_policy, space=space)[0]

    def predict_min_cost(self, L: Any, cost: np.ndarray) -> np.ndarray:
        """The label z of least expected cost sum_j P(support_j | votes) cost[j, z].

        ``cost`` is (k, r): e.g. the distances from the support's labels to every
        label of the space, so z may lie off the support (an inner node of a tree).
        Costs within ``_COST_TIE`` (relative) of the least are a tie (LFs of equal
        weight that split), which the rounding of the posterior must not decide: it
        differs between numerically equivalent fits. A tie goes to the tied label of
        the largest hash of (votes, label): the same answer for the same votes on any
        machine, and no label favoured over the others.
        """
        L = self.check(L)
        logp, patterns, inverse = self.log_proba_patterns(L)
        probs_u = np.exp(logp)
        best = np.empty(probs_u.shape[0], dtype=np.int64)
        step = max(1, (1 << 25) // max(cost.shape[1], 1))  # ~256 MB of expected costs
        for start in range(0, probs_u.shape[0], step):  # blocks of unique patterns
            block = probs_u[start : start + step] @ cost
            tied = least_cost_ties(block)
            pick = np.argmax(tied, axis=1)
            rows = np.flatnonzero(tied.sum(axis=1) > 1)
            if rows.size:
                keys = _tie_keys(patterns[start + rows], cost.shape[1])
                pick[rows] = np.argmax(np.where(tied[rows], keys, np.uint64(0)), axis=1)
            best[start : start + step] = pick
        return best[inverse]


def least_cost_ties(expected: np.ndarray) -> np.ndarray:
    """(n, r) bool: the labels whose expected cost is within ``_COST_TIE``
    (relative) of each row's least: exact ties up to the rounding of the posterior."""
    least = expected.min(axis=1, keepdims=True)
    return expected <= least + _COST_TIE * (1.0 + np.abs(least))


def _tie_keys(patterns: np.ndarray, n_labels: int) -> np.ndarray:
    """(u, n_labels) pseudo-random positive keys, a function of each row of votes and
    the label only (a splitmix64 finalizer of both)."""
    with np.errstate(over="ignore"):
        mult = np.uint64(0x9E3779B97F4A7C15) ** np.arange(
            1, patterns.shape[1] + 1, dtype=np.uint64
        )
        h = ((patterns + 1).astype(np.uint64) * mult).sum(axis=1, dtype=np.uint64)
        x = h[:, None] + np.arange(n_labels, dtype=np.uint64) * np.uint64(
            0xBF58476D1CE4E5B9
        )
        x ^= x >> np.uint64(30)
        x *= np.uint64(0xBF58476D1CE4E5B9)
        x ^= x >> np.uint64(27)
        x *= np.uint64(0x94D049BB133111EB)
        x ^= x >> np.uint64(31)
    return (x >> np.uint64(1)) + np.uint64(1)
