"""Maximum likelihood for the finite noise model: the public EM entry points.

:func:`mle_estimate` picks a starting point and a support, then runs EM over unique vote
patterns (the steps live in :mod:`._em_core`, the choices of start, support, noise
variant and family in :mod:`._em_choices`, the support search in
:mod:`._support_search`); :func:`em_refine` runs EM from a given start.

Starting points: with a given support or prior, theta = 1 / (smallest positive d^p)
for every LF (the first E-step is then a soft majority vote), and a label-dependent model is fitted directly.
Otherwise the tensor estimate when it is identifiable (spaces of at most
1,000 labels); else a greedy search over supports among candidate labels (all labels,
or the 64 most-voted ones in a larger space): the best single-center model, then labels
added one at a time where the directional derivative of the likelihood is largest (the
vertex-direction method for mixtures), a few seeded random restarts, and the best
likelihood wins.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from snorkel_structured import _warnings
from snorkel_structured._validation import check_seed
from snorkel_structured.estimators._em_choices import (
    _SLOW_PRIOR,
    _choose_model,
    _refit_chosen,
)
from snorkel_structured.estimators._em_core import (
    EMFit,
    _Problem,
    _run_em,
)
from snorkel_structured.estimators._noise_family import (
    _with_theta,
)
from snorkel_structured.estimators._noise_kernel import _SqDists, support_log_table
from snorkel_structured.estimators._stats import VoteStats
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
        Which starting point won ("tensor", "given", "profile", "restart <i>" or
        "full prior").
    warnings : list of str
    abstain : ndarray of shape (n_lfs, r) or None
        P(lambda_a abstains | Y = y) when abstains were modeled as label-dependent
        (off the support: the LF's overall abstain rate); None when they were not.
    noise_model : dict
        The variant chosen: ``{"prior": "free" | "uniform" | "fixed", "theta":
        "shared" | "lf" | "label", "abstain": bool, "power": 1 | 2, "outliers":
        bool, "shrinkage": float}`` (prior/theta/abstain by BIC, the rest on
        held-out rows; see :mod:`._noise_family`).
    outlier_rate : ndarray of shape (n_lfs,)
        eps_a, the probability that LF a's vote is unrelated to Y (0 without the
        outlier component).
    log_vote_dist : ndarray of shape (n_lfs, r)
        log of each LF's vote distribution (the outlier component).
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
    abstain: np.ndarray | None = None
    noise_model: dict[str, Any] = field(default_factory=dict)
    outlier_rate: np.ndarray | None = None
    log_vote_dist: np.ndarray | None = None

    @property
    def power(self) -> float:
        return float(self.noise_model.get("power", 2.0))

    @property
    def label_dependent(self) -> bool:
        return self.theta.ndim == 2

    @property
    def abstain_dependent(self) -> bool:
        return self.abstain is not None


# Above CHOICE_MAX_PATTERNS distinct vote patterns, mle_estimate makes its choices on
# a random CHOICE_ROWS rows and fits the chosen model once on all rows.
CHOICE_MAX_PATTERNS = 5_000
CHOICE_ROWS = 10_000


def chooses_on_a_sample(stats: VoteStats) -> bool:
    """Whether ``stats`` has more than CHOICE_MAX_PATTERNS patterns and CHOICE_ROWS
    rows: the choices (and the fit's closing checks) then read a sample of them."""
    return stats.n_patterns > CHOICE_MAX_PATTERNS and stats.n_samples > CHOICE_ROWS


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
        first = _run_em(
            prob,
            T,
            w,
            th,
            fixed_w=fixed_prior,
            label_dependent=False,
            max_iter=max_iter,
            tol=tol,
        )
        w, n1 = first.w, first.n_iter
        th = np.repeat(first.theta[:, None], T.size, axis=1)
    else:
        n1 = 0
    fit = _run_em(
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
    if not fit.converged:
        msgs.append(f"EM stopped at max_iter={max_iter}; raise max_iter or tol.")
        _warnings.warn(msgs[-1], ConvergenceWarning, stacklevel=2)
    return _result(prob, T, fit, n1 + fit.n_iter, "given", msgs)


def _result(
    prob: _Problem,
    T: np.ndarray,
    fit: EMFit,
    it: int,
    init: str,
    msgs: list[str],
    noise_model: dict[str, Any] | None = None,
) -> MLEEstimate:
    prior = np.zeros(prob.r)
    prior[T] = fit.w
    th = fit.theta
    e = prob.expected_sq_dist(th, T, fit.w, fit.eps)
    if (
        th.ndim == 2
    ):  # (m, k) over T -> (m, r); off the support: the prior-weighted mean
        full = np.repeat((th @ fit.w)[:, None], prob.r, axis=1)
        full[:, T] = th
        th = full
    abstain = None
    if fit.alpha is not None:  # off the support: the LF's overall abstain rate
        abstain = np.repeat(prob.abstain_rate[:, None], prob.r, axis=1)
        abstain[:, T] = fit.alpha
    order = np.argsort(T)
    eps = np.zeros(prob.m) if fit.eps is None else fit.eps
    return MLEEstimate(
        prior,
        th,
        e,
        T[order],
        fit.ll,
        it,
        fit.converged,
        init,
        msgs,
        abstain,
        noise_model or {},
        eps,
        prob.log_h,
    )


def mle_estimate(
    stats: VoteStats,
    S: np.ndarray,
    *,
    n_components: int | None = None,
    support: Any = None,
    prior: Any = None,
    label_dependent: bool | str = False,
    abstain_dependent: bool | str = False,
    plain_classes: bool = False,
    init: Any = "auto",
    n_restarts: int = 2,
    max_iter: int = 500,
    tol: float = 1e-8,
    seed: Any = None,
    labeled: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
    powers: tuple[float, ...] = (2.0,),
    outliers: tuple[bool, ...] = (False,),
    shrinkages: tuple[float, ...] = (0.0,),
    dependencies: Any = (),
    groups: np.ndarray | None = None,
    prior_pseudo_count: float = 0.0,
    progress_bar: bool = False,
    group_corr: np.ndarray | None = None,
    temper: bool = False,
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
        Number of labels with prior mass. Default: chosen by BIC (see Notes).
    support : array-like of int, optional
        Labels the prior may use (overrides the search); ``np.arange(r)`` = whole space.
    prior : array-like of shape (r,), optional
        A fixed prior (e.g. a known class balance); only theta is estimated.
    label_dependent : bool or "auto", default=False
        Estimate theta per LF and true label, shape (n_lfs, r). "auto" chooses by BIC
        among one theta for all LFs and one per LF, and (with ``plain_classes``) one
        per LF and label.
    abstain_dependent : bool or "auto", default=False
        Let P(lambda_a abstains | Y) depend on the label (as Snorkel's class-conditional
        abstain probabilities); "auto" chooses by BIC. Ignored when no LF abstains.
    plain_classes : bool, default=False
        The labels are plain classes (the 0/1 metric): "auto" then also considers a
        theta per LF and label (Snorkel's class-conditional accuracies), and the
        uniform prior (Snorkel's default class balance) is weighed against the free
        one by the pseudo-likelihood, not the full likelihood. In a structured space
        a theta per label lets a support label turn into a catch-all for votes far
        from the others, so "auto" does not try it there.
    init : "auto", "tensor", "search" or an object with ``prior`` and ``theta``
        Starting point: "auto" uses the tensor estimate when it is available and
        identifiable, else the search.
    n_restarts : int, default=2
        Seeded random restarts of the search (used when the search runs with
        ``n_components`` given; with a free size the full-prior fit plays their part).
    max_iter : int, default=500
        EM iterations (each SQUAREM cycle counts three).
    tol : float, default=1e-8
        Convergence tolerance on the log-likelihood per row; the refit on all rows
        after choices made on a sample stops at the looser of ``tol`` and 0.02
        nats in all (``_em_choices._refit_chosen``).
    seed : None, int or numpy.random.Generator
    labeled : (patterns, counts, labels), optional
        Labeled rows (vote patterns (u, n_lfs), their counts (u,), label indices
        (u,)): they join the likelihood with their label known, and the family and
        shrinkage are then chosen by the held-out log-probability of their labels.
        The support is chosen from the unlabeled rows and extended by their labels.
    powers, outliers, shrinkages : tuples
        Candidate noise powers p (exp(-theta d^p)), outlier components and
        shrinkages toward equal thetas; with more than one candidate the choice is
        made on held-out rows (:func:`._noise_family.choose_family`).
    dependencies : sequence of (int, int), default=()
        Dependent LF pairs, kept out of the tensor start's triplets.
    groups : ndarray of int of shape (n_lfs,), optional
        Group of each LF (LFs joined by dependencies share one). Where j LFs of a
        group vote on a row, each vote weighs 1/j in the likelihood (the group
        speaks with one voice), and the choice of family and shrinkage scores each
        LF's votes against the model's answer from the LFs outside its group.
    group_corr : ndarray of shape (n_lfs, n_lfs), optional
        Correlation of the LFs' errors within each group (1 on the diagonal, 0
        across groups): a vote then weighs 1 / (sum of its correlations with the
        group's members that voted) instead of 1/j (see ``_em_core.pattern_weights``).
    temper : bool, default=False
        The LFs were found dependent: with ``shrinkages=(1.0,)`` (the unweighted
        vote) theta is fitted shared by every LF, and with no labeled rows it is
        also multiplied by the temperature factor of
        :func:`._noise_family.choose_temperature` (``noise_model["temperature"]``).
    prior_pseudo_count : float, default=0
        Dirichlet pseudo-count added to every label of the support in the prior's
        M-step (MAP instead of maximum likelihood), so that no label of a large
        support is driven to a weight no vote can overcome.
    progress_bar : bool, default=False
        Show a tqdm progress bar over the EM starting points (the tensor start, the
        search and its ``n_restarts``): with many restarts on many vote patterns
        the fit takes seconds.

    Returns
    -------
    MLEEstimate

    Warns
    -----
    ConvergenceWarning
        When EM stops at ``max_iter``.
    IdentifiabilityWarning
        When the support size is uncertain (two sizes within 1 of each other in BIC
        and 5% of prior mass between them), or an LF's theta reaches its cap.

    Notes
    -----
    Without a given support or ``n_components``, the support is chosen in two ways
    and the better BIC wins: the greedy search from the starting points, and the
    prior fitted over all candidate labels at once, pruned to the nested supports of
    its heaviest labels by BIC (:func:`._support_search.prune_full_prior`). The
    label-dependent and abstain-dependent variants are then fitted on that support.

    Above ``CHOICE_MAX_PATTERNS`` (5,000) distinct vote patterns and ``CHOICE_ROWS``
    (10,000) rows, without labeled rows, every choice (support, variant, family,
    shrinkage) is made on a random ``CHOICE_ROWS`` of the rows, each weighing as the
    rows it stands for (so that BIC and standard errors read as on all rows), and
    the chosen model is then fitted by EM on all rows from there: one fit's cost on
    all rows instead of a dozen (1e5 rows of 10 LFs over 4 classes: 64,000 patterns).

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
    choice_stats = stats
    if labeled is None and chooses_on_a_sample(stats):
        # Every choice (support, noise variant, family, shrinkage) fits several EM
        # models, each at O(n_patterns) per step: on a random CHOICE_ROWS rows, each
        # weighing for the rows it stands for, so that likelihoods, BIC penalties and
        # standard errors read as on all rows (choices made as on 10,000 rows lost
        # Snorkel's generator's abstain-dependent variant at k = 6: -0.0008
        # accuracy); the chosen model is then fitted once on all rows.
        choice_stats = stats.thinned(CHOICE_ROWS / stats.n_samples, rng.spawn(1)[0])
    prob, T, fit, it, name, msgs, noise_model = _choose_model(
        choice_stats,
        S,
        n_components=n_components,
        support=support,
        prior=prior,
        label_dependent=label_dependent,
        abstain_dependent=abstain_dependent,
        plain_classes=plain_classes,
        init=init,
        n_restarts=n_restarts,
        max_iter=max_iter,
        tol=tol,
        rng=rng,
        labeled=labeled,
        powers=powers,
        outliers=outliers,
        shrinkages=shrinkages,
        dependencies=dependencies,
        groups=groups,
        group_corr=group_corr,
        temper=temper,
        prior_pseudo_count=prior_pseudo_count,
        progress_bar=progress_bar,
        row_weight=float(np.sum(stats.counts)) / float(np.sum(choice_stats.counts)),
    )
    if choice_stats is not stats:
        given = prior is not None or support is not None
        prob, fit = _refit_chosen(
            stats,
            S,
            T,
            fit,
            noise_model,
            groups=groups,
            group_corr=group_corr,
            prior_pseudo_count=prior_pseudo_count,
            max_iter=max_iter,
            # as the choices' fits (see _choose_model): a large given support's prior
            # creeps at 1e-8 per row
            tol=max(tol, 1e-6) if given and T.size > _SLOW_PRIOR else tol,
        )
        it += fit.n_iter
    fixed = prior is not None
    if not fixed and not np.any(fit.theta) and fit.alpha is None and fit.eps is None:
        # Every LF at theta = 0: the votes say nothing of Y and every prior has the same
        # likelihood, so where EM stopped is an accident of its path (and of the unit
        # of the distances). The uniform prior, with the same likelihood, instead.
        fit = _with_theta(
            EMFit(np.full(T.size, 1.0 / T.size), fit.theta, None, 0.0, 0, True),
            fit.theta,
        )
        msg = (
            "Every LF's theta is 0: the votes carry no information about Y that the "
            "model can find (the LFs agree no more than chance), so every row gets "
            "the same (uniform) posterior and predictions are ties or one label. "
            "Check the LFs on a few rows by hand, or label a few rows (L_dev, Y_dev)."
        )
        msgs.append(msg)
        _warnings.warn(msg, IdentifiabilityWarning, stacklevel=2)
    # One E-step at the final parameters gives both their log-likelihood (theta may
    # have been shrunk since EM computed it) and the posterior the check below reads.
    R, ll = prob.e_step(
        np.log(np.maximum(fit.w, 1e-300)), fit.theta, T, fit.alpha, fit.eps
    )
    fit = EMFit(fit.w, fit.theta, fit.alpha, ll, fit.n_iter, fit.converged, fit.eps)
    if not fit.converged:
        msg = (
            f"EM stopped at max_iter={max_iter} before the log-likelihood changed by less "
            f"than tol={tol} per row; raise max_iter or tol."
        )
        msgs.append(msg)
        _warnings.warn(msg, ConvergenceWarning, stacklevel=2)
    th = fit.theta
    # Never wrong: theta at its cap, or the LF's votes at less than one unit of squared
    # distance in all from the labels the model gives their rows (the prior on theta
    # keeps theta below the cap then).
    vote_sq = prob.vote_moments(R, T)[1].sum(axis=1)
    unit_sq = prob.sq.unit ** (2.0 / prob.sq.power)  # smallest positive d^2
    per_lf = np.atleast_2d(th.T).T  # (m, 1) or (m, k)
    # With one theta for every LF (the unweighted vote) no LF decides the labels: an
    # LF that never disagrees with them is one that votes with the majority (a
    # sparse LF on cities -> continent was named "never wrong" at theta 4.4).
    own = not bool(np.all(per_lf == per_lf[:1]))
    never_wrong = (per_lf >= 0.999 * prob.sq.theta_max).any(axis=1) | (
        own & (vote_sq < unit_sq) & (prob.n_voted > 0)
    )
    at_bound = np.flatnonzero(never_wrong)
    if at_bound.size:
        # The model sees the LF as never wrong: typically an LF whose votes decide the
        # model's labels (constant within groups of rows, or a function of other LFs),
        # which breaks conditional independence.
        msg = (
            f"LF(s) {at_bound.tolist()} reached theta={prob.sq.theta_max:g}, the upper "
            "bound, or less than the smallest squared distance of the space over all "
            "their votes: the "
            "model treats them as never wrong and lets them decide the labels. This "
            "usually means they are not conditionally independent of the other LFs "
            "(e.g. constant within groups, or copies of another LF); check them with "
            "StructuredLFAnalysis and consider dropping them."
        )
        msgs.append(msg)
        _warnings.warn(msg, IdentifiabilityWarning, stacklevel=2)
    return _result(prob, T, fit, it, name, msgs, noise_model)
