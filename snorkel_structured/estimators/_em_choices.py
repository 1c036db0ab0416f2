"""The choices of :func:`~snorkel_structured.estimators.em.mle_estimate`, each by EM.

On one set of vote-pattern counts: the starting points (the tensor estimate, or
the greedy support search of :mod:`._support_search`), the support, the noise
variant (prior free or uniform; theta shared, per LF or per LF and label; abstains
that depend on Y or not) by BIC on the pseudo-likelihood of agreements, then the
noise family and shrinkage (:func:`._noise_family.choose_family`) and the
unsupervised safety net. :func:`_refit_chosen` fits the chosen model once on all
rows when the choices were made on a sample of them.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from tqdm import tqdm

from snorkel_structured import _warnings
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
    choose_temperature,
    shrink_theta,
    unweighted_safety_net,
)
from snorkel_structured.estimators._noise_kernel import _SqDists
from snorkel_structured.estimators._stats import VoteStats
from snorkel_structured.estimators._support_search import (
    _SEARCH_TOL,
    _bic_penalty,
    _profile_single_center,
    _search,
    _swap,
    informative_theta,
    prune_full_prior,
)
from snorkel_structured.exceptions import IdentifiabilityWarning

# A given support above this many labels is fitted to 1e-6 per row (see mle_estimate).
_SLOW_PRIOR = 16
# The refit on all rows stops when an EM step gains less log-likelihood than this in
# all: moving the parameters by d standard errors gains about d^2 / 2 nats, so 0.02
# nats is about 0.2 of a standard error.
_REFIT_NATS = 0.02


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
    base_theta: str = "lf",
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

    ``base_theta``: the theta mode ``base`` was fitted with ("lf", or "shared" when
    that is the only mode): that variant is ``base`` itself.
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
        if (prior, theta, abstain) == ("free", base_theta, False) or (
            prior == "fixed" and theta == base_theta and not abstain
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
    group_corr: np.ndarray | None = None,
    temper: bool = False,
) -> tuple[_Problem, np.ndarray, EMFit, int, str, list[str], dict[str, Any]]:
    """:func:`mle_estimate`'s choices on ``stats``: the support T, the noise variant,
    family and shrinkage, with the chosen model's fit and its problem.

    ``row_weight``: the rows each row of ``stats`` stands for (``stats`` a random
    sample of the data's rows), so that every criterion reads as on all rows.
    ``temper``: the LFs were found dependent, so the unweighted vote (shrinkage 1)
    fits one shared theta and gets its sharpness chosen
    (:func:`._noise_family.choose_temperature`).

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
        group_corr=group_corr,
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
    theta_modes = {
        (False, True): ("shared", "lf", "label") if plain_classes else ("shared", "lf"),
        (True,): ("label",),
    }.get(label_variants, ("lf",))
    if temper and shrinkages == (1.0,) and len(theta_modes) > 1:
        # Every LF gets the same theta (the unweighted vote): a theta per LF would
        # only be averaged, and the shared theta is that vote's own fit. One EM
        # variant less; on the rankings that take this path the answers moved by
        # at most 0.002. Not on trees: there the averaged per-LF thetas did better
        # (european_regions with 100 dev rows 0.104 -> 0.142 when shared).
        theta_modes = tuple(t for t in theta_modes if t != "lf")
    # With the shared theta the only mode (and no support search, whose swaps fit a
    # theta per LF), the first fit is that variant's own.
    base_theta = "shared" if theta_modes == ("shared",) and C is None else "lf"
    opts = dict(
        fixed_w=fixed,
        label_dependent=False,
        shared=base_theta == "shared",
        max_iter=max_iter,
        tol=tol,
    )
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
            group_corr=group_corr,
        )
        fit = _run_em(prob, T, fit.w, fit.theta.copy(), **opts)
        it += fit.n_iter
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
        base_theta=base_theta,
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
    if temper and labeled is None and shrinkages == (1.0,) and fit.theta.ndim == 1:
        f, z = choose_temperature(prob, T, fit)
        noise_model.update(temperature=f, temperature_z=z)
        fit = _with_theta(fit, fit.theta * f)
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
    group_corr: np.ndarray | None = None,
) -> tuple[_Problem, EMFit]:
    """The model chosen on a sample of the rows, fitted on all of ``stats`` from the
    sample's fit (its support, variant, family and shrinkage kept).

    EM stops once a step gains less than ``_REFIT_NATS`` in all (or ``tol`` per row,
    whichever is looser): the sample's fit is off by sampling noise, hundreds of nats
    on all rows (Snorkel's generator, 1e5 rows, k = 4: 394), which the first steps
    recover; beyond that a step's gain is a tiny fraction of one standard error in
    the parameters.
    """
    tol = max(tol, _REFIT_NATS / max(stats.n_samples, 1))
    prob = _Problem(
        stats,
        _SqDists(S, noise_model.get("power", 2.0)),
        groups=groups,
        prior_pseudo_count=prior_pseudo_count,
        group_corr=group_corr,
    )
    options = _variant_options(noise_model, max_iter, tol)
    refit = _fit(prob, T, fit, fit.theta, fit.eps is not None, options)
    theta = shrink_theta(refit.theta, float(noise_model.get("shrinkage", 0.0)))
    theta = theta * float(noise_model.get("temperature", 1.0))
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
    tensor_ok = degenerate = False
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
                    degenerate = not np.any(th > 0)
                    th = informative_theta(th, sq.unit)
                    starts.append(("tensor", T, p[T] / p[T].sum(), th))
                    tensor_ok = True
    # A tensor start at theta 0 for every LF is degenerate (e.g. rank-deficient: a
    # 7-node tree with 3 true labels and n_components=4 gave a support without a
    # true label): the greedy search then competes with it, by likelihood.
    if not tensor_ok or init == "search" or (init == "auto" and degenerate):
        C = prob.candidates()
        first, th0 = _profile_single_center(prob, C)
        th0 = informative_theta(th0, sq.unit)
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
