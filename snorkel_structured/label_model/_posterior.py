"""The fitted posterior of StructuredLabelModel, and the methods that read it.

Fitting (``structured.py``) ends in a
:class:`~snorkel_structured.estimators._support_posterior.SupportPosterior`: the
log-probability tables of the votes given each label of the support and the log
prior. Everything a
fitted model answers (``predict_proba``, ``predict``, ``score``, pseudolabel draws,
Snorkel's ``get_weights``/``get_conditional_probs``) is computed from it here.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
from snorkel.analysis import Scorer

from snorkel_structured import _warnings
from snorkel_structured._chunks import is_dask_collection, map_partitions_to_array
from snorkel_structured._validation import (
    ABSTAIN,
    check_is_fitted,
    check_seed,
)
from snorkel_structured.estimators._noise_kernel import support_log_table
from snorkel_structured.estimators._support_posterior import SupportPosterior
from snorkel_structured.estimators.dawid_skene import conditional_log_table
from snorkel_structured.exceptions import IdentifiabilityWarning
from snorkel_structured.spaces.finite import DENSE_MAX_LABELS, Discrete

_TIE_BREAK = ("abstain", "true-random", "random")
_STRUCTURED_METRICS = ("mean_distance", "mean_sq_distance")
# predict_proba(L) refuses to return a full (n_samples, r) array above this many bytes.
MAX_PROBA_BYTES = 1 << 30
_LABELS = ("all", "support")
_DECISIONS = ("map", "distance", "sq_distance")
# Pickles written before the table moved to the estimators name it here.
_SupportPosterior = SupportPosterior


def _check_tie_break(policy: Any) -> None:
    if policy not in _TIE_BREAK:
        raise ValueError(
            f"tie_break_policy must be one of {_TIE_BREAK}; got {policy!r}."
        )


def _max_partition_rows(data: Any) -> int:
    """Rows of the largest partition of a Dask array (0 when unknown, e.g. DataFrames)."""
    chunks = getattr(data, "chunks", None)
    if not chunks or any(c != c for c in chunks[0]):  # NaN: unknown sizes
        return 0
    return int(max(chunks[0]))


# predict() warns when ties leave at least this share of the rows with votes
# unlabeled (tie_break_policy="abstain").
TIE_WARN_SHARE = 0.05


def _warn_if_many_ties(preds: np.ndarray, L: np.ndarray) -> None:
    """Warn when ``predict`` abstains on many rows that have votes: exact ties.

    An unweighted vote over rankings (LFs found dependent) leaves 10-16% of the rows
    of some real tasks tied between labels of equal probability and equal expected
    distance, where Snorkel's rule returns -1 without a word.
    """
    # Only the abstained rows are read first: with no tie, predict pays one pass
    # over its own output, not another over L (a third of its time at 1e6 x 3).
    abstained = np.flatnonzero(preds == ABSTAIN)
    n_tied = int(np.count_nonzero((L[abstained] != ABSTAIN).any(axis=1)))
    if not n_tied:
        return
    n_voted = int(np.count_nonzero((L != ABSTAIN).any(axis=1)))
    if n_tied >= TIE_WARN_SHARE * n_voted:
        _warnings.warn(
            f"{n_tied} of the {n_voted} rows with votes ({n_tied / n_voted:.0%}) are "
            "exact ties between labels of equal posterior probability (and, off "
            "Discrete, equal expected distance), and predict returns -1 on them "
            "(tie_break_policy='abstain', Snorkel's rule). For a label on every "
            "row with votes, pass tie_break_policy='random' (a deterministic pick, "
            "as Snorkel's) or use predict(L, decision='distance').",
            IdentifiabilityWarning,
            stacklevel=3,
        )


class PosteriorMethods:
    """Methods of a fitted StructuredLabelModel that read ``self._posterior``.

    The host class provides ``space``, ``n_lfs_``, ``support_``, ``prior_``, ``_family``,
    ``theta_``, ``coverage_``, ``_posterior`` and ``_check_L``/``_check_gold``.
    """

    def _tie_space(self) -> Any:
        """The space by whose distances tied MAP labels are told apart, or None on
        plain classes (there a label's expected 0-1 distance is one less its
        probability: tied labels stay tied, as in Snorkel)."""
        return None if isinstance(self.space, Discrete) else self.space

    def log_conditional_probs(self) -> np.ndarray:
        """log P(lambda_a = v | Y = y) of the fitted model, shape (n_lfs, r, r) [a, y, v].

        Raises ``ValueError`` for a space above 2,048 labels (the table would be
        n_lfs r^2 numbers); the support's rows are what prediction uses.
        """
        check_is_fitted(self, "theta_")
        r = len(self.space)
        if r > DENSE_MAX_LABELS:
            raise ValueError(
                f"log_conditional_probs() would build an ({self.n_lfs_}, {r}, {r}) array "
                f"on a space of {r} labels; the model only needs the support's rows."
            )
        if self.noise_model_.get("theta") == "confusion":  # the fitted tables
            return conditional_log_table(self._posterior.table)
        family = self._family()
        log_h = None
        if family["outlier_rate"] is not None:
            with np.errstate(divide="ignore"):
                log_h = np.log(family["outlier_dist"])
        table = support_log_table(
            self.space.squared_distance_matrix,
            self.theta_,
            np.arange(r),
            power=family["power"],
            eps=family["outlier_rate"],
            log_h=log_h,
        )  # (m, r + 1, r) [a, v + 1, y]
        return table[:, 1:, :].transpose(0, 2, 1)

    def get_conditional_probs(self) -> np.ndarray:
        """Snorkel's table P(lambda_a = v | Y = y), shape (n_lfs, r + 1, r).

        ``out[a, 0, y]`` is the abstain probability (``abstain_[a, y]``: 1 - coverage
        unless abstains depend on the label) and ``out[a, v + 1, y]`` the probability of
        vote v. Each ``out[a, :, y]`` sums to 1.
        """
        check_is_fitted(self, "theta_")
        out = np.empty((self.n_lfs_, len(self.space) + 1, len(self.space)))
        out[:, 0, :] = self.abstain_
        out[:, 1:, :] = (1.0 - self.abstain_)[:, None, :] * np.exp(
            self.log_conditional_probs()
        ).transpose(0, 2, 1)
        return out

    def get_weights(self) -> np.ndarray:
        """Each LF's estimated accuracy P(lambda_a = Y | lambda_a votes), shape (n_lfs,)."""
        check_is_fitted(self, "theta_")
        T = self.support_
        # P(votes y | y) for y in the support: table[a, T_j + 1, j], then among votes
        diag = np.exp(self._posterior.table[:, T + 1, np.arange(T.size)])  # (m, k)
        acc = diag @ self.prior_[T]
        if self.abstain_dependent_:  # the table holds P(votes y, votes | y)
            acc = acc / np.maximum((1.0 - self.abstain_[:, T]) @ self.prior_[T], 1e-300)
        return np.clip(acc, 1e-6, 1.0)

    def _check_labels(self, labels: str) -> None:
        if labels not in _LABELS:
            raise ValueError(f"labels must be one of {_LABELS}; got {labels!r}.")

    def predict_proba(
        self, L: Any, *, labels: str = "all", max_bytes: int = MAX_PROBA_BYTES
    ) -> Any:
        """Posterior P(Y = y | votes) per row.

        Parameters
        ----------
        L : array-like of int of shape (n_samples, n_lfs), or Dask array/DataFrame
            A Dask collection gives a lazy Dask array, computed partition by
            partition (on the workers of an active ``dask.distributed`` client).
        labels : {"all", "support"}, default="all"
            "all": one column per label of the space, as Snorkel's ``predict_proba``
            (zero off ``support_``). "support": one column per label of
            ``support_`` only, shape (n_samples, k): the posterior is zero elsewhere,
            so this loses nothing and is what large spaces (Permutations(8), r =
            40,320) should use.
        max_bytes : int, default=2**30
            Largest (n_samples, r) result "all" may return in memory (for a Dask
            collection: per partition).

        Returns
        -------
        probs : ndarray of shape (n_samples, r) or (n_samples, k)

        Raises
        ------
        ValueError
            If ``labels="all"`` would exceed ``max_bytes``; the message gives the size
            and suggests ``labels="support"``.
        """
        check_is_fitted(self, "theta_")
        self._check_labels(labels)
        r, k = len(self.space), self.support_.size
        width = r if labels == "all" else k
        post = self._posterior
        if is_dask_collection(L):
            if labels == "all":
                self._check_budget(_max_partition_rows(L), max_bytes, "per partition ")
            return map_partitions_to_array(
                L, functools.partial(post.proba, labels=labels), (width,), np.float64
            )
        L = self._check_L(L)
        if labels == "all":
            self._check_budget(L.shape[0], max_bytes, "")
        return post.proba(L, labels)

    def _check_budget(self, n: int, max_bytes: int, where: str) -> None:
        r = len(self.space)
        need = 8 * n * r
        if need > max_bytes:
            raise ValueError(
                f"predict_proba(L) would return an ({n}, {r}) float64 array {where}"
                f"({need / 2**30:.2f} GiB), above max_bytes={max_bytes}. The posterior is "
                f"zero outside the {self.support_.size} labels of support_: use "
                "predict_proba(L, labels='support') for the (n_samples, k) posterior over "
                "support_, predict(L) for labels, or pass chunks of rows."
            )

    def predict(
        self,
        L: Any,
        return_probs: bool | None = False,
        tie_break_policy: str = "abstain",
        *,
        seed: Any = None,
        decision: str = "map",
    ) -> Any:
        """MAP label per row, ties broken as Snorkel's ``probs_to_preds`` (or the
        label of least expected distance, with ``decision``).

        Parameters
        ----------
        L : array-like of int of shape (n_samples, n_lfs), or Dask array/DataFrame
            A Dask collection gives a lazy Dask array of predictions (partition by
            partition; "random" ties then hash the row index within its partition).
        return_probs : bool, default=False
            Also return ``predict_proba(L)`` (in-memory input only).
        tie_break_policy : {"abstain", "true-random", "random"}, default="abstain"
            Labels within 1e-5 of the top probability tie. On a space other than
            ``Discrete``, of those only the ones of least expected distance to Y
            (``decision="distance"``'s criterion) stay tied: an unweighted vote
            with integer distances (Kendall's) ties on most rows, and the label
            nearest the rest of the posterior's mass is the better answer.
            Of what stays tied, "abstain" returns -1;
            "random" picks deterministically from the row index (Snorkel's hash
            policy); "true-random" draws with ``seed``. Exact ties are real here:
            two LFs of equal estimated accuracy that disagree on a row give it a
            posterior of exactly 1/2 each (e.g. on Snorkel's sparse generator, where
            most voted rows have one or two votes). Snorkel's ``LabelModel`` labels
            such rows only because its SGD leaves the weights unequal by noise, which
            picks a side at random; "random" labels every voted row too, without
            pretending to know.
        seed : None, int or numpy.random.Generator
            For "true-random".
        decision : {"map", "distance", "sq_distance"}, default="map"
            "map": the most probable label (Snorkel's rule; best for exact match).
            "distance": the label z of the space minimizing E[d(z, Y) | votes], the
            Bayes answer when predictions are judged by their mean distance (it may
            lie off ``support_``, e.g. a country node between two likely regions).
            "sq_distance": minimizing E[d^2(z, Y) | votes] (the posterior's Frechet
            mean). ``tie_break_policy`` is unused for these two: labels whose
            expected costs are equal up to rounding (LFs of equal weight that
            split) go to one of them picked by a hash of the row's votes, the same
            on every machine and favouring no label.

        Returns
        -------
        preds : ndarray of int of shape (n_samples,)
        probs : ndarray of shape (n_samples, r), if ``return_probs``
        """
        check_is_fitted(self, "theta_")
        _check_tie_break(tie_break_policy)
        if decision not in _DECISIONS:
            raise ValueError(f"decision must be one of {_DECISIONS}; got {decision!r}.")
        cost = None
        if decision != "map":
            sq = self.space.squared_distance_rows(self.support_)  # (k, r)
            cost = sq if decision == "sq_distance" else np.sqrt(np.maximum(sq, 0.0))
        post = self._posterior
        if is_dask_collection(L):
            if return_probs or tie_break_policy == "true-random":
                raise ValueError(
                    "Over a Dask collection, predict supports neither return_probs nor "
                    "tie_break_policy='true-random'; call predict_proba(L) separately."
                )
            return map_partitions_to_array(
                L,
                functools.partial(
                    post.predict_block,
                    tie_break_policy=tie_break_policy,
                    cost=cost,
                    space=self._tie_space(),
                ),
                (),
                np.int64,
            )
        L = self._check_L(L)
        if cost is not None:
            preds = post.predict_min_cost(L, cost)
            if return_probs:
                probs_u, inverse = post.log_proba(L)
                probs_u = np.exp(probs_u)
        else:
            preds, probs_u, inverse = post.predict(
                L, tie_break_policy, seed, self._tie_space()
            )
            if tie_break_policy == "abstain":
                _warn_if_many_ties(preds, L)
        if return_probs:
            self._check_budget(L.shape[0], MAX_PROBA_BYTES, "")
            probs = np.zeros((L.shape[0], len(self.space)))
            probs[:, self.support_] = probs_u[inverse]
            return preds, probs
        return preds

    def score(
        self,
        L: Any,
        Y: Any,
        metrics: list[str] | None = ["accuracy"],  # noqa: B006 - Snorkel's signature
        tie_break_policy: str = "abstain",
    ) -> dict[str, float]:
        """Snorkel's metrics plus structured ones on the MAP predictions, as Snorkel.

        As Snorkel's ``LabelModel.score``: "coverage" is the fraction of rows the
        model does not abstain on (ties under ``tie_break_policy="abstain"``); every
        other metric is computed on the rows the model labels and whose gold label is
        known (not -1).

        Parameters
        ----------
        L : array-like of int of shape (n_samples, n_lfs)
        Y : array-like of int of shape (n_samples,)
            True label indices; -1 marks an unknown label (the row is left out).
        metrics : list of str, default=["accuracy"]
            Any metric of Snorkel's ``Scorer`` ("accuracy", "coverage", "f1",
            "f1_micro", "roc_auc", ...) and "mean_distance", "mean_sq_distance" (to the
            true label). ``None`` scores nothing, as in Snorkel.
        tie_break_policy : {"abstain", "true-random", "random"}, default="abstain"
            As in :meth:`predict`.

        Returns
        -------
        scores : dict of str to float
            In the order of ``metrics``.

        Raises
        ------
        ValueError
            For an unknown metric ("Unrecognized metric: ...") or
            ``tie_break_policy``.
        """
        check_is_fitted(self, "theta_")
        _check_tie_break(tie_break_policy)
        L = self._check_L(L)
        y = self._check_gold(Y, "Y", n=L.shape[0], allow_unknown=True)
        metrics = [] if metrics is None else list(metrics)
        snorkel_metrics = [m for m in metrics if m not in _STRUCTURED_METRICS]
        scorer = Scorer(metrics=snorkel_metrics)  # refuses unknown metric names
        preds, probs_u, inverse = self._posterior.predict(
            L, tie_break_policy, space=self._tie_space()
        )
        probs = None
        if "roc_auc" in snorkel_metrics:  # the only metric reading probs
            self._check_budget(L.shape[0], MAX_PROBA_BYTES, "")
            probs = np.zeros((L.shape[0], len(self.space)))
            probs[:, self.support_] = probs_u[inverse]
        keep = (preds != ABSTAIN) & (y != ABSTAIN)
        if not keep.any() and any(m != "coverage" for m in metrics):
            # Snorkel's scorer (scikit-learn) raises on empty arrays: say why instead.
            _warnings.warn(
                "No row has both a prediction and a known gold label (the model "
                "abstains, or Y is -1, on every row): metrics other than coverage are "
                "NaN.",
                UserWarning,
                stacklevel=2,
            )
            scorer = Scorer(metrics=[m for m in snorkel_metrics if m == "coverage"])
        scores = scorer.score(y, preds, probs)  # drops -1 golds and preds but coverage
        out: dict[str, float] = {}
        for name in metrics:
            if name in _STRUCTURED_METRICS:
                d = self.space.dist(preds[keep], y[keep])
                d = d if name == "mean_distance" else d * d
                out[name] = float(d.mean()) if keep.any() else float("nan")
            else:
                out[name] = float(scores.get(name, np.nan))
        return out

    def sample_pseudolabels(self, L: Any, seed: Any = None) -> np.ndarray:
        """One draw per row from the posterior P(Y | votes): shape (n_samples,).

        Parameters
        ----------
        L : array-like of int of shape (n_samples, n_lfs)
        seed : None, int or numpy.random.Generator

        Returns
        -------
        labels : ndarray of int64 of shape (n_samples,)
        """
        check_is_fitted(self, "theta_")
        L = self._check_L(L)
        rng = check_seed(seed)
        logp, inverse = self._posterior.log_proba(L)
        u_count, k = logp.shape
        cdf = np.cumsum(np.exp(logp), axis=1)
        cdf /= cdf[:, -1:]
        flat = (cdf + np.arange(u_count)[:, None]).ravel()
        pos = np.searchsorted(flat, inverse + rng.random(inverse.size), side="right")
        return self.support_[np.minimum(pos - inverse * k, k - 1)].astype(np.int64)
