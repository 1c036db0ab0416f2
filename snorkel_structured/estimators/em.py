"""Maximum likelihood for the finite noise model: the public EM entry points.

:func:`mle_estimate` picks a starting point and a support, then runs EM over unique vote
patterns (the steps live in :mod:`._em_core`, the support choice in
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
from tqdm import tqdm

from snorkel_structured import _warnings
from snorkel_structured._validation import check_seed
from snorkel_structured.estimators._em_core import (
    _ALPHA_MIN,
    _MAX_CANDIDATES,
    _TENSOR_START_MAX,
    EMFit,
    _Problem,
    _run_em,
)
from snorkel_structured.estimators._noise_family import (
    RISK_MIN_SE,
    RISK_WARN_SE,
    _fit,
    _variant_options,
    _with_theta,
    choose_family,
    shrink_theta,
    unweighted_safety_net,
)
from snorkel_structured.estimators._noise_kernel import _SqDists, support_log_table
from snorkel_structured.estimators._stats import VoteStats
from snorkel_structured.estimators._support_search import (
    _SEARCH_TOL,
    _bic_penalty,
    _profile_single_center,
    _search,
    _swap,
    prune_full_prior,
)
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


# A given support above this many labels is fitted to 1e-6 per row (see mle_estimate).
_SLOW_PRIOR = 16

# Above CHOICE_MAX_PATTERNS distinct vote patterns, mle_estimate makes its choices on
# a random CHOICE_ROWS rows and fits the chosen model once on all rows.
CHOICE_MAX_PATTERNS = 5_000
CHOICE_ROWS = 10_000


def chooses_on_a_sample(stats: VoteStats) -> bool:
    """Whether ``stats`` has more than CHOICE_MAX_PATTERNS patterns and CHOICE_ROWS
    rows: the choices (and the fit's closing checks) then read a sample of them."""
    return stats.n_patterns > CHOICE_MAX_PATTERNS and stats.n_samples > CHOICE_ROWS


def _tensor_start(
    stats: VoteStats,
    S: np.ndarray,
    n_components: int | None,
    seed: Any,
    dependencies: Any = (),
) -> Any:
    """The tensor estimate, or None when the tensor estimator is missing or fails."""
    try:
        from snorkel_structured.estimators.tensor import tensor_estimate
    except ImportError:
        return None
    try:
        with _warnings.captured() as caught:
            est = tensor_estimate(
                stats,
                S,
                n_components=n_components,
                seed=seed,
                dependencies=dependencies,
            )
        est_warnings = [str(w.message) for w in caught]
        return est, est_warnings
    except Exception as exc:  # noqa: BLE001 - any failure means: use the fallback
        return None, [
            f"tensor estimator failed ({type(exc).__name__}: {exc}); used the fallback start."
        ]


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


def _n_params(m: int, k: int, prior: str, theta: str, abstain: bool) -> int:
    """Free parameters beyond the support's locations: weights, theta, abstain rates."""
    n_theta = {"shared": 1, "lf": m, "label": m * k}[theta]
    return (k - 1 if prior == "free" else 0) + n_theta + (m * (k - 1) if abstain else 0)


def _variants(option: Any, name: str) -> tuple[bool, ...]:
    if isinstance(option, str):
        if option != "auto":
            raise ValueError(f"{name} must be True, False or 'auto'; got {option!r}.")
        return (False, True)
    return (bool(option),)


def silenced_labels(prob: _Problem, T: np.ndarray, fit: EMFit) -> np.ndarray:
    """Labels of T that every voting LF gives on some rows but that no row's posterior
    mode is (positions in T): a model that can never answer what the votes say."""
    R, _ = prob.e_step(np.log(np.maximum(fit.w, 1e-300)), fit.theta, T, fit.alpha)
    seen = prob.c > 0
    predicted = np.zeros(T.size, dtype=bool)
    predicted[np.argmax(R[seen], axis=1)] = True
    pos = np.full(prob.r, -1, dtype=np.int64)
    pos[T] = np.arange(T.size)
    P = prob.P[seen]
    first = np.max(P, axis=1)  # a vote of the row (-1: no LF voted)
    unanimous = (first >= 0) & ((P == first[:, None]) | (P < 0)).all(axis=1)
    voted = np.unique(pos[first[unanimous]])
    voted = voted[voted >= 0]
    return voted[~predicted[voted]]


def _choose_noise_model(
    prob: _Problem,
    T: np.ndarray,
    base: EMFit,
    *,
    prior_modes: tuple[str, ...],
    theta_modes: tuple[str, ...],
    abstain_modes: tuple[bool, ...],
    max_iter: int,
    tol: float,
    prior_by_likelihood: bool = False,
) -> tuple[EMFit, dict[str, Any], int]:
    """The noise model of best score on support T, by forward selection from ``base``.

    The score is BIC on the pseudo-likelihood of agreements (each vote given the
    other LFs' outputs where another LF voted; :meth:`_Problem.conditional_loglik`). The
    full likelihood would reward variants that only fit each LF's vote distribution:
    with sparse LFs, whose votes rarely meet, a skewed prior with LFs declared pure
    noise explains those distributions and wins on the full likelihood, and predicts
    badly.

    Variants: the prior free, uniform or fixed; theta shared by all LFs (every LF
    weighs the same: the unweighted vote, as a model), per LF, or per LF and label;
    abstains independent of Y or not. First every (prior, shared or per-LF theta)
    pair, then label-dependent theta, then label-dependent abstains on the best so
    far, each kept when BIC improves (on supports above 64 labels, per-label theta
    and abstains are not tried). So when the data cannot tell the LFs apart (few
    overlaps, little data) the model falls back to the unweighted vote instead of
    fitting noise.

    ``prior_by_likelihood``: for each theta variant the prior (free or uniform) is
    chosen by BIC on the full likelihood. Where the other LFs' votes pin Y down, the
    pseudo-likelihood does not see the prior at all (``Permutations(7)`` with two
    centers at 0.3/0.7: equal to 0.1 nats, and it chose 0.5/0.5); the full
    likelihood does (641 nats there), and over hundreds of labels that the
    agreements barely inform, its (k - 1)/2 log n penalty keeps the uniform prior.
    Without it (plain classes, where the uniform prior is Snorkel's default class
    balance) every pair is ranked by the pseudo-likelihood's BIC.
    """
    k, m = T.size, prob.m
    uniform = np.full(k, 1.0 / k)
    n_iter = 0

    def fitted(prior: str, theta: str, abstain: bool) -> tuple[EMFit, dict, float]:
        """The variant's EM fit, its description and its BIC penalty."""
        nonlocal n_iter
        th0 = base.theta
        if theta == "shared":
            th0 = np.full(m, float(np.mean(th0)))
        elif theta == "label":
            th0 = np.repeat(th0[:, None], k, axis=1)
        al0 = None
        if abstain:
            al0 = np.clip(
                np.repeat(prob.abstain_rate[:, None], k, axis=1),
                _ALPHA_MIN,
                1.0 - _ALPHA_MIN,
            )
        if (prior, theta, abstain) == ("free", "lf", False) or (
            prior == "fixed" and theta == "lf" and not abstain
        ):
            fit = base
        else:
            fit = _run_em(
                prob,
                T,
                uniform if prior == "uniform" else base.w,
                th0.copy(),
                fixed_w=prior != "free",
                label_dependent=theta == "label",
                shared=theta == "shared",
                alpha=al0,
                max_iter=max_iter,
                tol=tol,
            )
            n_iter += fit.n_iter
        model = {"prior": prior, "theta": theta, "abstain": abstain}
        # BIC's penalty counts all rows: more conservative than counting the rows the
        # pseudo-likelihood uses, which matters only when there are very few.
        penalty = (
            0.5 * np.log(max(prob.n, 2.0)) * _n_params(m, k, prior, theta, abstain)
        )
        return fit, model, penalty

    def scored(variant: tuple[EMFit, dict, float]) -> tuple[float, EMFit, dict]:
        """(pseudo-likelihood BIC, fit, description): computed only for the variants
        that compete on it (a prior that lost on the full likelihood does not).

        A free prior that leaves a class unanimously voted on some rows predicted on
        none is out when the uniform prior competes: it explains that class's votes
        as noise (iris with one LF voting versicolor: prior 0, accuracy 0.60-0.62
        against 0.84-0.88 with the uniform prior and 0.74-0.78 for majority vote).
        """
        fit, model, penalty = variant
        if (
            model["prior"] == "free"
            and "uniform" in prior_modes
            and not prior_by_likelihood
            and silenced_labels(prob, T, fit).size
        ):
            return -np.inf, fit, model
        cll, _ = prob.conditional_loglik(
            np.log(np.maximum(fit.w, 1e-300)), fit.theta, T, fit.alpha
        )
        return cll - penalty, fit, model

    def run(prior: str, theta: str, abstain: bool) -> tuple[float, EMFit, dict]:
        return scored(fitted(prior, theta, abstain))

    if k > _MAX_CANDIDATES and len(theta_modes) > 1:
        # "auto" only: m k parameters per variant cannot pay their BIC cost on a
        # support this large, and fitting them would dominate the fit's time.
        theta_modes = tuple(t for t in theta_modes if t != "label")
    if k > _MAX_CANDIDATES and len(abstain_modes) > 1:
        abstain_modes = abstain_modes[:1]
    first_abstain = abstain_modes[0]
    stage1 = [t for t in theta_modes if t != "label"] or ["label"]
    if prior_by_likelihood:
        pairs = (
            scored(
                max(
                    (fitted(p, t, first_abstain) for p in prior_modes),
                    key=lambda v: v[0].ll - v[2],
                )
            )
            for t in stage1
        )
    else:
        pairs = (run(p, t, first_abstain) for p in prior_modes for t in stage1)
    best = max(pairs, key=lambda v: v[0])
    if "label" in theta_modes and best[2]["theta"] != "label":
        cand = run(best[2]["prior"], "label", first_abstain)
        best = max(best, cand, key=lambda v: v[0])
    if len(abstain_modes) > 1:
        cand = run(best[2]["prior"], best[2]["theta"], True)
        best = max(best, cand, key=lambda v: v[0])
    return best[1], best[2], n_iter


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
        Convergence tolerance on the log-likelihood per row.
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
    never_wrong = (np.atleast_2d(th.T).T >= 0.999 * prob.sq.theta_max).any(axis=1) | (
        (vote_sq < unit_sq) & (prob.n_voted > 0)
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


def _choose_model(
    stats: VoteStats,
    S: Any,
    *,
    n_components: int | None,
    support: Any,
    prior: Any,
    label_dependent: bool | str,
    abstain_dependent: bool | str,
    plain_classes: bool,
    init: Any,
    n_restarts: int,
    max_iter: int,
    tol: float,
    rng: np.random.Generator,
    labeled: tuple[np.ndarray, np.ndarray, np.ndarray] | None,
    powers: tuple[float, ...],
    outliers: tuple[bool, ...],
    shrinkages: tuple[float, ...],
    dependencies: Any,
    groups: np.ndarray | None,
    prior_pseudo_count: float,
    progress_bar: bool,
    row_weight: float = 1.0,
) -> tuple[_Problem, np.ndarray, EMFit, int, str, list[str], dict[str, Any]]:
    """:func:`mle_estimate`'s choices on ``stats``: the support T, the noise variant,
    family and shrinkage, with the chosen model's fit and its problem.

    ``row_weight``: the rows each row of ``stats`` stands for (``stats`` a random
    sample of the data's rows), so that every criterion reads as on all rows.

    Returns (problem, T, fit, EM iterations, start's name, warnings, noise model).
    """
    label_variants = _variants(label_dependent, "label_dependent")
    sq = _SqDists(S)
    prob = _Problem(
        stats,
        sq,
        groups=groups,
        prior_pseudo_count=prior_pseudo_count,
        row_weight=row_weight,
    )
    abstain_variants = _variants(abstain_dependent, "abstain_dependent")
    if not prob.any_abstain:
        abstain_variants = (False,)
    msgs: list[str] = []
    fixed = prior is not None
    given = fixed or support is not None
    starts = _starts(
        prob,
        sq,
        stats,
        prior,
        support,
        init,
        n_components,
        n_restarts,
        rng,
        msgs,
        max_iter,
        tol,
        dependencies,
    )
    free_size = n_components is None and not given
    penalty = _bic_penalty(prob)
    C = prob.candidates() if not given else None
    if given and starts and starts[0][1].size > _SLOW_PRIOR:
        # A prior over hundreds of labels creeps for hundreds of iterations at 1e-8
        # per row while theta has long settled (measured: 415 vs 190 iterations
        # at 1e-6 and 1e-5 on S6, thetas equal to 3 digits): 1e-6 per row.
        tol = max(tol, 1e-6)
    opts = dict(fixed_w=fixed, label_dependent=False, max_iter=max_iter, tol=tol)
    # Fits that only rank starts or supports (several starts, or a support still to
    # be searched) run at the search's tolerance; the chosen one is refitted at
    # ``tol`` below (on Permutations(7), 2e4 rows, a start took 70-90 iterations at
    # 1e-8 per row, 0.2-0.3 s each).
    ranking = len(starts) > 1 or C is not None
    rank_opts = dict(opts, tol=max(tol, _SEARCH_TOL)) if ranking else opts
    best = None  # (score, name, T, fit)
    for name, T, w, th in tqdm(
        starts, desc="EM starts", unit="start", disable=not progress_bar
    ):
        fit = _run_em(prob, T, w, np.asarray(th, dtype=np.float64).copy(), **rank_opts)
        # Starts may end with supports of different sizes: when the size is free, compare
        # them by BIC, else a restart that grew a spurious label would win on likelihood.
        score = fit.ll - (T.size * penalty if free_size else 0.0)
        if best is None or score > best[0]:
            best = (score, name, T, fit)
    assert best is not None
    if C is not None:
        # Single swaps refine the best start only: a swap keeps the support's size and
        # only raises the likelihood, so the best start stays best. Swapping the others
        # too (two thirds of the swaps' time on Permutations(7)) changed no support
        # or prediction in 24 searches on S5-S7 with 2-5 centers.
        score, name, T, fit = best
        T, w_, th_, ll = _swap(
            prob,
            T,
            fit.w,
            fit.theta,
            fit.ll,
            C,
            fixed_w=fixed,
            max_iter=max_iter,
            tol=rank_opts["tol"],
        )
        fit = EMFit(w_, th_, None, ll, fit.n_iter, fit.converged)
        best = (score + ll - best[3].ll, name, T, fit)
    if free_size and C is not None:
        T, w, th, ll, uncertain = prune_full_prior(
            prob,
            [(best[2], best[3].w, best[3].theta)],  # the best start, smoothed
            C,
            max_iter=max_iter,
            tol=tol,
        )
        if ll - T.size * penalty > best[0]:
            ranking = False  # prune_full_prior refits its choice at tol
            best = (
                ll - T.size * penalty,
                "full prior",
                T,
                EMFit(w, th, None, ll, 0, True),
            )
        if uncertain:
            msg = (
                f"The support size is uncertain: {best[2].size} labels, but another size "
                "scores within 1 of it in BIC and the labels between the two hold at "
                "least 5% of the prior. Check predictions against a few labeled rows, or "
                "set prior_support='all' or n_components."
            )
            msgs.append(msg)
            _warnings.warn(msg, IdentifiabilityWarning, stacklevel=3)
    _, name, T, fit = best
    if ranking:
        fit = _run_em(prob, T, fit.w, fit.theta.copy(), **opts)
    it = fit.n_iter
    if labeled is not None:  # the dev labels join the support and the likelihood
        new = np.setdiff1d(np.unique(labeled[2]), T)
        if new.size and fixed:
            raise ValueError(
                f"labeled rows have labels {new.tolist()} outside the fixed prior's "
                "support."
            )
        if new.size:
            w_ext = np.concatenate([fit.w, np.full(new.size, 1.0 / prob.n)])
            th_ext = fit.theta
            T = np.concatenate([T, new])
            fit = EMFit(w_ext / w_ext.sum(), th_ext, None, fit.ll, it, True)
        prob = _Problem(
            stats,
            sq,
            labeled,
            groups,
            prior_pseudo_count=prior_pseudo_count,
            row_weight=row_weight,
        )
        fit = _run_em(prob, T, fit.w, fit.theta.copy(), **opts)
        it += fit.n_iter
    theta_modes = {
        (False, True): ("shared", "lf", "label") if plain_classes else ("shared", "lf"),
        (True,): ("label",),
    }.get(label_variants, ("lf",))
    fit, noise_model, n_iter = _choose_noise_model(
        prob,
        T,
        fit,
        prior_modes=("fixed",) if fixed else ("free", "uniform"),
        theta_modes=theta_modes,
        abstain_modes=abstain_variants,
        max_iter=max_iter,
        tol=tol,
        prior_by_likelihood=not plain_classes,
    )
    it += n_iter
    choice = choose_family(
        stats,
        S,
        T,
        fit,
        noise_model,
        labeled=labeled,
        powers=powers,
        outliers=outliers,
        shrinkages=shrinkages,
        rng=rng,
        max_iter=max_iter,
        tol=tol,
        base_prob=prob,
    )
    paper_fit, paper_prob = fit, prob
    fit, prob = choice.fit, choice.prob
    noise_model = dict(
        noise_model,
        power=choice.power,
        outliers=choice.outliers,
        shrinkage=choice.shrinkage,
    )
    if (
        labeled is None
        and 1.0 in shrinkages
        and fit.theta.ndim == 1
        and paper_prob.pw is None  # declared groups: the user's structure stands
    ):
        # The unsupervised safety net: the unweighted vote (the paper's family, every
        # LF weighing the same) replaces the choice when it predicts held-out votes
        # significantly better.
        # A family the caller fixed (noise_power, outliers) stands: the unweighted
        # vote is then the chosen family with every theta equal.
        equal_family = (2.0, False)
        equal_from, equal_prob = paper_fit, paper_prob
        if 2.0 not in powers or False not in outliers:
            equal_family = (choice.power, choice.outliers)
            equal_from, equal_prob = fit, prob
        equal = _with_theta(equal_from, shrink_theta(equal_from.theta, 1.0))
        replace, z = unweighted_safety_net(prob, equal_prob, T, fit, equal)
        if shrinkages == (1.0,):
            # Both are unweighted votes (equal weights imposed): which family is a
            # free choice, by the risk alone.
            replace = z < 0
        noise_model["safety_net_z"] = z
        if replace:
            fit, prob = equal, equal_prob
            noise_model.update(
                power=equal_family[0], outliers=equal_family[1], shrinkage=1.0
            )
        elif z < -RISK_WARN_SE and np.ptp(fit.theta) > 0:
            msg = (
                f"The label model's weights rest on little evidence: the unweighted "
                f"vote predicts held-out LFs' votes better by {-z:.1f} standard "
                f"errors (not the {RISK_MIN_SE:g} that would replace it). Check it "
                "against a few labeled rows (fit(..., L_dev=, Y_dev=) then chooses "
                "by cross-validation) or set shrinkage=1."
            )
            msgs.append(msg)
            _warnings.warn(msg, IdentifiabilityWarning, stacklevel=3)
    if labeled is not None:
        noise_model["dev_weight"] = choice.dev_weight
    return prob, T, fit, it, name, msgs, noise_model


def _refit_chosen(
    stats: VoteStats,
    S: Any,
    T: np.ndarray,
    fit: EMFit,
    noise_model: dict[str, Any],
    *,
    groups: np.ndarray | None,
    prior_pseudo_count: float,
    max_iter: int,
    tol: float,
) -> tuple[_Problem, EMFit]:
    """The model chosen on a sample of the rows, fitted on all of ``stats`` from the
    sample's fit (its support, variant, family and shrinkage kept)."""
    prob = _Problem(
        stats,
        _SqDists(S, noise_model.get("power", 2.0)),
        groups=groups,
        prior_pseudo_count=prior_pseudo_count,
    )
    options = _variant_options(noise_model, max_iter, tol)
    refit = _fit(prob, T, fit, fit.theta, fit.eps is not None, options)
    theta = shrink_theta(refit.theta, float(noise_model.get("shrinkage", 0.0)))
    return prob, _with_theta(refit, theta)


def _starts(
    prob: _Problem,
    sq: _SqDists,
    stats: VoteStats,
    prior: Any,
    support: Any,
    init: Any,
    n_components: int | None,
    n_restarts: int,
    rng: np.random.Generator,
    msgs: list[str],
    max_iter: int,
    tol: float,
    dependencies: Any = (),
) -> list[tuple[str, np.ndarray, np.ndarray, np.ndarray]]:
    """Starting points (name, T, w, theta) of EM."""
    starts: list[tuple[str, np.ndarray, np.ndarray, np.ndarray]] = []
    if prior is not None or support is not None:
        p = np.asarray(prior, dtype=np.float64) if prior is not None else None
        T = (
            np.flatnonzero(p > 0)
            if p is not None
            else np.unique(np.asarray(support, dtype=np.int64))
        )
        if p is not None:  # a normalized prior is kept bit for bit
            w0 = p[T] if abs(p.sum() - 1.0) <= 1e-12 else p[T] / p[T].sum()
        else:
            w0 = np.full(T.size, 1.0 / T.size)
        # theta = 1 for every LF: the first E-step is a soft majority vote over T
        return [("given", T, w0, np.full(prob.m, 1.0 / sq.unit))]
    if not isinstance(init, str):
        p = np.asarray(init.prior, dtype=np.float64)
        T = np.flatnonzero(p > 0)
        th = np.asarray(init.theta, dtype=np.float64).reshape(prob.m, -1)[:, 0]
        return [("given", T, p[T] / p[T].sum(), th)]
    tensor_ok = False
    if init in ("auto", "tensor") and sq.dense and prob.r <= _TENSOR_START_MAX:
        assert sq.S is not None
        got = _tensor_start(stats, sq.S, n_components, rng.spawn(1)[0], dependencies)
        if got is not None:
            est, est_msgs = got
            msgs.extend(est_msgs)
            if est is not None:
                p = np.asarray(est.prior, dtype=np.float64)
                T = np.flatnonzero(p > 0)
                ok = (
                    bool(getattr(est, "identifiable", True))
                    and T.size > 0
                    and np.isfinite(est.theta).all()
                )
                if ok:
                    th = np.clip(
                        np.asarray(est.theta, dtype=np.float64), 0.0, sq.theta_max
                    )
                    starts.append(("tensor", T, p[T] / p[T].sum(), th))
                    tensor_ok = True
    if not tensor_ok or init == "search":
        C = prob.candidates()
        first, th0 = _profile_single_center(prob, C)
        # Random restarts only for a fixed size: with a free one the prior fitted over
        # all candidates from a uniform start (prune_full_prior) is the greedy path's
        # global alternative (without restarts: the same supports and predictions in
        # 24 fits on Permutations(7) with 4 centers, two pairs one swap apart).
        restarts = n_restarts if n_components is not None else 0
        seeds = [first] + list(rng.choice(C, size=min(restarts, C.size), replace=False))
        for i, s0 in enumerate(seeds):
            T, w, th, _ = _search(
                prob,
                int(s0),
                th0,
                C,
                n_components=n_components,
                max_iter=max_iter,
                tol=tol,
            )
            starts.append(("profile" if i == 0 else f"restart {i}", T, w, th))
    return starts
