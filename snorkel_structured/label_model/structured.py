"""StructuredLabelModel: Snorkel's LabelModel lifted to labels in a finite metric space."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any

import numpy as np

from snorkel_structured import _warnings
from snorkel_structured._chunks import (
    is_dask_collection,
    reduce_stats,
)
from snorkel_structured._persistence import (
    PersistenceMixin,
)
from snorkel_structured._validation import (
    check_label_matrix,
    check_scalar,
    check_seed,
)
from snorkel_structured.estimators._em_core import _Problem
from snorkel_structured.estimators._noise_family import SHRINK_GRID
from snorkel_structured.estimators._noise_kernel import _SqDists
from snorkel_structured.estimators._stats import VoteStats, _count_patterns
from snorkel_structured.estimators._support_posterior import SupportPosterior
from snorkel_structured.estimators.em import (
    mle_estimate,
)
from snorkel_structured.estimators.uws_finite import uws_fit
from snorkel_structured.exceptions import IdentifiabilityWarning
from snorkel_structured.label_model._closing_checks import ClosingChecks
from snorkel_structured.label_model._confusion import (
    ConfusionChoice,
    confusion_summary,
)
from snorkel_structured.label_model._dependency_groups import (
    DEPENDENCE_MIN_EXCESS,
    DEPENDENCE_MIN_RATIO,
    check_dependencies,
    dependency_groups,
    dependency_weights,
    is_auto,
)
from snorkel_structured.label_model._dev_choice import (
    choose_with_dev,
    posterior_table,
)
from snorkel_structured.label_model._noise_aware_methods import NoiseAwareMethods
from snorkel_structured.label_model._posterior import PosteriorMethods
from snorkel_structured.label_model._snorkel_compat import (
    check_prec_init_shape,
    check_train_options,
    snorkel_base_labeler,
)
from snorkel_structured.label_model._structured_checks import (
    StructuredChecks,
)
from snorkel_structured.noise.finite import (
    expected_sq_dist,
)
from snorkel_structured.rankings.dependencies import (
    clusters_of,
    clusters_shown,
    label_pair_agreement,
    rank_one_error_rates,
    source_correlations,
)
from snorkel_structured.rankings.dependencies import (
    detect_dependent_pairs as detect_ranking_dependencies,
)
from snorkel_structured.spaces.finite import DENSE_MAX_LABELS as _DENSE_MAX
from snorkel_structured.spaces.finite import Discrete, FiniteMetricSpace
from snorkel_structured.spaces.permutations import Permutations

__all__ = ["StructuredLabelModel"]

# Dirichlet pseudo-count per label of the default whole-space prior (add-one-half, as
# Jeffreys'), so that maximum likelihood cannot send a voted label's weight to 0.
PRIOR_PSEUDO_COUNT = 0.5
# dependencies="auto" tests a random thinning of the rows down to this many (as
# many as the EM choices read, em.CHOICE_ROWS).
DETECT_MAX_ROWS = 10_000
# Snorkel's BaseLabeler, without the torch import of Snorkel's model package.
BaseLabeler = snorkel_base_labeler()


def _strong(observed: Any, expected: Any) -> Any:
    """Whether a flagged pair's excess agreement is large enough to act on.

    Practical significance: real LFs are rarely exactly independent, and at a few
    thousand rows the test flags excesses of agreement far too small to matter
    (1.4-1.6 times the expected rate among correlated clinical measures); counting
    such LFs as one source costs more than it saves. A pair whose ratio cannot be
    read (expected rate 0) counts as strong.
    """
    observed, expected = np.asarray(observed), np.asarray(expected)
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = np.where(expected > 0, observed / expected, np.nan)
        excess = np.where(
            expected < 1, (observed - expected) / (1.0 - expected), np.nan
        )
    return ~(ratio < DEPENDENCE_MIN_RATIO) | (excess >= DEPENDENCE_MIN_EXCESS)


def _chunk_stats(
    chunk: Any, *, n_labels: int, name: str, n_lfs: int | None
) -> VoteStats:
    """VoteStats of one chunk of rows (module level, so Dask workers can unpickle it)."""
    L = check_label_matrix(chunk, n_labels=n_labels, min_lfs=3, name=name, n_lfs=n_lfs)
    patterns, counts = _count_patterns(L, n_labels)
    return VoteStats(int(n_labels), patterns, counts.astype(np.float64))


def _is_chunked(data: Any) -> bool:
    return is_dask_collection(data) or isinstance(data, Iterator)


def _with_labels(
    support: np.ndarray, prior: np.ndarray, labels: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The support extended by the labeled rows' labels (each at a small prior mass)."""
    new = np.setdiff1d(np.unique(labels), support)
    if not new.size:
        return support, prior
    prior = prior.copy()
    prior[new] = 1.0 / max(prior.size, 1) ** 2
    return np.union1d(support, new), prior / prior.sum()


def _moments(
    stats: VoteStats,
    S: Any,
    T: np.ndarray,
    prior: np.ndarray,
    theta: np.ndarray,
    **family: Any,
) -> tuple[np.ndarray, float]:
    """E[d^2(lambda_a, Y)] per LF and the log-likelihood of ``stats`` under a model."""
    power, eps, log_h = family["power"], family["eps"], family["log_h"]
    prob = _Problem(
        stats,
        _SqDists(S, power),
        None,
        family["groups"],
        log_h,
        group_corr=family.get("group_corr"),
    )
    th = theta[:, T] if theta.ndim == 2 else theta
    w = prior[T]
    ll = prob.loglik(np.log(np.maximum(w, 1e-300)), th, T, family["alpha"], eps)
    return prob.expected_sq_dist(th, T, w, eps), ll


class StructuredLabelModel(
    StructuredChecks,
    ConfusionChoice,
    ClosingChecks,
    NoiseAwareMethods,
    PosteriorMethods,
    PersistenceMixin,
    BaseLabeler,
):
    """Label model for labels in a finite metric space (rankings, tree nodes, classes).

    Labeling functions vote items of ``space`` (as indices; -1 abstains). Given the true
    label y, LF a votes v with probability exp(-theta_a d^2(v, y)) / Z_a(y), independently
    of the other LFs; the prior P(Y = y) lives on a few labels (its support). The model
    is fitted without ground truth from the counts of vote patterns, and returns the
    posterior P(Y | votes) like Snorkel's ``LabelModel``, whose method signatures it keeps.

    Parameters
    ----------
    space : FiniteMetricSpace
        The label space (``ss.Permutations``, ``ss.GraphSpace``, ``ss.Discrete``...).
    estimator : {"mle", "tensor", "uws"}, default="mle"
        "mle": maximum likelihood by EM over vote patterns, started from the tensor
        estimate (or a greedy support search when that is not identifiable).
        "tensor": the paper's tensor decomposition (Algorithm 1, done without oracles).
        "uws": the universal weak supervision baseline (additive squared distances);
        its prior is then estimated by EM over the prior alone, theta held fixed.
    n_components : int, optional
        Number of labels with prior mass; estimated when omitted ("mle" and
        "tensor").
    label_dependent : bool or "auto", default="auto"
        One theta per LF and true label, shape (n_lfs, r) (like Snorkel's class-
        conditional accuracies). "auto" lets the data choose (BIC on how the LFs
        agree) among one theta shared by all LFs (the unweighted vote), one per LF,
        and, for ``Discrete`` spaces only, one per LF and class. Only
        ``estimator="mle"`` has it ("auto" means one per LF for the others). On
        ``Discrete`` spaces ``confusion="auto"`` fits full tables instead where they
        apply (below).
    confusion : bool or "auto", default="auto"
        ``Discrete`` spaces: fit Dawid and Skene's model, one full table P(lambda_a =
        v | Y = y) per LF (abstain included), instead of the distance family, which
        spreads an LF's errors evenly over the wrong classes (see
        :func:`~snorkel_structured.estimators.dawid_skene_estimate`). "auto" fits
        it when the other noise options and ``prior_support`` are "auto",
        ``n_components`` is None, no LFs are found or declared dependent (LFs that
        share a source keep the distance family's fallback), every voting LF
        shares at least 10 rows with each of two other LFs, and the tables (n_lfs
        (k + 1) k numbers) are no larger than the votes. Labeled rows (``L_dev``)
        join its likelihood with their classes known. True asks for it
        (``Discrete`` and "mle" only; refused with dependencies); False keeps the
        distance family.
        ``noise_model_["theta"]`` is then ``"confusion"``, ``theta_`` the distance
        family's theta that is right as often, per LF and class.
    abstain_dependent : bool or "auto", default="auto"
        Let P(LF abstains | Y) depend on the true label, as in Snorkel's label model
        (whose synthetic LFs abstain more on some classes). "auto" keeps it when BIC
        prefers it. ``estimator="mle"`` only. Rows where no LF votes still get the
        prior, as in Snorkel.
    noise_power : {1, 2, "auto"}, default="auto"
        The noise family exp(-theta_a d^p): p = 2 is the paper's; p = 1 has heavier
        tails (on rankings with the Kendall distance, the Mallows model). "auto"
        chooses on held-out rows ("mle" only; see Notes).
    outliers : bool or "auto", default="auto"
        Add an outlier component: with probability eps_a LF a's vote is unrelated
        to Y (drawn from the LF's own vote distribution), so an LF that is usually
        right but sometimes far off is not judged by its worst votes. "auto"
        chooses on held-out rows ("mle" only).
    shrinkage : float in [0, 1] or "auto", default="auto"
        How far each theta_a moves toward the LFs' mean (0: not at all, 1: all LFs
        weigh the same, the unweighted vote). "auto" chooses on held-out rows, so
        that estimation noise cannot make the model lose to unweighted voting
        ("mle" only).
    prior_support : "auto", "all", "search" or array-like of int, default="auto"
        Labels the prior may use ("mle" and "uws"). "auto": every label of the
        space whenever the space's (r, r) tables fit (up to 2,048 labels, e.g.
        ``Permutations(6)`` or a tree of a few hundred nodes), so that every label
        the votes support can be predicted; the prior over them is estimated by
        EM, or uniform where BIC on the full likelihood prefers it: a prior fitted
        over hundreds of labels that the agreements barely inform follows the
        votes' own frequencies, and with weakly agreeing LFs it decided the answer
        (LFs whose truth is the consensus of their signals were predicted at chance
        level). Above that size, as "search". "search": fit the prior over the
        candidate labels (all labels, or the 64 most-voted in a space above 64
        labels) and keep the heaviest labels as long as BIC improves, comparing
        with a greedy search (the paper's few-centers setting; it warns,
        ``IdentifiabilityWarning``, when two support sizes are within 1 in BIC). A
        label off the support is never predicted. "all": the whole space. Or the
        label indices.
    max_iter : int, default=500
        EM iterations ("mle", "uws").
    tol : float, default=1e-8
        EM tolerance on the log-likelihood per row. Above 10,000 rows and 5,000
        distinct vote patterns, where the choices are made on a sample and the
        chosen model is refitted on all rows, the refit stops at the looser of ``tol`` and 0.02 nats in all (about 0.2 of
        a standard error in the parameters).
    seed : None, int or numpy.random.Generator
        Randomness of the estimators (restarts). An int gives identical refits; a
        Generator advances at each fit.
    verbose : bool, default=False
        Unused (kept for Snorkel compatibility); nothing is printed.

    Attributes
    ----------
    stats_ : VoteStats
        Vote-pattern counts the model was fitted on (``partial_fit`` adds to them).
    n_lfs_ : int
    prior_ : ndarray of shape (r,)
        Estimated P(Y = y), zero off the support.
    support_ : ndarray of int of shape (k,)
    theta_ : ndarray of shape (n_lfs,) or (n_lfs, r)
    expected_sq_dist_ : ndarray of shape (n_lfs,)
        Estimated E[d^2(lambda_a, Y)] per LF.
    coverage_ : ndarray of shape (n_lfs,)
        Fraction of rows each LF voted on.
    abstain_ : ndarray of shape (n_lfs, r)
        P(LF abstains | Y = y): ``1 - coverage_`` for every y unless
        ``abstain_dependent_``.
    noise_model_ : dict
        The noise model the data chose ("mle"): ``{"prior": "free" | "uniform" |
        "fixed", "theta": "shared" | "lf" | "label" | "confusion", "abstain":
        bool}`` ("confusion": Dawid and Skene's tables, see ``confusion``), with the
        family (``"power"``, ``"outliers"``, ``"shrinkage"``) and, where made, the
        other choices' evidence (``"safety_net_z"``; on ``Permutations`` with found
        dependencies, ``"temperature"``, the factor on theta, and
        ``"temperature_z"``); empty for "tensor" and "uws".
    label_dependent_ : bool
        Whether ``theta_`` is (n_lfs, r) (one theta per LF and label).
    abstain_dependent_ : bool
        Whether abstains depend on the label.
    noise_power_ : float
        p of the noise family exp(-theta d^p) (2 for "tensor" and "uws").
    outlier_rate_ : ndarray of shape (n_lfs,)
        eps_a: the probability that LF a's vote is unrelated to Y (zeros without
        the outlier component).
    outlier_dist_ : ndarray of shape (n_lfs, r)
        h_a, the distribution of an outlier vote of LF a: its own vote frequencies.
        P(lambda_a = v | y) = (1 - eps_a) exp(-theta_a d^p(v, y)) / Z_a(y) +
        eps_a h_a(v).
    shrinkage_ : float
        The shrinkage of theta toward the LFs' mean that was applied.
    dependencies_ : list of (int, int)
        The LF pairs declared dependent in ``fit``, or found (``"auto"``). On
        :class:`~snorkel_structured.Permutations` the search stops at the first
        pair found strong enough to act on (the fit is then the same whichever
        pairs follow; ``shared_sources_`` names the clusters it uses):
        ``StructuredLFAnalysis.lf_dependencies`` runs it to the end.
    vote_weights_ : ndarray of shape (n_lfs,)
        Each LF's weight in the posterior on a row where all g LFs of its group of
        mutually dependent LFs vote: 1/g (1 for an LF without dependencies). On a
        row where j of them vote, each of their votes weighs 1/j. For the
        groups of ``shared_sources_``: 1 / sum_b rho_ab over the group, rho_ab the
        correlation of the LFs' errors (on a row, over the members that voted).
    shared_sources_ : list of (int, int)
        On :class:`~snorkel_structured.Permutations` with found dependencies
        (``dependencies="auto"``): the LF pairs that order item pairs alike far more
        often than their accuracies explain
        (:func:`~snorkel_structured.rankings.dependencies.detect_dependent_pairs`);
        the unweighted vote counts each cluster of them as one source. Else [].
    lf_groups_ : ndarray of int of shape (n_lfs,)
        Each LF's dependency group (connected components of ``dependencies_``).
    dependency_test_ : pandas.DataFrame or None
        With ``dependencies="auto"``: the per-pair result of the dependency test
        (see :func:`~snorkel_structured.estimators.dependencies.lf_dependency_test`).
    dev_choice_ : str or None
        With labeled rows (``L_dev``, ``Y_dev``): the candidate chosen by
        cross-validation on them (see Notes); None without.
    dev_scores_ : pandas.DataFrame or None
        Every candidate's cross-validated mean distance to the labels
        (``mean_distance``), whether it learned from the labels
        (``fitted_on_dev``), the standard error of its difference from the chosen
        one, and ``chosen``.
    log_likelihood_ : float
        Log-likelihood of the fitted votes under the estimate.
    fit_warnings_ : list of str
        Warnings raised by the estimators during the last fit (also emitted).

    See Also
    --------
    snorkel_structured.estimators.em.mle_estimate
    snorkel_structured.estimators.tensor.tensor_estimate

    Notes
    -----
    P(Y = y | votes) is proportional to prior_y prod_a exp(-theta_a S[lambda_a, y]) /
    Z_a(y) over the LFs that voted (the paper's section 2.2, with the partition
    function kept: it depends on y outside homogeneous spaces). Estimation needs only the
    additive :class:`~snorkel_structured.estimators.VoteStats`, so ``fit`` equals
    ``partial_fit`` over chunks equals ``fit_stats(sum(chunk_stats))`` equals ``fit``
    of an iterator of chunks or of a Dask array/DataFrame (reduced on the workers).

    Scale. The posterior is zero off ``support_``, so prediction uses only the k rows
    S[support_, :] (an (n_lfs, r + 1, k) table) and costs O(n_patterns k n_lfs).
    Spaces above 2,048 labels (Permutations(7), r = 5,040; Permutations(8), r =
    40,320) never build the (r, r) distance matrix: "mle" computes the rows it needs
    with ``space.dist`` and searches supports among the 64 most-voted labels;
    "tensor"/"uws" and ``prior_support="all"`` are refused there. Use
    ``predict_proba(L, labels="support")`` (n_samples, k) for such spaces: the
    default (n_samples, r) form raises when it would exceed ``max_bytes`` (1 GiB).

    References
    ----------
    .. [1] H. Vishwakarma, N. Roberts, F. Sala. "Lifting Weak Supervision To Structured
       Prediction." NeurIPS 2022.

    Examples
    --------
    >>> import numpy as np, snorkel_structured as ss
    >>> data = ss.synthetic.make_ranking_data(5000, seed=0)
    >>> lm = ss.StructuredLabelModel(data.space, estimator="mle", seed=0).fit(data.L)
    >>> lm.theta_.shape, lm.predict_proba(data.L).shape
    ((3,), (5000, 24))
    >>> bool(np.abs(lm.expected_sq_dist_ - data.expected_sq_dist).max() < 0.1)
    True
    """

    def __init__(
        self,
        space: FiniteMetricSpace,
        *,
        estimator: str = "mle",
        n_components: int | None = None,
        label_dependent: bool | str = "auto",
        confusion: bool | str = "auto",
        abstain_dependent: bool | str = "auto",
        noise_power: Any = "auto",
        outliers: bool | str = "auto",
        shrinkage: Any = "auto",
        prior_support: Any = "auto",
        max_iter: int = 500,
        tol: float = 1e-8,
        seed: Any = None,
        verbose: bool = False,
    ) -> None:
        BaseLabeler.__init__(
            self, cardinality=len(space) if hasattr(space, "__len__") else 0
        )
        self.space = space
        self.estimator = estimator
        self.n_components = n_components
        self.label_dependent = label_dependent
        self.confusion = confusion
        self.abstain_dependent = abstain_dependent
        self.noise_power = noise_power
        self.outliers = outliers
        self.shrinkage = shrinkage
        self.prior_support = prior_support
        self.max_iter = max_iter
        self.tol = tol
        self.seed = seed
        self.verbose = verbose

    def __repr__(self) -> str:
        return f"StructuredLabelModel({self.space!r}, estimator={self.estimator!r})"

    # -- fitting ---------------------------------------------------------------------
    def fit(
        self,
        L_train: Any,
        Y_dev: Any = None,
        class_balance: Any = None,
        progress_bar: bool = True,
        *,
        L_dev: Any = None,
        dependencies: Any = "auto",
        **config: Any,
    ) -> StructuredLabelModel:
        """Estimate the prior and each LF's noise from the votes ``L_train``.

        Parameters
        ----------
        L_train : array-like of int of shape (n_samples, n_lfs), iterator of such chunks, or Dask array/DataFrame
            Label indices into ``space``; -1 = abstain. At least 3 LFs. An iterator
            (e.g. a generator reading a file chunk by chunk) is consumed once and never
            held whole; a Dask collection is reduced partition by partition where it
            lives (on the workers of an active ``dask.distributed`` client) and only
            the vote-pattern counts travel back. All give the same estimate as one
            in-memory array (the statistics are additive).
        Y_dev : array-like of int of shape (n_dev,), optional
            Gold labels. With ``L_dev``: the labels of those rows (a small labeled
            dev set). Without ``L_dev``: as in Snorkel, when ``class_balance`` is
            not given their frequencies fix the prior. On a ``Discrete`` space every class must
            occur in ``Y_dev`` (Snorkel's "Does not match LabelModel cardinality");
            elsewhere labels absent from ``Y_dev`` get prior 0.
        class_balance : array-like of shape (r,), optional
            A fixed prior over the labels of ``space`` (normalized here). On a
            ``Discrete`` space it must have one positive entry per class, as in
            Snorkel; elsewhere zeros are allowed (a prior on a few labels).
        progress_bar : bool, default=True
            Show a tqdm bar over EM's starting points (estimator "mle"; the fit has
            no epochs), as Snorkel shows one over its epochs.
        L_dev : array-like of int of shape (n_dev, n_lfs), optional
            Votes on labeled rows whose labels are ``Y_dev`` ("mle" only). They join
            the likelihood with their labels known (jointly with the unlabeled
            votes) and their labels join the support. The noise family and
            shrinkage chosen on held-out votes (a labeled row weighing as one row)
            are overruled, as is that weight (1, or all unlabeled rows' together),
            when the posterior's held-out expected distance to their labels
            improves by two standard errors. A hundred rows typically suffice.
        dependencies : "auto", None or sequence of (int, int), default="auto"
            LF pairs known to be dependent (e.g. reading the same source; see
            ``StructuredLFAnalysis.lf_dependencies``). Each group of mutually
            dependent LFs counts as one LF in the likelihood and the posterior
            (every member weighs 1/g), so shared errors are not counted twice;
            "tensor" (and the tensor start of "mle") uses no triplet containing a
            dependent pair, "uws" no dependent pair's mean distance. When fewer
            than 3 groups remain the LFs' accuracies are not identifiable and
            "mle" gives every LF the same theta (the unweighted vote), with a
            warning.
            "auto" ("mle" with at least 4 LFs): the pairs that
            :func:`~snorkel_structured.estimators.dependencies.detect_dependent_pairs`
            flags from the vote-pattern counts (family-wise false-alarm rate 5%;
            above ``DETECT_MAX_ROWS`` (10,000) rows, of a random thinning of them
            to that many) and whose LFs agree at least ``DEPENDENCE_MIN_RATIO`` (2)
            times as often as independence predicts, or have gone at least
            ``DEPENDENCE_MIN_EXCESS`` (half) of the way from that to always
            agreeing; if any, "mle" gives every LF the same theta (the
            unweighted vote, its noise family chosen by leave-one-out risk; a
            family with outliers keeps a rate per LF, ``outlier_rate_``, which
            discounts an LF whose votes stray from the rest; on ``Permutations``,
            without outliers, the clusters of LFs that order item pairs alike far
            more often than their accuracies explain count as one source each,
            see ``shared_sources_``, and theta is scaled by the flattest factor of
            1, 0.5, 0.2 and 0.1 unless a sharper one's least-expected-distance
            answer predicts held-out LFs' votes better by two standard errors:
            ``noise_model_["temperature"]``) with a warning naming them
            (``dependencies_``, ``dependency_test_``): found dependencies are
            graded on real tasks, not copies, and counting each group as one LF
            measured worse than the unweighted vote. With labeled
            rows the cross-validated choice (see ``L_dev``) can still weigh them.
            None or [] declares none.
        **config
            ``seed``, ``max_iter`` and ``tol`` override the constructor's for this
            fit. Snorkel's training options ``n_epochs``, ``lr``, ``l2``,
            ``optimizer``, ``optimizer_config``, ``lr_scheduler``,
            ``lr_scheduler_config``, ``prec_init``, ``log_freq`` and ``mu_eps`` are
            validated as Snorkel's ``LabelModel.fit`` validates them (same errors,
            e.g. "Unrecognized optimizer option") and then ignored: the fit is EM on
            vote-pattern counts, with no epochs, learning rate or initial precisions.
            ``mu_eps`` (in [0, 0.5]) is not applied either: the reported
            ``get_conditional_probs()`` stay those of the model ``predict`` uses.

        Returns
        -------
        self : StructuredLabelModel

        Raises
        ------
        ValueError
            If ``L_train`` is not a 2-D integer matrix with at least 3 columns and votes
            in [-1, r), ``class_balance``/``Y_dev`` do not fit the space, or a Snorkel
            training option has a value Snorkel refuses.
        TypeError
            For an unknown keyword argument, or an option of a type Snorkel refuses.
        """
        self._check_params()
        options = check_train_options(
            config, progress_bar=progress_bar, own=("seed", "max_iter", "tol")
        )
        if L_dev is not None and Y_dev is None:
            raise ValueError("L_dev needs Y_dev, the labels of its rows.")
        fixed = self._check_class_balance(
            class_balance, Y_dev if L_dev is None else None
        )
        stats = self._collect_stats(L_train, "L_train")
        check_prec_init_shape(options["prec_init"], stats.n_lfs)
        self._labeled = self._check_dev(L_dev, Y_dev, stats.n_lfs)
        self.dependency_test_ = None
        detected = is_auto(dependencies)
        if detected:
            dependencies = self._detect_dependencies(stats, config)
        self._dependencies = check_dependencies(dependencies, stats.n_lfs)
        return self._fit_stats(
            stats, fixed, dict(config, progress_bar=progress_bar), detected=detected
        )

    def _detect_dependencies(
        self, stats: VoteStats, config: dict[str, Any]
    ) -> list[tuple[int, int]]:
        """Pairs flagged by the dependency test ("mle" with at least 4 LFs)."""
        if self.estimator != "mle" or stats.n_lfs < 4:
            return []
        seed = config.get("seed", self.seed)
        seed = seed if isinstance(seed, (int, np.integer)) else 0
        from snorkel_structured.estimators.dependencies import detect_dependent_pairs

        if stats.n_samples > DETECT_MAX_ROWS:
            # A random thinning of the counts: a pair strong enough to be acted on
            # (DEPENDENCE_MIN_RATIO) is found with power ~1 at this size, and the
            # test's cost grows with the number of distinct patterns.
            stats = stats.thinned(
                DETECT_MAX_ROWS / stats.n_samples,
                np.random.default_rng([int(seed), 7]),
            )
        # On Permutations any strong pair sends the fit to the unweighted vote over
        # the clusters of the rankings' own test (shared_sources_), whichever pairs
        # follow it: the search stops at the first (on tumour_concavity 0.36 ->
        # 0.15 s, the same predictions). lf_dependency_test reports them all.
        until = _strong if isinstance(self.space, Permutations) else None
        with np.errstate(invalid="ignore", divide="ignore"):  # degenerate tables
            pairs, self.dependency_test_ = detect_dependent_pairs(
                stats, self.space, seed=int(seed), until=until
            )
        frame = self.dependency_test_
        strong = frame["dependent"] & _strong(
            frame["observed"].to_numpy(), frame["expected"].to_numpy()
        )
        pairs = [
            (int(a), int(b)) for a, b in frame.loc[strong, ["lf_a", "lf_b"]].values
        ]
        if pairs:
            _warnings.warn(
                f"LF pairs {pairs} agree far more often than independent LFs would "
                f"(at least {DEPENDENCE_MIN_RATIO:g} times as often, or half-way to "
                "always; they likely share a source), so the "
                "LFs' accuracies cannot be told from their agreements: the label "
                "model gives every LF the same theta (the unweighted vote; on "
                "Discrete the data may choose one theta per class, shared by the "
                "LFs, see noise_model_; with outliers, an LF that strays from the "
                "rest is still discounted, see outlier_rate_). Label a few "
                "rows (fit(..., L_dev=, Y_dev=)) to weigh them, pass your own pairs "
                "(each group then counts as one LF), or dependencies=[] to fit them "
                "as independent.",
                IdentifiabilityWarning,
                stacklevel=3,
            )
        return pairs

    def _shared_sources(self, stats: VoteStats) -> tuple[np.ndarray, Any]:
        """Clusters of LFs that share a source by the rankings' test, and the
        correlation of their errors within each cluster ((n_lfs, n_lfs), or None
        when the test flags no pair); sets ``shared_sources_`` and warns."""
        agreement = label_pair_agreement(
            np.asarray(self.space.items), stats.patterns, stats.counts
        )
        pairs = detect_ranking_dependencies(agreement)
        self.shared_sources_ = pairs
        if not pairs:
            return np.arange(stats.n_lfs), None
        clusters = clusters_of(pairs, stats.n_lfs)
        corr = source_correlations(
            agreement, clusters, rank_one_error_rates(agreement, pairs)
        )
        _warnings.warn(
            f"LFs {clusters_shown(clusters)} order item pairs alike far more often "
            "than their accuracies explain (they seem to read one source), so in the "
            "unweighted vote each group counts as one source: its LFs' votes weigh "
            "their share of it (vote_weights_, shared_sources_).",
            IdentifiabilityWarning,
            stacklevel=4,
        )
        return clusters, corr

    def _collect_stats(
        self, data: Any, name: str, n_lfs: int | None = None
    ) -> VoteStats:
        """VoteStats of an array, an iterator of chunks or a Dask collection."""
        to_stats = functools.partial(
            _chunk_stats, n_labels=len(self.space), name=name, n_lfs=n_lfs
        )
        if _is_chunked(data):
            return reduce_stats(data, to_stats)
        return to_stats(data)

    def fit_stats(
        self, stats: VoteStats, class_balance: Any = None
    ) -> StructuredLabelModel:
        """Fit from vote-pattern counts (e.g. ``sum`` of per-chunk ``VoteStats``).

        Parameters
        ----------
        stats : VoteStats
            With ``n_labels == len(space)`` and at least 3 LFs.
        class_balance : array-like of shape (r,), optional
            A fixed prior.

        Returns
        -------
        self : StructuredLabelModel
        """
        self._check_params()
        if not isinstance(stats, VoteStats):
            raise TypeError(f"stats must be a VoteStats; got {type(stats).__name__}.")
        if stats.n_labels != len(self.space):
            raise ValueError(
                f"stats must count votes over {len(self.space)} labels (the space); got "
                f"n_labels={stats.n_labels}."
            )
        if stats.n_lfs < 3:
            raise ValueError(
                f"stats must have at least 3 labeling functions; got {stats.n_lfs}. Add "
                "labeling functions."
            )
        self._labeled, self._dependencies = None, []
        return self._fit_stats(
            stats, self._check_class_balance(class_balance, None), {}
        )

    def partial_fit(self, L_chunk: Any) -> StructuredLabelModel:
        """Add the votes of ``L_chunk`` to the statistics and re-estimate.

        The prior fixed by the last ``fit`` (``class_balance``/``Y_dev``) is kept.

        Parameters
        ----------
        L_chunk : array-like of int of shape (n_chunk, n_lfs), iterator of chunks, or Dask collection

        Returns
        -------
        self : StructuredLabelModel
        """
        self._check_params()
        fitted = hasattr(self, "stats_")
        stats = self._collect_stats(L_chunk, "L_chunk", self.n_lfs_ if fitted else None)
        if not fitted:
            self._labeled, self._dependencies = None, []
        if fitted:
            stats = self.stats_ + stats
        return self._fit_stats(stats, getattr(self, "_fixed_prior", None), {})

    def _fit_stats(
        self,
        stats: VoteStats,
        fixed: np.ndarray | None,
        config: dict[str, Any],
        detected: bool = False,
    ) -> StructuredLabelModel:
        """Fit on ``stats``; ``detected``: ``self._dependencies`` were found by the
        dependency test (not declared)."""
        stats.check_has_votes("L_train")
        seed = config.get("seed", self.seed)
        max_iter = check_scalar(
            config.get("max_iter", self.max_iter), "max_iter", kind="int", low=1
        )
        tol = check_scalar(
            config.get("tol", self.tol), "tol", low=0.0, low_inclusive=False
        )
        rng = check_seed(seed)
        r = len(self.space)
        large = r > _DENSE_MAX
        if large and self.estimator != "mle":
            raise ValueError(
                f"estimator={self.estimator!r} needs (r, r) tables of the space; r = {r} "
                f"labels is above {_DENSE_MAX}. Use estimator='mle', which works on the "
                "rows of the support only."
            )
        if (
            large
            and isinstance(self.prior_support, str)
            and self.prior_support == "all"
        ):
            raise ValueError(
                f"prior_support='all' on a space of {r} labels would need (n_patterns, "
                f"{r}) tables; use 'auto' (or n_components) or give the label indices."
            )
        S = None if large else self.space.squared_distance_matrix
        support = self._support()
        vote_weights = dependency_weights(self._dependencies, stats.n_lfs)
        pattern_groups = group_corr = None
        self.shared_sources_: list[tuple[int, int]] = []
        lf_groups = dependency_groups(self._dependencies, stats.n_lfs)
        groups = lf_groups
        shrinkages = (
            SHRINK_GRID if self.shrinkage == "auto" else (float(self.shrinkage),)
        )
        outliers = (False, True) if self.outliers == "auto" else (bool(self.outliers),)
        detected = detected and bool(self._dependencies)
        # Rankings with found dependencies: shared sources, no outlier rates and a
        # chosen temperature (below).
        rankings_fallback = detected and isinstance(self.space, Permutations)
        if lf_groups.max() + 1 < 3 or detected:
            # No three independent sources: nothing identifies the LFs' accuracies,
            # and weighing a group as one voice would hand a lone LF as much say as
            # all the others together. Detected dependencies likewise: on real tasks
            # they are graded (LFs partly sharing sources), not copies, and counting
            # a group as one voice lost to the unweighted vote on 4 of 6 tasks where
            # pairs were flagged (and the fitted weights, to it on 3). The unweighted
            # vote over the LFs (family chosen by leave-one-out risk) instead.
            # Its per-LF outlier rates stay, except on rankings (below): dropping
            # them, or the paper's family alone, lost on the tree (european_regions
            # 0.116 -> 0.158); tying the rates across LFs helped neither.
            groups, vote_weights = np.arange(stats.n_lfs), None
            if self.shrinkage == "auto":
                shrinkages = (1.0,)
            if rankings_fallback:
                # On rankings a sharper test tells a shared source from graded
                # dependence: pairs of LFs that order item pairs alike far more often
                # than their accuracies explain (RankingLabelModel's test). The
                # unweighted vote then counts each such cluster as one source, its
                # members' votes weighed by their design effect: the vote of the
                # majority reading one source no longer outweighs the LFs that
                # read others.
                groups, group_corr = self._shared_sources(stats)
                if group_corr is not None:
                    pattern_groups = groups
                    vote_weights = 1.0 / group_corr.sum(axis=1)
                # No outlier rates: fitted as if the LFs were independent, they
                # take the votes that stray from a source several LFs share for
                # outliers, and the posterior follows that source's mode. Without
                # them (and at the temperature chosen below) the unweighted vote
                # moved country_density 0.189 -> 0.160, country_area 0.155 ->
                # 0.146, tumour_concavity 0.135 -> 0.128; it cost
                # country_population 0.093 -> 0.098 (Kemeny's: 0.093).
                if self.outliers == "auto":
                    outliers = (False,)
        elif self._dependencies:
            pattern_groups = groups
        dev_scores = None
        confusion = None
        with _warnings.captured() as caught:
            if self._fits_confusion(stats):
                confusion, noise_model = self._fit_confusion(
                    stats, fixed, max_iter, tol
                )
                prior, ll = confusion.prior, confusion.log_likelihood
                support = np.arange(r)
                abstain = np.exp(confusion.log_table[:, 0, :])
                theta, expected = confusion_summary(confusion)
                power, eps, log_h = 2.0, None, None
            elif self.estimator == "mle":
                est = mle_estimate(
                    stats,
                    self.space if large else S,
                    n_components=self.n_components,
                    support=support,
                    prior=fixed,
                    label_dependent=self.label_dependent,
                    abstain_dependent=self.abstain_dependent,
                    plain_classes=isinstance(self.space, Discrete),
                    max_iter=max_iter,
                    tol=tol,
                    seed=rng,
                    labeled=None,  # labeled rows choose below, by cross-validation
                    progress_bar=bool(config.get("progress_bar", False)),
                    powers=self._powers(),
                    outliers=outliers,
                    shrinkages=shrinkages,
                    dependencies=self._dependencies,
                    groups=groups,
                    group_corr=group_corr,
                    # The distance decision's risk is read against the LFs' votes:
                    # sound where they are of one kind (orderings of every item);
                    # on a tree, a coarse LF (a country where the truth is a
                    # region) rewards coarse answers, and the flattest posterior
                    # won there (world_regions 0.070 -> 0.105).
                    temper=rankings_fallback,
                    prior_pseudo_count=PRIOR_PSEUDO_COUNT
                    if self._spread_prior()
                    else 0.0,
                )
                prior, theta, ll = est.prior, est.theta, est.log_likelihood
                expected, abstain = est.expected_sq_dist, est.abstain
                support, noise_model = est.support, est.noise_model
                power, log_h = est.power, est.log_vote_dist
                eps = est.outlier_rate if noise_model.get("outliers") else None
                if self._labeled is not None:
                    support, prior = _with_labels(support, prior, self._labeled[2])
                    dev = choose_with_dev(
                        self.space if large else S,
                        support,
                        prior[support],
                        theta=theta,
                        power=power,
                        eps=eps,
                        log_h=log_h,
                        alpha=None if abstain is None else abstain[:, support],
                        groups=groups,
                        labeled=self._labeled,
                        rng=rng,
                        group_corr=group_corr,
                    )
                    if not dev.grouped:
                        groups, pattern_groups = np.arange(stats.n_lfs), None
                        group_corr = vote_weights = None
                    if dev.name != "label model":
                        theta, power, eps = dev.theta, dev.power, dev.eps
                        expected, ll = _moments(
                            stats,
                            self.space if large else S,
                            support,
                            prior,
                            theta,
                            power=power,
                            eps=eps,
                            log_h=log_h,
                            alpha=None if abstain is None else abstain[:, support],
                            groups=groups,
                            group_corr=group_corr,
                        )
                    noise_model = dict(noise_model, dev_choice=dev.name)
                    dev_scores = dev.scores
            elif self.estimator == "tensor":
                from snorkel_structured.estimators.tensor import tensor_estimate

                t = tensor_estimate(
                    stats,
                    S,
                    n_components=self.n_components,
                    seed=rng,
                    dependencies=self._dependencies,
                )
                prior = (
                    np.asarray(t.prior, dtype=np.float64) if fixed is None else fixed
                )
                theta = np.asarray(t.theta, dtype=np.float64)
                ll = float("nan")
                expected, abstain, noise_model = None, None, {}
                power, eps, log_h = 2.0, None, None
            else:
                prior, theta, ll = uws_fit(
                    stats,
                    S,
                    prior=fixed,
                    support=support,
                    dependencies=self._dependencies,
                    max_iter=max_iter,
                    tol=tol,
                )
                expected, abstain, noise_model = None, None, {}
                power, eps, log_h = 2.0, None, None
        self.fit_warnings_ = [w.message for w in caught]
        for w in caught:  # re-emit, pointing at the caller
            _warnings.warn(w.message, w.category, stacklevel=3)
        self.stats_ = stats
        self.n_lfs_ = stats.n_lfs
        self.prior_ = np.asarray(prior, dtype=np.float64)
        self.support_ = (
            np.asarray(support, dtype=np.int64)
            if self.estimator == "mle"
            else np.flatnonzero(self.prior_ > 0)
        )
        self.theta_ = np.array(theta, dtype=np.float64)
        # An LF that never voted has no estimated accuracy, only a default (the
        # pooled or largest theta): its votes at prediction time must not count.
        coverage = stats.coverage()
        self.theta_[coverage == 0] = 0.0
        self.noise_model_ = noise_model
        self.noise_power_ = float(power)
        self.outlier_rate_ = np.zeros(stats.n_lfs) if eps is None else np.asarray(eps)
        with np.errstate(under="ignore"):
            self.outlier_dist_ = (
                np.zeros((stats.n_lfs, r)) if log_h is None else np.exp(log_h)
            )
        self.shrinkage_ = float(noise_model.get("shrinkage", 0.0))
        self.dependencies_ = list(self._dependencies)
        self.vote_weights_ = (
            np.ones(stats.n_lfs) if vote_weights is None else vote_weights
        )
        self.label_dependent_ = self.theta_.ndim == 2
        self.abstain_dependent_ = abstain is not None
        self.abstain_ = (
            np.asarray(abstain, dtype=np.float64)
            if abstain is not None
            else np.repeat((1.0 - coverage)[:, None], r, axis=1)
        )
        self.expected_sq_dist_ = (
            np.asarray(expected, dtype=np.float64)
            if expected is not None
            else expected_sq_dist(S, self.theta_, self.prior_)
        )
        self.coverage_ = coverage
        self.log_likelihood_ = float(ll)
        self._fixed_prior = fixed
        self.dev_choice_ = noise_model.get("dev_choice")
        self.dev_scores_ = dev_scores
        T = self.support_
        table = (
            confusion.log_table
            if confusion is not None
            else posterior_table(
                self.space if large else S,
                self.theta_,
                T,
                power=self.noise_power_,
                eps=eps,
                log_h=log_h,
                alpha=self.abstain_[:, T] if self.abstain_dependent_ else None,
            )
        )
        self.lf_groups_ = lf_groups
        self._posterior = SupportPosterior(
            table, np.log(self.prior_[T]), T, r, pattern_groups, group_corr
        )
        self._closing_checks(stats)
        return self

    def _powers(self) -> tuple[float, ...]:
        """Candidate powers p of the noise family exp(-theta d^p)."""
        if self.noise_power != "auto":
            return (float(self.noise_power),)
        # Distances in {0, 1} (classes): d^1 = d^2, one family.
        return (2.0,) if isinstance(self.space, Discrete) else (1.0, 2.0)
