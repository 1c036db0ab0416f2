"""Noise family and shrinkage of the finite label model, chosen on held-out data.

The paper's model, exp(-theta_a d^2) noise around the true label, fails on real LFs in
two ways this stage guards against:

- LFs that are usually right but sometimes far off: the family exp(-theta_a d^p) with
  p = 1 (on rankings, the Mallows model) has heavier tails than p = 2, and the outlier
  mixture (1 - eps_a) exp(-theta_a d^p) / Z + eps_a h_a (h_a: the LF's own vote
  distribution, an answer unrelated to Y) lets a vote be far off at a small cost.
- Too little evidence to tell LFs apart: every theta_a is shrunk toward the LFs' mean,
  theta_a(s) = mean + (1 - s) (theta_a - mean), s = 1 being the unweighted vote, so
  estimation noise cannot make the model lose to unweighted voting.

One contender family is chosen by AIC among loose fits of every family on all rows (the
paper's family, p = 1, and each with outliers; the outlier family is fitted only when an
estimate of its gain from one E-step could pay its cost); the contender and the paper's
family, at every shrinkage, are then compared by held-out likelihood. The vote-pattern
counts are split in two by binomial thinning (each row goes to one half at random, so
the halves are independent samples of the same data); each candidate is fitted on one
half and scored on the other, both ways. The score is the pseudo-likelihood of
agreements (each vote given the other LFs' outputs, :meth:`_Problem.conditional_loglik`)
or, when labeled rows are given, the posterior's expected distance to their labels. An
outlier vote on the held-out half is scored with the LF's vote distribution of the
fitting half. Without labels, a family other than the paper's must gain two standard
errors of the paired per-row held-out difference over the best of the paper's family;
with labeled rows, their score may overrule the votes' choice by two standard errors
likewise.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from snorkel_structured._numeric import normalize_log_rows
from snorkel_structured.estimators._em_core import EMFit, _Problem, _run_em
from snorkel_structured.estimators._noise_kernel import _SqDists
from snorkel_structured.estimators._stats import VoteStats

# Candidate shrinkage strengths s (0: the fitted thetas, 1: all LFs equal).
SHRINK_GRID = (0.0, 0.25, 0.5, 0.75, 1.0)
# Starting outlier rate of the robust family.
_EPS_START = 0.05


@dataclass(frozen=True)
class FamilyChoice:
    """The family chosen, its fit on all rows, and the held-out scores of all."""

    power: float
    outliers: bool
    shrinkage: float
    dev_weight: float
    fit: EMFit
    prob: _Problem
    scores: dict[tuple[float, bool, float, float], float]


def _thin(
    stats: VoteStats, labeled: Any, rng: np.random.Generator
) -> tuple[tuple[VoteStats, Any], tuple[VoteStats, Any]]:
    """Two independent halves of the rows (binomial thinning of the counts)."""
    c = np.round(np.asarray(stats.counts)).astype(np.int64)
    a = rng.binomial(c, 0.5)
    halves = []
    for part in (a, c - a):
        keep = part > 0
        halves.append(
            VoteStats(
                stats.n_labels,
                np.asarray(stats.patterns)[keep].copy(),
                part[keep].astype(np.float64),
            )
        )
    lab_a = lab_b = None
    if labeled is not None:
        lc = np.round(np.asarray(labeled[1])).astype(np.int64)
        la = rng.binomial(lc, 0.5)
        lab_a = (labeled[0], la.astype(np.float64), labeled[2])
        lab_b = (labeled[0], (lc - la).astype(np.float64), labeled[2])
    return (halves[0], lab_a), (halves[1], lab_b)


def shrink_theta(theta: np.ndarray, s: float) -> np.ndarray:
    """theta_a moved a fraction ``s`` of the way to the mean over LFs (per label)."""
    if s == 0.0:
        return theta
    mean = theta.mean(axis=0, keepdims=True)
    # a convex combination of thetas inside [0, cap] stays inside it
    return mean + (1.0 - s) * (theta - mean)


def _labeled_score(
    prob: _Problem, fit: EMFit, theta: np.ndarray, T: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Minus the sum over labeled rows of E[d(Y, label) | votes].

    The posterior's expected distance to the true label: a score in the space's
    metric, as structured predictions are judged. (The log-probability of the
    exact label, tried first, rewards flat posteriors on 100 rows and chose
    models with worse predictions on real rankings.)
    """
    G = prob.log_lik_given(prob.log_table(theta, T, fit.eps)) + np.log(
        np.maximum(fit.w, 1e-300)
    )
    if fit.alpha is not None:
        G += prob.abstain_log_terms(fit.alpha)
    rows = np.flatnonzero(prob.labeled & (prob.c > 0))
    post = normalize_log_rows(G[rows])[0]  # (u', k)
    d = np.sqrt(np.maximum(prob.sq.sq_rows(prob.lab[rows])[:, T], 0.0))
    return -(post * d).sum(axis=1), prob.c[rows]


def _score(
    prob: _Problem, fit: EMFit, theta: np.ndarray, T: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Held-out pseudo-likelihood of the unlabeled rows per vote pattern, and the
    patterns' row counts: the sum of their product is the score; their spread is its
    standard error."""
    cond, counts, _ = prob.conditional_loglik_rows(
        np.log(np.maximum(fit.w, 1e-300)), theta, T, fit.alpha, fit.eps
    )
    return cond, counts


def _best_by_se(
    scores: dict[Any, float],
    per_row: dict[Any, list[Any]],
    default: Any,
    rank: Any,
    among: Any = None,
) -> Any:
    """The best-ranked candidate, unless its gain over ``default`` is within two
    standard errors of the paired held-out difference: then ``default``."""
    keys = [k for k in scores if among is None or among(k)]
    best = max(keys, key=rank)
    if default is None or best == default:
        return best
    gain = scores[best] - scores[default]
    return best if gain > 2.0 * _gain_se(per_row[best], per_row[default]) else default


def _gain_se(
    a: list[tuple[np.ndarray, np.ndarray]], b: list[tuple[np.ndarray, np.ndarray]]
) -> float:
    """Standard error of score(a) - score(b), from the per-row differences.

    Both candidates are scored on the same rows (per half, the same patterns), so the
    difference is a sum over rows of paired differences; its variance is the number
    of rows times theirs.
    """
    d = np.concatenate([va - vb for (va, _), (vb, _) in zip(a, b, strict=True)])
    c = np.concatenate([ca for _, ca in a])
    n = float(c.sum())
    if n <= 1.0:
        return 0.0
    mean = float(c @ d) / n
    return float(np.sqrt(n / (n - 1.0) * (c @ (d - mean) ** 2)))


def _fit(
    prob: _Problem,
    T: np.ndarray,
    start: EMFit,
    theta0: np.ndarray,
    outliers: bool,
    options: dict[str, Any],
) -> EMFit:
    eps0 = None
    if outliers:
        eps0 = np.full(prob.m, _EPS_START) if start.eps is None else start.eps.copy()
    alpha0 = None if start.alpha is None else start.alpha.copy()
    return _run_em(
        prob, T, start.w.copy(), theta0.copy(), alpha=alpha0, eps=eps0, **options
    )


def _variant_options(
    noise_model: dict[str, Any], max_iter: int, tol: float
) -> dict[str, Any]:
    """``_run_em``'s options for the noise variant (prior and theta modes) of
    ``noise_model``."""
    return dict(
        fixed_w=noise_model.get("prior", "free") != "free",
        label_dependent=noise_model.get("theta") == "label",
        shared=noise_model.get("theta") == "shared",
        max_iter=max_iter,
        tol=tol,
    )


def choose_family(
    stats: VoteStats,
    S: Any,
    T: np.ndarray,
    base: EMFit,
    noise_model: dict[str, Any],
    *,
    labeled: tuple[np.ndarray, np.ndarray, np.ndarray] | None,
    powers: tuple[float, ...],
    outliers: tuple[bool, ...],
    shrinkages: tuple[float, ...],
    rng: np.random.Generator,
    max_iter: int,
    tol: float,
    base_prob: _Problem,
) -> FamilyChoice:
    """Pick (power, outliers, dev weight, shrinkage) by held-out score; refit it.


    ``base`` is the fit of the paper's family (p = 2, no outliers) on ``base_prob``
    with the noise variant ``noise_model`` (its prior, theta and abstain modes are
    kept for every candidate). With labeled rows, a candidate also sets their weight
    in the likelihood: 1 (one row, one vote) or as much as all unlabeled rows
    together, for when the votes alone mislead the model (dependent LFs).
    """
    options = _variant_options(noise_model, max_iter, tol)
    # The halves only rank the candidates: a looser fit does that (large supports
    # make every EM step cost O(n_patterns k m)).
    fold_options = dict(options, max_iter=min(max_iter, 30), tol=max(tol, 1e-5))
    weights = (1.0,)
    if labeled is not None:
        n_lab = float(np.sum(labeled[1]))
        weights = (1.0, max(1.0, float(np.sum(stats.counts)) / max(n_lab, 1.0)))

    def problem(st: VoteStats, sq: _SqDists, lab: Any, **kw: Any) -> _Problem:
        """A problem on ``st`` with the base problem's groups, error correlations,
        prior pseudo-count and row weight."""
        return _Problem(
            st,
            sq,
            lab,
            base_prob.groups,
            prior_pseudo_count=base_prob.prior_pseudo_count,
            row_weight=base_prob.row_weight,
            group_corr=base_prob.group_corr,
            **kw,
        )

    # One set of distances per power, shared by every problem below (each keeps the
    # distinct distances of its labels' rows).
    sqs = {base_prob.sq.power: base_prob.sq}

    def sq_of(p: float) -> _SqDists:
        if p not in sqs:
            sqs[p] = _SqDists(S, p)
        return sqs[p]

    def weighted(lab: Any, omega: float) -> Any:
        return None if lab is None else (lab[0], lab[1] * omega, lab[2])

    fitted: dict[tuple[float, bool, float], tuple[EMFit, _Problem]] = {}
    loose: dict[tuple[float, bool, float], tuple[EMFit, _Problem]] = {}

    def refit(
        p: float, o: bool, omega: float, converge: bool = True
    ) -> tuple[EMFit, _Problem]:
        """The family's fit on all rows: loose (``fold_options``) to compare
        families, refined from there when it is the answer."""
        key = (p, o, omega)
        if key == (2.0, False, 1.0):
            return base, base_prob
        if key in fitted:
            return fitted[key]
        if key in loose:
            if not converge:
                return loose[key]
            start, prob = loose[key]
            fitted[key] = _fit(prob, T, start, start.theta, o, options), prob
            return fitted[key]
        prob = problem(stats, sq_of(p), weighted(labeled, omega))
        # From the base (not the halves' fits): a symmetric problem stays
        # symmetric. With outliers, from the same power's fit without them when
        # there is one (its theta is already at home in d^p).
        start = base
        th0 = _start_theta(base, base_prob, prob.sq)
        plain = fitted.get((p, False, omega), loose.get((p, False, omega)))
        if o and p != 2.0 and plain is not None:
            start, th0 = plain[0], plain[0].theta
        got = _fit(prob, T, start, th0, o, options if converge else fold_options)
        (fitted if converge else loose)[key] = got, prob
        return (fitted if converge else loose)[key]

    if noise_model.get("theta") == "label" and len(outliers) > 1:
        # A theta per LF and label already shapes each LF's errors per label; an
        # outlier component on top is nearly unidentified (EM crawls along a ridge).
        outliers = (False,)
    families = [(p, o) for p in powers for o in outliers]
    if len(families) > 1:
        # One contender, scored on halves against the paper's family below.
        contender = _aic_family(
            families, base, base_prob.m, refit, _outlier_gain(base_prob, base, T)
        )
        families = [f for f in families if f in ((2.0, False), contender)]
    candidates = [(p, o, w) for p, o in families for w in weights]
    halves = _thin(stats, labeled, rng)
    if min(float(np.sum(h.counts)) for h, _ in halves) < 1:
        # Too few rows to hold any out: the paper's family, as fitted.
        candidates, shrinkages = [(2.0, False, 1.0)], (0.0,)
    if len(candidates) == 1 and len(shrinkages) == 1:
        p, o, omega = candidates[0]
        fit, prob = refit(p, o, omega)
        th = shrink_theta(fit.theta, shrinkages[0])
        return FamilyChoice(p, o, shrinkages[0], omega, _with_theta(fit, th), prob, {})
    scores: dict[tuple[float, bool, float, float], float] = {}
    per_row: dict[tuple[float, bool, float, float], list[Any]] = {}
    lab_scores: dict[tuple[float, bool, float, float], float] = {}
    lab_rows: dict[tuple[float, bool, float, float], list[Any]] = {}
    for p, o, omega in candidates:
        sq = sq_of(p)
        fit_on = [
            problem(st, sq, weighted(lab, omega)) for st, lab in halves
        ]
        # An outlier vote is drawn from the LF's vote distribution as estimated on
        # the fitting half: the held-out half's own would leak its votes.
        score_on = [
            problem(st, sq, lab, log_h=fit_on[1 - j].log_h)
            for j, (st, lab) in enumerate(halves)
        ]
        # From the family's fit on all rows: the halves' fits are a few steps away.
        start = fitted.get((p, o, 1.0), loose.get((p, o, 1.0), (base, None)))[0]
        th0 = start.theta if start is not base else _start_theta(base, base_prob, sq)
        for i in (0, 1):
            fit = _fit(fit_on[i], T, start, th0, o, fold_options)
            for s in shrinkages:
                th = shrink_theta(fit.theta, s)
                per_row.setdefault((p, o, omega, s), []).append(
                    _score(score_on[1 - i], fit, th, T)
                )
                if labeled is not None:
                    lab_rows.setdefault((p, o, omega, s), []).append(
                        _labeled_score(score_on[1 - i], fit, th, T)
                    )
    for key, parts in per_row.items():
        scores[key] = float(sum(v @ c for v, c in parts))
    for key, parts in lab_rows.items():
        lab_scores[key] = float(sum(v @ c for v, c in parts))

    # The outlier component must pay half a nat per rate it adds: a held-out gain
    # smaller than that is noise of the halves, and the simpler family is kept.
    # Exact ties (theta shared by all LFs: shrinkage is void) keep the paper's
    # family, weight 1 and no shrinkage.
    def rank(key: tuple[float, bool, float, float]) -> tuple[float, ...]:
        p, o, omega, s = key
        return (scores[key] - 0.5 * base_prob.m * o, p, not o, -omega, -s)

    # Leaving the paper's family (p = 2, no outliers) must be worth more than the
    # noise of the halves: a held-out pseudo-likelihood gain of two standard errors
    # of the paired per-row difference over the best of the paper's family.
    plain = max((k for k in scores if k[0] == 2.0 and not k[1]), key=rank, default=None)
    best = _best_by_se(scores, per_row, plain, rank, among=lambda k: k[2] == 1.0)
    if labeled is not None:
        # With labeled rows, their expected distance to the truth may overrule the
        # votes' choice, by two standard errors of the paired difference: ~100 rows
        # scored on halves are too few to pick among many candidates by the best
        # score alone (it chose equal weights on a tree where the votes did better).
        best = _best_by_se(
            lab_scores, lab_rows, best, lambda k: (lab_scores[k], *rank(k)[1:])
        )
    p, o, omega, s = best
    fit, prob = refit(p, o, omega)
    if omega != 1.0:  # the fitted problem, with the labeled rows counted once
        prob = problem(stats, sq_of(p), labeled)
    return FamilyChoice(
        p, o, s, omega, _with_theta(fit, shrink_theta(fit.theta, s)), prob, scores
    )


# The model chosen by held-out likelihood is replaced by the unweighted vote when the
# latter's leave-one-out risk is lower by this many standard errors; the choice is
# said to rest on little evidence when the unweighted vote's risk is lower at all by
# more than RISK_WARN_SE standard errors.
RISK_MIN_SE = 2.0
RISK_WARN_SE = 1.0


def unweighted_safety_net(
    prob: _Problem, equal_prob: _Problem, T: np.ndarray, fit: EMFit, equal: EMFit
) -> tuple[bool, float]:
    """Whether the unweighted model ``equal`` should replace ``fit``, and the evidence.

    Both are scored by :meth:`_Problem.leave_one_out_risk`: the distance from each
    LF's vote to the model's answer from the LFs outside its dependency group, in the
    space's own metric. Held-out likelihood rewards a model that explains how LFs
    agree, even by trusting LFs that share a source or by an outlier component, when
    its answers get worse; this criterion scores the answers. Returns (replace,
    z) with z the risk advantage of ``fit`` over ``equal`` in standard errors of the
    paired per-row difference (positive: ``fit`` predicts the held-out votes better).
    """
    risks = []
    for pr, f in ((prob, fit), (equal_prob, equal)):
        risk = pr.leave_one_out_risk(
            np.log(np.maximum(f.w, 1e-300)), f.theta, T, f.alpha, f.eps
        )
        risks.append([(-risk, prob.c)])
    gain = float(risks[0][0][0] @ prob.c - risks[1][0][0] @ prob.c)
    se = _gain_se(risks[0], risks[1])
    z = gain / se if se > 0 else (0.0 if gain == 0 else np.sign(gain) * np.inf)
    return bool(z < -RISK_MIN_SE), float(z)


# Candidate temperatures f (theta times f) of the unweighted vote that dependent LFs
# leave: 1 keeps the fitted sharpness, the last (the flattest) is the default.
TEMPERATURE_GRID = (1.0, 0.5, 0.2, 0.1)


def choose_temperature(
    prob: _Problem, T: np.ndarray, fit: EMFit
) -> tuple[float, float]:
    """The factor f on theta: the flattest of ``TEMPERATURE_GRID`` unless a sharper
    one's least-expected-distance answer predicts held-out votes better, and that
    one's advantage over the flattest in standard errors (0 when the flattest).

    Where LFs depend on each other, the likelihood (which takes them independent)
    makes the posterior too sharp: it counts shared errors as evidence. The MAP does
    not depend on the sharpness of an unweighted vote, but the label of least
    expected distance does: it moves from the vote's mode towards the labels
    between the LFs' votes (on rankings, from Kemeny's order towards Borda's) as
    the posterior flattens. So the sharpness is the departure that needs evidence:
    the f of least leave-one-out risk (scored as :func:`unweighted_safety_net`
    scores models) replaces the flattest only when it beats it by ``RISK_MIN_SE``
    standard errors of the paired per-row difference. With the fitted sharpness as
    the default instead, the flatter posterior was chosen on 1 of 12 task-seeds
    whose truth is the LFs' consensus, where it was 0.01-0.03 closer to the truth.
    """
    log_w = np.log(np.maximum(fit.w, 1e-300))
    risks = {
        f: prob.leave_one_out_risk(
            log_w, fit.theta * f, T, fit.alpha, fit.eps, decision="distance"
        )
        for f in TEMPERATURE_GRID
    }
    c = prob.c
    flat = min(TEMPERATURE_GRID)
    best = min(TEMPERATURE_GRID, key=lambda f: (float(risks[f] @ c), f))
    if best == flat:
        return flat, 0.0
    gain = float((risks[flat] - risks[best]) @ c)
    se = _gain_se([(-risks[best], c)], [(-risks[flat], c)])
    z = gain / se if se > 0 else (np.inf if gain > 0 else 0.0)
    return (best, float(z)) if z > RISK_MIN_SE else (flat, 0.0)


def _aic_family(
    families: list[tuple[float, bool]],
    base: EMFit,
    m: int,
    refit: Any,
    outlier_gain: float = np.inf,
) -> tuple[float, bool]:
    """The family (power, outliers) of highest log-likelihood on all rows, less one nat
    per parameter it adds (AIC: the outlier component adds a rate per LF).

    Each family is fitted loosely on all rows (a few dozen EM steps from ``base``,
    the paper's family's fit; the chosen one is refined later). Only this contender
    is then scored on held-out halves against the paper's family: scoring every
    family there cost two fits on halves each, and on the benchmark's real tasks the
    choice is the same. p = 1 with outliers is fitted only when p = 1 or outliers
    alone beat the paper's family (on the paper's model neither does).

    ``outlier_gain`` (:func:`_outlier_gain`) shortlists the outlier family before its
    fit: below ``m / 4`` it is not fitted and cannot be the contender.
    """
    scores = {(2.0, False): (0.0, 2.0, False)}
    if outlier_gain < _OUTLIER_SCREEN * m:
        scores[(2.0, True)] = (-np.inf, 2.0, False)

    def score(family: tuple[float, bool]) -> tuple[float, ...]:
        if family not in scores:
            p, o = family
            fit, _ = refit(p, o, 1.0, converge=False)
            scores[family] = (fit.ll - base.ll - m * o, p, not o)
        return scores[family]

    singles = [f for f in families if f[0] == 2.0 or not f[1]]
    best = max(singles, key=score)
    if (1.0, True) in families and best != (2.0, False):
        best = max(best, (1.0, True), key=score)
    return best


# The outlier family is fitted only when the rates' profile gain reaches this many
# nats per LF (see _outlier_gain).
_OUTLIER_SCREEN = 0.25
# Ratio of the geometric grid of rates on which _outlier_gain maximizes.
_EPS_GRID_RATIO = 1.5


def _outlier_gain(prob: _Problem, fit: EMFit, T: np.ndarray) -> float:
    """An estimate, before any fit, of what the outlier component adds to the
    log-likelihood of the paper's family's fit ``fit``: each LF's rate alone, at its
    best with every other parameter held, summed over LFs (inf: not estimated).

    With eps_a alone, a pattern's likelihood is L_i (1 + eps_a g_ia) exactly, where
    g_ia = E[h_a(v) / P_theta(v | Y) | pattern i] - 1 for the LF's vote v, so the
    gain sum_i c_i log(1 + eps_a g_ia) is concave in eps_a and its maximum is read
    off a geometric grid: the best grid point is within a factor of the grid's
    ratio of it (f concave, f(0) = 0), which the returned value makes up.

    Measured against the joint loose fit (every rate and theta free): on the paper's
    synthetic setups (S4 to S7, close centers, 29 fits) this estimate was 0 to 1.04
    nats per LF and the fit never paid its AIC cost of one nat per LF (at most 1.6
    nats in all); on the 16 real tasks where the family competes (10 of the
    benchmark's, 6 hold-out; 46 fits) it was 9.9 to 5,265 nats and the fit gained
    0.41 to 2.8 times as much. Below m / 4 the family is not fitted: at the worst
    ratio its gain would be 0.7 of its cost.
    """
    D = prob.gathered(T)
    if prob.pw is not None or D is None:
        # votes weighed by group (not linear in eps) or too many cells: fit it
        return np.inf
    log_w = np.log(np.maximum(fit.w, 1e-300))
    R, _ = prob.e_step(log_w, fit.theta, T, fit.alpha)
    th, logz, _ = prob._label_moments(fit.theta, T)
    h = np.exp(np.take_along_axis(prob.log_h, np.maximum(prob.P, 0).T, axis=1))
    with np.errstate(over="ignore", invalid="ignore"):
        # E[1 / P_theta(v | Y)] per (LF, pattern): D is d^p of the vote, 0 on abstains
        inv = np.einsum("uk,auk->au", R, np.exp(D * th[:, None, :] + logz[:, None, :]))
        g = (h * inv - 1.0) * prob.voted.T  # (m, u)
    if not np.isfinite(g).all():
        return np.inf
    rising = g[g @ prob.c > 0.0]  # the LFs whose gain rises from eps = 0
    best = np.zeros(rising.shape[0])
    for eps in _EPS_GRID_RATIO ** -np.arange(46.0):  # 1 down to 1e-8
        gain = np.log1p(min(eps, 1.0 - 1e-9) * rising) @ prob.c
        np.maximum(best, gain, out=best)
    return float(_EPS_GRID_RATIO * best.sum())


def _start_theta(base: EMFit, base_prob: _Problem, sq: _SqDists) -> np.ndarray:
    """theta for d^p (``sq.power``) matching theta_2 d^2 at the space's typical distance."""
    power = sq.power
    if power == 2.0:
        return base.theta
    S2 = base_prob.sq.sq_rows(np.arange(min(base_prob.r, 64)))
    typical = float(np.sqrt(S2[S2 > 0]).mean()) if (S2 > 0).any() else 1.0
    return np.clip(base.theta * typical ** (2.0 - power), 0.0, sq.theta_max)


def _with_theta(fit: EMFit, theta: np.ndarray) -> EMFit:
    return EMFit(fit.w, theta, fit.alpha, fit.ll, fit.n_iter, fit.converged, fit.eps)
