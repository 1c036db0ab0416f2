"""RankingLabelModel: LF accuracies for rankings of any length, without enumerating S_n."""

from __future__ import annotations

import difflib
import functools
from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd
from scipy.special import expit
from sklearn.base import BaseEstimator

from snorkel_structured import _warnings
from snorkel_structured._chunks import is_dask_collection, reduce_stats
from snorkel_structured._persistence import (
    PersistenceMixin,
    check_state_array,
    state_attr,
    state_int,
)
from snorkel_structured._validation import (
    check_is_fitted,
    check_scalar,
    check_seed,
    warn_silent_lfs,
)
from snorkel_structured.exceptions import IdentifiabilityWarning

# CHANCE_Z, COPY_AGREEMENT, DEV_FOLDS and SINGLE_LF_TIE_WEIGHT were defined here:
# re-exported ("X as X").
from snorkel_structured.label_model._ranking_checks import CHANCE_Z as CHANCE_Z
from snorkel_structured.label_model._ranking_checks import (
    COPY_AGREEMENT as COPY_AGREEMENT,
)
from snorkel_structured.label_model._ranking_checks import (
    equal_if_frustrated,
    evidence_checks,
    warn_if_overagreeing,
    warn_if_pairwise_drift,
)
from snorkel_structured.label_model._ranking_dev import DEV_FOLDS as DEV_FOLDS
from snorkel_structured.label_model._ranking_dev import (
    SINGLE_LF_TIE_WEIGHT as SINGLE_LF_TIE_WEIGHT,
)
from snorkel_structured.label_model._ranking_dev import choose_on_dev
from snorkel_structured.label_model._ranking_votes import PairVotes, pair_votes
from snorkel_structured.rankings._gibbs import gibbs_sweeps
from snorkel_structured.rankings._votes import (
    check_orderings,
    check_pairwise,
    check_votes,
    kendall_tau_distance,
    pair_index,
)
from snorkel_structured.rankings.dependencies import (
    clusters_of,
    clusters_shown,
    detect_dependent_pairs,
    frustrated_triangles,
    overagreeing_triplets,
    source_shares,
)
from snorkel_structured.rankings.estimate import (
    NOISE_MODELS,
    RankingStats,
    estimate_position_weights,
    estimate_theta,
    gap_features,
    pair_signs,
    position_weights,
    triplet_theta,
)
from snorkel_structured.rankings.kemeny import _METHODS as _KEMENY_METHODS
from snorkel_structured.rankings.kemeny import (
    AUTO_EXACT_MAX_ITEMS,
    DP_MAX_ITEMS,
    kemeny_rank,
)
from snorkel_structured.spaces.rankings import Rankings

__all__ = ["RankingLabelModel"]

# The likelihood refinement's row sample holds at most this many (row, pair)
# instances (10,000 rows of 20 items; 1,600 of 50), and at least MIN_SAMPLE_ROWS rows.
SAMPLE_PAIRS = 2_000_000
MIN_SAMPLE_ROWS = 1000
# Pairwise vote cells (int8) built at once from an in-memory vote array.
_STATS_CELLS = 50_000_000
# Rows decoded at once (bounds the (rows, n, n) matrices handed to the decoder).
_DECODE_ROWS = 2048
# The ``decoder`` values: kemeny_rank's methods (one list, so the two cannot drift).
DECODERS = _KEMENY_METHODS


class RankingLabelModel(PersistenceMixin, BaseEstimator):
    """Weak supervision for rankings of any number of items.

    Each LF votes an ordering of a row's items, a top-k list, or (in pairwise form)
    any partial order; the model estimates without labels how much each LF's
    ordering of a pair is worth, and predicts the weighted Kemeny ranking, the MAP of
    the posterior ``P(y | votes) ~ exp(-sum_a sum_p w_ap [y orders pair p against
    LF a])`` (see :mod:`snorkel_structured.rankings.estimate`). Nothing enumerates
    the ``n_items!`` rankings, so lists of tens to hundreds of items work.

    Parameters
    ----------
    space : Rankings
        The label space (its ``n_items``).
    noise : {"auto", "position", "mallows", "pairwise"}, default="auto"
        How an LF errs, which sets the weights ``w_ap``:

        - ``"position"``: each pair an LF orders is right with probability
          ``expit(w)``, ``w = theta_a + gap_slope_a x``, x the pair's gap in the
          LF's list scaled to [0, 1] (0 for neighbours; an item a top-k list leaves
          out sits at the middle of the positions it leaves, as in Borda's count,
          see :func:`~snorkel_structured.rankings.estimate.gap_features`): items a
          list puts far apart are ordered more reliably than neighbours, as with LFs
          that sort by a noisy score. List votes only.
        - ``"mallows"``: each vote is a top-k Mallows draw, ``w_ap = theta_a`` for
          every pair (the exact likelihood when the LFs are Mallows; ``theta_`` is
          then the Mallows dispersion). List votes only.
        - ``"pairwise"``: each pair a vote orders is flipped independently,
          ``w_ap = theta_a`` (any partial order).
        - ``"auto"``: ``"position"`` for list votes, ``"pairwise"`` for votes given
          in pairwise form. On the benchmark's real list tasks ``"position"`` is
          ahead of ``"mallows"`` on 9 of 12 task-seeds (see the README).
    max_sample_rows : int, default=10000
        Rows (a uniform random sample) the likelihood refinement and the triplets
        run on, and at most ``SAMPLE_PAIRS`` (2e6) item pairs in all (but at least
        1,000 rows); the dependency test reads every row. A row's chance to be
        sampled is drawn from ``seed`` and the row's index, so the sample depends
        on the rows and their order, not on how they are split into chunks (see
        :meth:`fit`).
    max_iter : int, default=30
        Monte Carlo EM iterations.
    dependencies : "auto", None or list of (int, int), default="auto"
        LFs that share a source agree with each other more than their accuracies
        explain, and would be taken for accurate. ``"auto"``: pairs flagged by
        :func:`~snorkel_structured.rankings.dependencies.detect_dependent_pairs`
        (4 LFs or more; a warning names them); a list: pairs you declare; None:
        every LF independent given the truth. The pairs join LFs into groups; a
        group counts as one source (accuracies from triplets of LFs in three
        different groups), each LF's weight scaled by its share of it,
        ``1 / sum_b rho_ab`` over its group with ``rho`` the estimated correlation
        of the LFs' errors (``source_share_``): 1 / size for copies, more for LFs
        that err apart.
    decoder : {"auto", "exact_dp", "ilp", "heuristic"}, default="auto"
        How :meth:`predict` finds the weighted Kemeny ranking
        (:func:`~snorkel_structured.rankings.kemeny.kemeny_rank`): exact up to 12
        items, insertion local search above. Checked by :meth:`fit`
        (``"exact_dp"`` takes at most 20 items).
    seed : None, int or numpy.random.Generator, default=0
        Randomness of the row sample (an int; otherwise 0 there) and of the Monte
        Carlo EM.

    Attributes
    ----------
    n_lfs_ : int
    theta_ : ndarray of shape (n_lfs,)
        The weights :meth:`predict` uses: each LF's weight on a pair (at gap 0
        under ``"position"``; the Mallows dispersion under ``"mallows"``), or the
        dev-row choice's weights.
    gap_slope_ : ndarray of shape (n_lfs,)
        How each LF's weight grows with the pair's gap (0 unless ``"position"``).
    theta_unsupervised_, gap_slope_unsupervised_ : ndarray of shape (n_lfs,)
        The estimates from unlabeled votes alone.
    theta_triplet_ : ndarray of shape (n_lfs,)
        The closed-form triplet start.
    pair_error_rate_ : ndarray of shape (n_lfs,)
        Estimated fraction of the pairs each LF orders that it orders wrongly
        (from the triplets).
    noise_ : str
    dependencies_ : list of (int, int)
        The pairs of LFs modeled as sharing a source.
    lf_clusters_ : ndarray of int of shape (n_lfs,)
        Group of each LF (connected components of ``dependencies_``).
    source_share_ : ndarray of shape (n_lfs,)
        Factor of each LF's weight for the source it shares with its group
        (:func:`~snorkel_structured.rankings.dependencies.source_shares`; 1 alone).
    frustrated_triangles_ : list of (int, int, int)
        LF triplets whose agreements LFs that err independently cannot show
        (:func:`~snorkel_structured.rankings.dependencies.frustrated_triangles`;
        ``dependencies="auto"`` only). If any, every LF with a weight gets the same
        one.
    overagreeing_triplets_ : list of (int, int, int)
        Triplets ``(a, b, c)`` in which LF a agrees with LFs b and c more than any
        accuracy allows (:func:`~snorkel_structured.rankings.dependencies.overagreeing_triplets`;
        ``dependencies="auto"`` only): shared sources or a consensus truth that
        the weights read as accuracy. If one of a triplet's agreements is negative
        (an LF reads reversed what another reads), every LF with a weight gets the
        same one, as for ``frustrated_triangles_``; otherwise a warning says so
        when no dev rows are given and the weights are not already equal.
    n_iter_ : int
    stats_ : RankingStats
    choice_ : str
        ``"label model"`` without dev rows; else the dev-row choice: ``"label
        model"``, ``"equal weights"``, ``"Borda count"`` (each pair weighed by
        its gap in each list; ``noise="position"``), ``"LF <a> first"``, ``"dev
        weights"`` (each LF's weights fitted on the dev rows) or ``"dev weights,
        sources once"``
        (those times ``source_share_``, offered when some LFs share a source).
    dev_pair_accuracy_ : float or None
        With dev rows: the fraction of their pairs (those some LF orders) that the
        chosen weights' rankings order rightly (the ``q`` of :meth:`loss_weights`).
    dev_scores_ : pandas.DataFrame or None
        Each candidate's mean normalized Kendall distance on the dev rows (weights
        estimated from the dev rows themselves are cross-validated) and the
        standard error of its difference to the unsupervised model's. A candidate
        replaces the unsupervised model only when it is better by more than
        ``DEV_MIN_SE`` (1) such standard errors (otherwise a warning says so).

    Notes
    -----
    Safeguards, each with an ``IdentifiabilityWarning``: an LF that agrees with no
    other LF detectably more than a random ordering would gets weight 0; if none
    does, every LF gets the same tiny weight (unweighted Kemeny, pair probabilities
    near 1/2); LFs that order 99% of their common pairs alike are named (copies of
    one source and very accurate LFs look the same); an LF whose theta reaches its
    cap (``THETA_MAX``, never wrong) is named; fewer than 3 independent sources give
    equal weights, and so do LF triplets whose agreements show that their errors
    depend on each other (``frustrated_triangles_``), or in which an LF agrees with
    one LF and against another more than any accuracy allows; an LF that agrees with
    two others more than any accuracy allows is named (``overagreeing_triplets_``: a
    shared source, or a truth that is a consensus of the LFs' signals, which the
    weights read as accuracy; on such a consensus the Borda count can be far ahead);
    a dev-row candidate must win by a standard error.

    Examples
    --------
    >>> import numpy as np, snorkel_structured as ss
    >>> from snorkel_structured.rankings.mallows import sample_mallows
    >>> space = ss.Rankings(12)
    >>> Y = space.random_point(3000, seed=0)  # the truth, for the example only
    >>> V = np.stack([sample_mallows(Y, t, k=6, seed=a)  # top-6 Mallows votes
    ...               for a, t in enumerate([0.2, 0.4, 0.6, 0.8])], axis=1)
    >>> lm = ss.RankingLabelModel(space, noise="mallows", seed=0).fit(V)
    >>> np.round(lm.theta_, 1).tolist()
    [0.2, 0.4, 0.6, 0.8]
    >>> round(lm.score(V, Y)["kendall_tau"], 2)  # fraction of pairs ordered wrongly
    0.13
    """

    def __init__(
        self,
        space: Rankings,
        *,
        noise: str = "auto",
        max_sample_rows: int = 10000,
        max_iter: int = 30,
        dependencies: Any = "auto",
        decoder: str = "auto",
        seed: Any = 0,
    ) -> None:
        self.space = space
        self.dependencies = dependencies
        self.noise = noise
        self.max_sample_rows = max_sample_rows
        self.max_iter = max_iter
        self.decoder = decoder
        self.seed = seed

    # -- input ---------------------------------------------------------------------------
    def _check_params(self) -> None:
        if not isinstance(self.space, Rankings):
            raise ValueError(
                f"space must be a Rankings space; got {type(self.space).__name__}. "
                "For up to 8 items the enumerated Permutations space works with "
                "StructuredLabelModel."
            )
        if self.noise not in ("auto", *NOISE_MODELS):
            raise ValueError(
                f"noise must be one of {('auto', *NOISE_MODELS)}; got {self.noise!r}."
            )
        check_scalar(self.max_sample_rows, "max_sample_rows", kind="int", low=1)
        check_scalar(self.max_iter, "max_iter", kind="int", low=1)
        # Checked here, not first by kemeny_rank at predict: its message names its
        # own argument ("method"), which the user never passed, and a typo would
        # otherwise surface only after a whole fit.
        if not isinstance(self.decoder, str) or self.decoder not in DECODERS:
            close = (
                difflib.get_close_matches(self.decoder, DECODERS, n=1)
                if isinstance(self.decoder, str)
                else []
            )
            raise ValueError(
                f"decoder must be one of {DECODERS}; got {self.decoder!r}"
                + (f" (did you mean {close[0]!r}?)" if close else "")
                + '. "auto" (the default) decodes exactly up to '
                f"{AUTO_EXACT_MAX_ITEMS} items and by local search above."
            )
        if self.decoder == "exact_dp" and self.space.n_items > DP_MAX_ITEMS:
            raise ValueError(
                f"decoder='exact_dp' handles at most {DP_MAX_ITEMS} items (2^n_items "
                f"states per row); the space has {self.space.n_items}. Use "
                "decoder='ilp' for exact rankings of longer lists, or 'auto'."
            )

    def _pairwise(self, V: Any, pairwise: bool, name: str) -> PairVotes:
        """The pairwise votes, with list lengths and positions (None if pairwise)."""
        return pair_votes(V, self.space.n_items, pairwise, name)

    def _chunk_stats(
        self, block: Any, pairwise: bool, n_lfs: int | None, first_row: int
    ) -> RankingStats:
        S, k, pos = self._pairwise(block, pairwise, "V")
        if n_lfs is not None and S.shape[1] != n_lfs:
            raise ValueError(
                f"V has {S.shape[1]} LFs; the model was fitted with {n_lfs}."
            )
        seed = self.seed if isinstance(self.seed, (int, np.integer)) else 0
        capacity = min(
            self.max_sample_rows,
            max(MIN_SAMPLE_ROWS, SAMPLE_PAIRS // self.space.n_pairs),
        )
        return RankingStats.from_votes(
            S,
            k,
            self.space.n_items,
            capacity=capacity,
            # Keys by row index: the sample (and the EM's input) is the same however
            # the rows are split into chunks; keys drawn per chunk had made the
            # sample's order, and so the Monte Carlo EM, depend on the split.
            seed=int(seed),
            pos=pos,
            first_row=first_row,
        )

    def _collect(
        self, V: Any, pairwise: bool, n_lfs: int | None = None, first_row: int = 0
    ) -> RankingStats:
        """The statistics of the rows of ``V``, the first of them row ``first_row``."""
        to_stats = functools.partial(self._chunk_stats, pairwise=pairwise, n_lfs=n_lfs)
        if is_dask_collection(V) or isinstance(V, Iterator):
            return reduce_stats(V, to_stats, first_row=first_row)
        try:
            V = np.asarray(V)
        except ValueError:  # ragged lists: the votes' own check says how to pad them
            n = self.space.n_items
            check_pairwise(V, n) if pairwise else check_votes(V, n)
            raise
        # Blocks of rows bound the pairwise copies (n_rows x n_lfs x n_pairs bytes).
        block = max(
            1,
            _STATS_CELLS
            // max(np.prod(V.shape[1:]) * (1 if pairwise else self.space.n_items), 1),
        )
        if V.ndim != 3 or V.shape[0] <= block:
            return to_stats(V, first_row=first_row)
        chunks = (V[i : i + block] for i in range(0, V.shape[0], block))
        return reduce_stats(chunks, to_stats, first_row=first_row)

    # -- fitting -------------------------------------------------------------------------
    def fit(
        self,
        V: Any,
        *,
        V_dev: Any = None,
        Y_dev: Any = None,
        pairwise: bool = False,
    ) -> RankingLabelModel:
        """Estimate each LF's theta from the votes ``V``.

        Parameters
        ----------
        V : array-like of int of shape (n_rows, n_lfs, n_items), iterator of such chunks, or Dask array
            Each LF's ordering of the row's items, best first, padded with -1 (top-k
            lists; all -1 = abstain). With ``pairwise=True``: (n_rows, n_lfs,
            n_pairs) in {-1, 0, +1} over ``numpy.triu_indices(n_items, 1)`` pairs.
        V_dev, Y_dev : array-like, optional
            Votes of labeled rows (same form as ``V``) and their true orderings
            (n_dev, n_items). The model then chooses, by its Kendall distance on
            these rows, among: the unsupervised weights; weights estimated from the
            labeled rows (cross-validated); equal weights (unweighted Kemeny); and
            each single LF. See ``dev_scores_``.
        pairwise : bool, default=False

        Returns
        -------
        self : RankingLabelModel

        Notes
        -----
        The same rows in the same order give the same fit (bit for bit, with an int
        ``seed``) whether ``V`` is one array, an iterator of its chunks or a Dask
        array, and as :meth:`partial_fit` over its chunks in order: the statistics
        are sums of integer counts, exact in any split, and the row sample is keyed
        by each row's index, so the Monte Carlo EM runs on the same rows in the same
        order. Reordering the rows changes the sample (when there are more rows
        than it holds) and the order in which the EM visits them, so the estimates
        then move within their Monte Carlo error.
        """
        self._check_params()
        self._pairwise_input = bool(pairwise)
        stats = self._collect(V, pairwise)
        if (V_dev is None) != (Y_dev is None):
            raise ValueError("pass both V_dev and Y_dev, or neither.")
        self._fit_stats(stats, labeled=V_dev is not None)
        if V_dev is not None:
            self._choose_on_dev(V_dev, Y_dev)
        return self

    def partial_fit(
        self, V_chunk: Any, *, pairwise: bool | None = None
    ) -> RankingLabelModel:
        """Add the votes of ``V_chunk`` to the statistics and re-estimate.

        The statistics (pairwise agreement sums and a bounded random sample of rows)
        add across chunks, so memory stays bounded however many rows stream through.
        The chunk's rows are numbered after those already seen, so after the last
        chunk the model equals :meth:`fit` on all the rows in the same order (bit for
        bit, with an int ``seed``; see :meth:`fit`'s Notes). A dev-row choice made
        by ``fit`` is dropped (the unsupervised weights are used).
        """
        self._check_params()
        fitted = hasattr(self, "stats_")
        if pairwise is None:
            pairwise = getattr(self, "_pairwise_input", False)
        if fitted and pairwise != self._pairwise_input:
            raise ValueError("partial_fit got votes of another form than fit.")
        self._pairwise_input = bool(pairwise)
        if not fitted:
            return self._fit_stats(self._collect(V_chunk, pairwise))
        # The chunk's rows follow those already seen, as in one fit on all of them.
        stats = self._collect(
            V_chunk, pairwise, self.n_lfs_, first_row=self.stats_.n_rows
        )
        return self._fit_stats(self.stats_ + stats)

    def _fit_stats(
        self, stats: RankingStats, labeled: bool = False
    ) -> RankingLabelModel:
        m = stats.n_lfs
        if stats.n_rows == 0:
            raise ValueError("V has no rows.")
        coverage = np.diag(stats.both)
        if np.all(coverage == 0):
            raise ValueError(
                "no LF orders any pair in V (every vote abstains): there is nothing "
                "to estimate."
            )
        warn_silent_lfs(coverage, n_samples=stats.n_rows, name="V", stacklevel=3)
        noise = self.noise
        if noise == "auto":
            noise = "pairwise" if stats.sample_pos is None else "position"
        if noise in ("mallows", "position") and stats.sample_pos is None:
            raise ValueError(
                f"noise={noise!r} needs votes given as lists (top-k orderings); votes "
                "in pairwise form take noise='pairwise'."
            )
        self.noise_ = noise
        self.n_lfs_ = m
        self.stats_ = stats
        self.dependencies_ = self._dependency_pairs(stats)
        clusters = clusters_of(self.dependencies_, m)
        self.lf_clusters_ = clusters
        n_sources = int(clusters.max()) + 1
        eps, theta0 = triplet_theta(stats, noise, clusters)
        # Without triplets (fewer than 3 sources) the error rates, and so the
        # correlations, are guesses: a group then counts once.
        share = (
            source_shares(stats, clusters, eps)
            if n_sources >= 3
            else 1.0 / np.bincount(clusters)[clusters]
        )
        self.source_share_ = share
        if n_sources < 3:
            which = (
                f"{m} LF{'s' if m > 1 else ''}"
                if n_sources == m
                else f"{m} LFs in {n_sources} groups that share a source"
            )
            _warnings.warn(
                f"{which}: LF accuracies are not identifiable without labels from "
                "fewer than 3 independent sources, so every source gets the same "
                "weight (unweighted Kemeny, a group counted once). Add LFs, or pass "
                "V_dev and Y_dev.",
                IdentifiabilityWarning,
                stacklevel=3,
            )
            theta0 = np.full(
                m, np.nanmedian(theta0) if np.isfinite(theta0).any() else 1.0
            )
            theta, slope, n_iter = theta0, np.zeros(m), 0
        elif noise == "position":
            theta, slope, n_iter = estimate_position_weights(
                stats,
                theta_init=theta0,
                scale=share,
                max_iter=self.max_iter,
                seed=check_seed(self.seed),
            )
        else:
            slope = np.zeros(m)
            theta, n_iter = estimate_theta(
                stats,
                noise,
                theta_init=theta0,
                scale=share,
                max_iter=self.max_iter,
                seed=check_seed(self.seed),
            )
            if noise == "pairwise":
                warn_if_pairwise_drift(theta, theta0)
        theta[coverage == 0] = 0.0
        slope[coverage == 0] = 0.0
        theta, slope = evidence_checks(stats, theta, slope, self.dependencies_)
        # Only with dependencies found by the model: declared ones (or None) say how
        # the LFs depend, and the fit then follows them.
        detected = isinstance(self.dependencies, str)
        self.frustrated_triangles_ = frustrated_triangles(stats) if detected else []
        self.overagreeing_triplets_ = (
            overagreeing_triplets(stats, clusters) if detected else []
        )
        # Over-agreement with an agreement against another LF: one LF reads a
        # quantity another reads reversed (see equal_if_frustrated).
        A = stats.agreement
        against = [
            (a, b, c)
            for a, b, c in self.overagreeing_triplets_
            if min(A[a, b], A[a, c], A[b, c]) < 0
        ]
        theta, slope = equal_if_frustrated(
            theta, slope, self.frustrated_triangles_, against
        )
        if not (labeled or self.frustrated_triangles_ or against):
            warn_if_overagreeing(self.overagreeing_triplets_)
        self.pair_error_rate_ = eps
        self.theta_triplet_ = theta0
        # LFs sharing a source count by their share of it.
        self.theta_unsupervised_, self.gap_slope_unsupervised_ = (
            theta * share,
            slope * share,
        )
        self.theta_ = self.theta_unsupervised_.copy()
        self.gap_slope_ = self.gap_slope_unsupervised_.copy()
        self.n_iter_ = n_iter
        self.choice_ = "label model"
        self.dev_scores_ = None
        self.dev_pair_accuracy_ = None
        return self

    def _dependency_pairs(self, stats: RankingStats) -> list[tuple[int, int]]:
        """The declared pairs, or those the test flags (``dependencies="auto"``)."""
        m = stats.n_lfs
        if self.dependencies is None:
            return []
        if isinstance(self.dependencies, str):
            if self.dependencies != "auto":
                raise ValueError(
                    "dependencies must be 'auto', None or a list of LF index pairs; "
                    f"got {self.dependencies!r}."
                )
            pairs = detect_dependent_pairs(stats) if m >= 4 else []
            if pairs:
                shown = clusters_shown(clusters_of(pairs, m))
                _warnings.warn(
                    f"LFs {shown} agree with each other far more often than their "
                    "accuracies explain (they seem to share a source), so each group "
                    "counts as one source: its LFs' weights are divided by its size. "
                    "See dependencies_; pass dependencies=None to treat every LF as "
                    "independent, or your own list of pairs.",
                    IdentifiabilityWarning,
                    stacklevel=4,
                )
            return pairs
        pairs = []
        for pair in self.dependencies:
            try:
                a, b = (int(x) for x in pair)
            except (TypeError, ValueError):
                raise ValueError(
                    f"dependencies must hold pairs of LF indices; got {pair!r}."
                ) from None
            if not (0 <= a < m and 0 <= b < m) or a == b:
                raise ValueError(
                    f"dependency {pair!r} is not a pair of two different LFs in 0..{m - 1}."
                )
            pairs.append((min(a, b), max(a, b)))
        return pairs

    # -- dev rows ------------------------------------------------------------------------
    def _choose_on_dev(self, V_dev: Any, Y_dev: Any) -> None:
        choice = choose_on_dev(
            self._pairwise(V_dev, self._pairwise_input, "V_dev"),
            Y_dev,
            unsupervised=(self.theta_unsupervised_, self.gap_slope_unsupervised_),
            share=self.source_share_,
            decode=self._decode,
            noise=self.noise_,
            n_items=self.space.n_items,
            seed=self.seed,
        )
        self.dev_scores_ = choice.scores
        self.choice_ = choice.name
        self.theta_ = choice.theta
        self.gap_slope_ = choice.gap_slope
        self.dev_pair_accuracy_ = choice.pair_accuracy

    # -- prediction ----------------------------------------------------------------------
    def _margins(
        self, votes: PairVotes, theta: np.ndarray, slope: np.ndarray
    ) -> np.ndarray:
        """(n_rows, n_pairs) summed weight of the votes for i before j minus j before i."""
        S = votes.S
        if not np.any(slope):
            return np.einsum("rap,a->rp", S.astype(np.float64), theta)
        w = position_weights(
            gap_features(votes.pos).transpose(0, 2, 1), theta, slope
        ).transpose(0, 2, 1)
        return np.einsum("rap,rap->rp", S.astype(np.float64), w)

    def _decode(
        self, votes: PairVotes, theta: np.ndarray, slope: np.ndarray
    ) -> np.ndarray:
        """Weighted Kemeny orderings of the votes under weights (theta, slope)."""
        n_rows = votes.S.shape[0]
        out = np.empty((n_rows, self.space.n_items), dtype=np.int64)
        for start in range(0, n_rows, _DECODE_ROWS):
            block = votes.take(slice(start, start + _DECODE_ROWS))
            out[start : start + _DECODE_ROWS] = self._decode_margins(
                self._margins(block, theta, slope)
            )
        return out

    def _decode_margins(self, g: np.ndarray) -> np.ndarray:
        """Weighted Kemeny orderings from pair margins g (n_rows, n_pairs)."""
        n = self.space.n_items
        i, j = pair_index(n)
        out = np.empty((g.shape[0], n), dtype=np.int64)
        for start in range(0, g.shape[0], _DECODE_ROWS):
            block = g[start : start + _DECODE_ROWS]
            C = np.zeros((block.shape[0], n, n))
            C[:, i, j] = np.maximum(block, 0)
            C[:, j, i] = np.maximum(-block, 0)
            out[start : start + _DECODE_ROWS] = kemeny_rank(C, self.decoder)
        return out

    def _votes_for_predict(self, V: Any, pairwise: bool | None) -> PairVotes:
        check_is_fitted(self, "theta_")
        if pairwise is None:
            pairwise = self._pairwise_input
        votes = self._pairwise(V, pairwise, "V")
        if votes.S.shape[1] != self.n_lfs_:
            raise ValueError(
                f"V has {votes.S.shape[1]} LFs; the model was fitted with {self.n_lfs_}."
            )
        if votes.pos is None and np.any(self.gap_slope_):
            raise ValueError(
                "the model weighs each pair by its gap in the vote (noise='position'); "
                "pass votes as lists, not in pairwise form."
            )
        return votes

    def predict(self, V: Any, *, pairwise: bool | None = None) -> np.ndarray:
        """The weighted Kemeny ranking of each row's votes (the posterior's MAP).

        Returns
        -------
        orderings : ndarray of int64 of shape (n_rows, n_items)
            Item ids, best first. Items no vote orders keep their id order; a row
            where every LF abstains gets the id order itself, with a warning (it is
            no estimate: filter such rows out, as Snorkel's
            ``filter_unlabeled_dataframe`` does).
        """
        votes = self._votes_for_predict(V, pairwise)
        silent = ~np.any(votes.S != 0, axis=(1, 2))
        if silent.any():
            _warnings.warn(
                f"{int(silent.sum())} of {silent.size} rows have no vote that orders "
                "any pair of items: their predicted ordering is the item order "
                "0..n_items-1, not an estimate. Drop them before training an end "
                "model (e.g. rows where (V >= 0).any(axis=(1, 2)) is False).",
                IdentifiabilityWarning,
                stacklevel=2,
            )
        return self._decode(votes, self.theta_, self.gap_slope_)

    def predict_proba(
        self,
        V: Any,
        *,
        pairwise: bool | None = None,
        method: str = "independent",
        n_sweeps: int = 200,
    ) -> np.ndarray:
        """P(item i before item j | votes) for every row and pair.

        Parameters
        ----------
        V : array-like
            Votes, as in :meth:`fit`.
        method : {"independent", "gibbs"}, default="independent"
            ``"independent"``: ``expit(sum_a theta_a s_a)`` per pair, the posterior
            of each pair on its own (exact for 2 items, and for the pairwise noise
            model when the truth is not required to be transitive). ``"gibbs"``: the
            marginals of the posterior over full rankings, by ``n_sweeps`` sweeps of
            adjacent-swap Gibbs sampling started at the MAP (Monte Carlo error about
            ``0.5 / sqrt(n_sweeps)``; repeatable through ``seed``).
        n_sweeps : int, default=200

        Returns
        -------
        P : ndarray of float64 of shape (n_rows, n_pairs)
            Over the pairs ``numpy.triu_indices(n_items, 1)``.
        """
        if method not in ("independent", "gibbs"):
            raise ValueError(
                f"method must be 'independent' or 'gibbs'; got {method!r}."
            )
        votes = self._votes_for_predict(V, pairwise)
        return self._posterior(votes, method, n_sweeps)

    def _posterior(self, votes: PairVotes, method: str, n_sweeps: int) -> np.ndarray:
        g = self._margins(votes, self.theta_, self.gap_slope_)
        if method == "independent":
            return expit(g)
        check_scalar(n_sweeps, "n_sweeps", kind="int", low=1)
        rng = check_seed(self.seed)
        Y = self._decode_margins(g)
        gibbs_sweeps(g, Y, 10, rng)
        total = np.zeros(g.shape)
        for _ in range(n_sweeps):
            gibbs_sweeps(g, Y, 1, rng)
            total += pair_signs(Y) > 0
        return total / n_sweeps

    def score(
        self, V: Any, Y: Any, *, pairwise: bool | None = None
    ) -> dict[str, float]:
        """Mean normalized Kendall distance and pairwise accuracy of :meth:`predict`.

        Returns
        -------
        dict
            ``"kendall_tau"``: mean fraction of discordant pairs (0 = every row
            right); ``"pair_accuracy"``: 1 minus it.
        """
        Y = check_orderings(Y, self.space.n_items)
        if Y.shape[0] == 0:
            raise ValueError("Y has no rows: there is nothing to score.")
        d = kendall_tau_distance(self.predict(V, pairwise=pairwise), Y)
        return {"kendall_tau": float(d.mean()), "pair_accuracy": float(1 - d.mean())}

    def get_weights(self) -> np.ndarray:
        """Each LF's estimated pairwise accuracy: the fraction of the pairs it orders
        that it orders as the truth does (from the triplets)."""
        check_is_fitted(self, "theta_")
        return 1.0 - self.pair_error_rate_

    def loss_weights(
        self, V: Any, *, q: float | None = None, pairwise: bool | None = None
    ) -> pd.DataFrame:
        """Noise-aware loss weights for a pairwise end model (e.g. RankNet).

        Each row's pair (i, j) is a binary task whose pseudolabel is the order of i
        and j in :meth:`predict`'s ranking. If pseudolabels are right with
        probability q, the noise matrix is
        ``[[q, 1 - q], [1 - q, q]]``, and its inverse gives the weights of
        Natarajan et al. (2013): ``weight_pseudolabel = q / (2q - 1)`` on the loss
        of the pseudolabel's order and ``weight_flipped = -(1 - q) / (2q - 1)`` on
        the loss of the opposite order; their weighted sum is unbiased for the loss
        under the true order. Pairs no LF orders get both weights 0.

        q is measured on the dev rows when ``fit`` had ``V_dev`` and ``Y_dev``
        (``dev_pair_accuracy_``, over the pairs some LF orders); otherwise it is the
        model's mean posterior probability of the pseudolabels, which is optimistic
        when the LFs' errors on a pair are correlated (two items of close value are
        hard for every LF): on 2,000 lists of 20 items ranked by noisy scores it
        was 0.97 against 0.86 measured, which weakens the correction (weights
        nearer 1 and 0) without biasing it the other way. A warning says so;
        pass ``q`` (e.g. measured on a few labeled rows) to set it.

        One q for every pair is the correction's assumption; the pseudolabels'
        errors fall on pairs of close items instead, where ``p_before`` is near
        1/2. On the ten real list tasks of the benchmark, a linear RankNet scorer
        learned better from ``p_before`` as soft targets than from these weights
        on 19 of 30 task-seeds (``benchmarks/bench_ranknet_end_model.py``); try
        both on your dev rows.

        Parameters
        ----------
        V : array-like
            Votes, as in :meth:`fit`.
        q : float in (0.5, 1], optional
            Pseudolabel accuracy to use instead.

        Returns
        -------
        pandas.DataFrame
            One row per (row, pair): ``row``, ``item_i``, ``item_j`` (i < j),
            ``pseudolabel`` (+1: i before j, -1: j before i), ``p_before``
            (posterior P(i before j), ``"independent"``), ``weight_pseudolabel``,
            ``weight_flipped``.
        """
        votes = self._votes_for_predict(V, pairwise)
        g = self._margins(votes, self.theta_, self.gap_slope_)
        P = expit(g)
        z = pair_signs(self._decode_margins(g)).astype(np.int8)
        voted = np.any(votes.S != 0, axis=1)
        if q is not None:
            q = check_scalar(q, "q", low=0.5, high=1.0, low_inclusive=False)
            source = "the q passed"
        elif self.dev_pair_accuracy_ is not None:
            q, source = self.dev_pair_accuracy_, "q measured on the dev rows"
        elif voted.any():
            p_z = np.where(z > 0, P, 1 - P)
            q, source = float(p_z[voted].mean()), "the model's q"
            _warnings.warn(
                f"Pseudolabel accuracy q = {q:.3f} is the model's own estimate, which "
                "is optimistic when the LFs err on the same pairs; the Q^-1 "
                "correction is then too weak. Fit with V_dev and Y_dev (q is then "
                "measured on them) or pass q.",
                IdentifiabilityWarning,
                stacklevel=2,
            )
        else:  # no pair is voted (or no row): every weight is 0, whatever q is
            q, source = 1.0, None
        if q <= 0.5 + 1e-6:
            raise ValueError(
                f"{source} ({q:.7f}) is no better than chance: the noise matrix "
                "[[q, 1 - q], [1 - q, q]] is not invertible, so there is no unbiased "
                "correction. Check the LFs, or pass a q measured on labeled rows."
            )
        w_same, w_flip = q / (2 * q - 1), -(1 - q) / (2 * q - 1)
        n_rows, n_pairs = P.shape
        i, j = pair_index(self.space.n_items)
        return pd.DataFrame(
            {
                "row": np.repeat(np.arange(n_rows), n_pairs),
                "item_i": np.tile(i, n_rows),
                "item_j": np.tile(j, n_rows),
                "pseudolabel": z.ravel(),
                "p_before": P.ravel(),
                "weight_pseudolabel": np.where(voted, w_same, 0.0).ravel(),
                "weight_flipped": np.where(voted, w_flip, 0.0).ravel(),
            }
        )

    # -- persistence ---------------------------------------------------------------------
    def _validate_state(self) -> None:
        m = state_int(self, "n_lfs_", low=1)
        for name in (
            "theta_",
            "theta_unsupervised_",
            "theta_triplet_",
            "pair_error_rate_",
            "gap_slope_",
            "gap_slope_unsupervised_",
        ):
            check_state_array(state_attr(self, name), name, (m,))
