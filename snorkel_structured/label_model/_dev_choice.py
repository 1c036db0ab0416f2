"""A few labeled rows choose the finite label model's answer, by cross-validation.

Zhu et al. (ACL 2023, "Weaker Than You Think") found that weak-supervision methods
rarely beat simply using their clean validation labels. A hundred labeled rows among
thousands barely move a likelihood, so here they are used where they are strong: to
*choose*. Every candidate is a parameter set of the same model (the support and prior
of the unsupervised fit, a theta per LF, a noise power), so the choice keeps
``predict_proba``, ``predict`` and the noise-aware loss weights consistent:

- ``label model``: the unsupervised fit;
- ``LF weights from dev rows`` (powers 1 and 2): each LF's theta estimated from the
  labeled rows alone (maximum likelihood with the true label known; the model's
  conjugate pseudo-vote keeps it finite on few rows);
- ``equal weights from dev rows`` (powers 1 and 2): one theta for every LF, the
  unweighted vote (Kemeny-like with power 1, the Frechet mean with power 2);

  (candidates fitted on labels weigh every vote fully, dependency groups or not:
  the labels measure each LF's worth as it votes);
- ``equal weights from dev rows, flattened`` (powers 1 and 2): the same theta times
  ``FLAT_SCALE``. A flatter posterior makes the least-expected-distance answer an
  average over the labels near the votes, as Borda's positional count is: on
  consensus truths (a composite score) Borda beat every weighted model, and the
  fitted theta is the likelihood's, not the one of least risk (metabolic scores,
  seeds 0-2, medians: 0.1228 -> 0.1131 with the free prior, 0.1167 with the
  uniform one the model now takes there; Borda 0.1123);
- ``halfway to dev weights``: the mean of the unsupervised and the dev thetas;
- ``LF <a> trusted most``: LF a's theta at the model's cap (and its outlier rate at
  the least), the other LFs as fitted: its vote wins unless the others agree
  strongly on another answer (an LF that is nearly always right and, when wrong,
  far off; european_regions with 100 dev rows: 0.094 against 0.116 for the LF's
  vote alone wherever it votes);
- ``LF <a> first``: LF a's vote whenever it votes (its outlier rate 0 and its theta
  so large that no other LF nor the prior can outvote it), the unsupervised model
  where it abstains (a single LF, never worse on its abstains; on a ranking task
  where it is the only good LF, 0.127 against 0.146-0.157 for the other candidates).

Each candidate is scored by the mean distance d(prediction, label) over the labeled
rows, the prediction being the label of least posterior expected distance
(``predict(decision="distance")``). Candidates that learn from the labels are scored
by K-fold cross-validation (fitted on the other folds); the others learn nothing from
them and are scored on every labeled row. The lowest mean wins (ties: the order
above) when it beats the unsupervised model by more than ``DEV_MIN_SE`` standard
errors of the paired difference (otherwise the unsupervised model stays), and a
candidate fitted on labels is then refitted on all of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from snorkel_structured import _warnings
from snorkel_structured.estimators._em_core import _EPS_MIN, _Problem, _run_em
from snorkel_structured.estimators._noise_kernel import _SqDists, support_log_table
from snorkel_structured.estimators._stats import VoteStats
from snorkel_structured.estimators._support_posterior import (
    SupportPosterior,
    least_cost_ties,
)
from snorkel_structured.exceptions import IdentifiabilityWarning

__all__ = [
    "DevChoice",
    "choose_with_dev",
    "keep_unless_clear_win",
    "paired_se",
    "posterior_table",
]

DEV_FOLDS = 5
# theta of the flattened unweighted vote, as a share of the one fitted on dev rows.
FLAT_SCALE = 0.2
# Standard errors by which a candidate must beat the unsupervised model to replace it.
DEV_MIN_SE = 1.0
# Log-odds by which the vote of ``LF <a> first`` beats any other label (e^-50).
_DOMINANCE_MARGIN = 50.0
# EM iterations for a theta fitted on labeled rows (the E-step is clamped, so EM
# only re-solves the moment equations; a few suffice).
_DEV_MAX_ITER = 50


def paired_se(diff: np.ndarray, counts: np.ndarray | None = None) -> float:
    """Standard error of the mean per row of a paired difference.

    ``diff[i]`` is the summed difference over ``counts[i]`` rows that share it (one
    row each by default): rows of one labeled vote pattern have equal losses.
    """
    c = np.ones(diff.shape) if counts is None else np.asarray(counts, dtype=np.float64)
    n = float(c.sum())
    d = diff / np.maximum(c, 1e-300)  # the difference per row
    mean = float((c * d).sum() / n)
    var = float((c * (d - mean) ** 2).sum() / max(n - 1.0, 1.0))
    return float(np.sqrt(var / n))


def keep_unless_clear_win(
    names: list[str],
    means: np.ndarray,
    ses: list[float],
    metric: str,
    stacklevel: int,
) -> int:
    """Index of the candidate with the lowest mean, or 0 (the unsupervised model)
    when it wins by at most ``DEV_MIN_SE`` standard errors of the paired difference,
    with a warning: among a dozen candidates the best score on a hundred rows is
    partly luck (the winner's curse), and labeled rows must never be set aside
    silently. Ties: the first."""
    best = int(np.argmin(means))
    if best and means[0] - means[best] <= DEV_MIN_SE * ses[best]:
        _warnings.warn(
            f"The labeled rows favour {names[best]!r} over the unsupervised label "
            f"model ({metric} {means[best]:.4g} against {means[0]:.4g}), but by less "
            f"than {DEV_MIN_SE:g} standard error of the difference ({ses[best]:.3g}), "
            "so the unsupervised model is kept (see dev_scores_). Label more rows to "
            "let them decide.",
            IdentifiabilityWarning,
            stacklevel=stacklevel + 1,
        )
        return 0
    return best


def posterior_table(
    S: Any,
    theta: np.ndarray,
    T: np.ndarray,
    *,
    power: float,
    eps: np.ndarray | None = None,
    log_h: np.ndarray | None = None,
    alpha: np.ndarray | None = None,
) -> np.ndarray:
    """(n_lfs, r + 1, k) log-factors of the posterior over the support T.

    ``table[a, v + 1, j]`` is LF a's log P(lambda_a = v | Y = T_j), with the abstain
    row 0 holding log P(abstain | T_j) when abstains depend on the label (``alpha``
    of shape (n_lfs, k)), else 0. (Dependency groups weigh the votes per pattern:
    :func:`~snorkel_structured.estimators._em_core.pattern_weights`.)
    """
    table = support_log_table(S, theta, T, power=power, eps=eps, log_h=log_h)
    if alpha is not None:  # the votes' factor 1 - alpha, abstains' alpha
        table[:, 1:, :] += np.log1p(-alpha)[:, None, :]
        table[:, 0, :] = np.log(alpha)
    return table


@dataclass(frozen=True)
class DevChoice:
    """The candidate chosen and every candidate's cross-validated score."""

    name: str
    theta: np.ndarray
    power: float
    eps: np.ndarray | None
    scores: pd.DataFrame
    grouped: bool  # whether the dependency groups weigh the votes (unfitted only)


@dataclass(frozen=True)
class _Candidate:
    name: str
    power: float
    mode: str  # "fixed", "lf", "shared" or "half"
    theta: np.ndarray | None = None  # for "fixed"
    eps: np.ndarray | None = None  # outlier rates, at the base power only
    scale: float = 1.0  # multiplies the theta fitted on labeled rows


def _row_losses(
    table: np.ndarray,
    log_prior: np.ndarray,
    P: np.ndarray,
    y_pos: np.ndarray,
    D_T: np.ndarray,
    T: np.ndarray,
    groups: np.ndarray | None,
    group_corr: np.ndarray | None = None,
) -> np.ndarray:
    """d(prediction, label) per labeled pattern, the prediction being the fitted
    model's ``predict(decision="distance")`` (the label of least E[d | votes]).

    Where labels tie for the least E[d | votes] (LFs of equal weight that split),
    the loss is their mean distance to the label: what breaking the tie at random
    costs on average. The candidate's score then does not hang on how a tie is
    broken (on a real ranking task, one dev choice flipped when only the tie rule
    of ``predict`` changed).

    ``D_T`` is (k, r): distances from the support's labels to every label; ``y_pos``
    the labels' positions in the support.
    """
    post = SupportPosterior(table, log_prior, T, D_T.shape[1], groups, group_corr)
    logp, inverse = post.log_proba(post.check(P))
    tied = least_cost_ties(np.exp(logp) @ D_T)[inverse]  # (n, r)
    return (tied * D_T[y_pos]).sum(axis=1) / tied.sum(axis=1)


def _dominant_theta(
    others: float, log_prior: np.ndarray, unit: float, cap: float
) -> float:
    """theta that makes an LF's vote the answer wherever it votes.

    ``others`` is how far the other LFs' factors (and the LF's own abstain factors)
    can move the log-posterior between two labels: the sum of each one's spread over
    the labels. With the prior's spread and a margin on top, a vote that costs every
    other label that much holds whatever the other LFs say. At the model's usual cap
    (``theta_max``) it did not: with power 2, four LFs voting a ranking two swaps
    away outvoted it (a texture ranking task: the candidate scored 0.33 on the dev
    rows, where the LF alone errs 0.12 on the test rows).
    """
    spread = others + float(log_prior.max() - log_prior.min()) + _DOMINANCE_MARGIN
    return max(cap, spread / unit)


def _folds(counts: np.ndarray, n_folds: int, rng: np.random.Generator) -> np.ndarray:
    """(n_folds, u) counts of each labeled pattern's rows in each fold (rows shuffled)."""
    c = np.round(counts).astype(np.int64)
    rows = np.repeat(np.arange(c.size), c)
    fold = np.empty(rows.size, dtype=np.int64)
    fold[rng.permutation(rows.size)] = np.arange(rows.size) % n_folds
    out = np.zeros((n_folds, c.size))
    np.add.at(out, (fold, rows), 1.0)
    return out


def choose_with_dev(
    S: Any,
    T: np.ndarray,
    w: np.ndarray,
    *,
    theta: np.ndarray,
    power: float,
    eps: np.ndarray | None,
    log_h: np.ndarray | None,
    alpha: np.ndarray | None,
    groups: np.ndarray | None,
    labeled: tuple[np.ndarray, np.ndarray, np.ndarray],
    rng: np.random.Generator,
    n_folds: int = DEV_FOLDS,
    group_corr: np.ndarray | None = None,
) -> DevChoice:
    """The candidate of least cross-validated mean distance on the labeled rows.

    Parameters
    ----------
    S : ndarray of shape (r, r) or FiniteMetricSpace
        Squared distances (or the space, for large spaces).
    T : ndarray of int of shape (k,)
        The support; every label of ``labeled`` must be in it.
    w : ndarray of shape (k,)
        The unsupervised prior over T (kept by every candidate).
    theta, power, eps, log_h, alpha, groups
        The unsupervised fit: theta (n_lfs,) or (n_lfs, r), its noise power,
        outlier rates and vote distributions (or None), label-dependent abstain
        rates (n_lfs, k) (or None), and each LF's dependency group (or None).
    group_corr : ndarray of shape (n_lfs, n_lfs), optional
        Correlation of the LFs' errors within each group (see
        ``_em_core.pattern_weights``); None: a group's votes weigh 1/j.
    labeled : (patterns, counts, labels)
        Labeled rows as unique vote patterns (u, n_lfs), their counts (u,) and
        label indices (u,).
    rng : numpy.random.Generator
        Draws the folds.

    Returns
    -------
    DevChoice
    """
    P, c, y = (np.asarray(v) for v in labeled)
    P = P.astype(np.int64)
    m = P.shape[1]
    pos = np.full(int(max(T.max(), y.max())) + 1, -1, dtype=np.int64)
    pos[T] = np.arange(T.size)
    y_pos = pos[y]
    if (y_pos < 0).any():
        raise ValueError("every labeled row's label must be in the support")
    sq2 = _SqDists(S, 2.0)
    D_T = np.sqrt(np.maximum(sq2.sq_rows(T), 0.0))  # (k, r)
    log_prior = np.log(np.maximum(w, 1e-300))
    # theta per LF and label is (n_lfs, r): the per-LF candidates start from its mean
    base_theta = theta if theta.ndim == 1 else theta[:, T].mean(axis=1)
    sq_power = _SqDists(S, power)
    cap, unit = sq_power.theta_max, sq_power.unit

    def table(cand: _Candidate, th: np.ndarray) -> np.ndarray:
        return posterior_table(
            S,
            th,
            T,
            power=cand.power,
            eps=cand.eps,
            log_h=log_h if cand.eps is not None else None,
            alpha=alpha,
        )

    def fit_theta(cand: _Candidate, counts: np.ndarray) -> np.ndarray:
        """theta of a candidate that learns from the labeled rows with ``counts``."""
        keep = counts > 0
        lab = (P[keep], counts[keep], y[keep])
        empty = VoteStats(int(sq2.r), P[:0], np.zeros(0))
        sq = _SqDists(S, cand.power)
        prob = _Problem(empty, sq, lab)
        # The E-step is clamped to the labels: EM only solves the moment equations,
        # from any start.
        start = base_theta if cand.power == power else np.full(m, 1.0 / sq.unit)
        fit = _run_em(
            prob,
            T,
            w,
            np.clip(start, 0.0, sq.theta_max),
            fixed_w=True,
            label_dependent=False,
            shared=cand.mode == "shared",
            max_iter=_DEV_MAX_ITER,
            tol=1e-8,
        )
        if cand.mode == "half":
            return 0.5 * (base_theta + fit.theta)
        return cand.scale * fit.theta

    # Thetas fitted on labeled rows are of the paper's family with power 1 or 2 (no
    # outlier component: a hundred rows do not estimate its rates).
    cands = [_Candidate("label model", power, "fixed", theta, eps)]
    for mode, what in (("lf", "LF weights"), ("shared", "equal weights")):
        for p in dict.fromkeys((power, 1.0, 2.0)):
            cands.append(_Candidate(f"{what} from dev rows (power {p:g})", p, mode))
    for p in dict.fromkeys((power, 1.0, 2.0)):
        name = f"equal weights from dev rows, flattened (power {p:g})"
        cands.append(_Candidate(name, p, "shared", scale=FLAT_SCALE))
    if eps is None:
        cands.append(_Candidate("halfway to dev weights", power, "half"))
    # How far each LF's factors move the log-posterior between two labels: the
    # widest row of its table. At theta 0 and no outliers an LF keeps only the
    # spread of its abstain factors (label-dependent abstains).
    fitted = table(cands[0], theta)
    spread = (fitted.max(axis=2) - fitted.min(axis=2)).max(axis=1)  # (m,)
    del fitted  # (m, r + 1, k): on Permutations(8), 170 MB
    own = np.zeros(m)
    if alpha is not None:
        own = np.maximum(
            np.ptp(np.log1p(-alpha), axis=1), np.ptp(np.log(alpha), axis=1)
        )
    for a in range(m):
        th = np.array(theta, dtype=np.float64, copy=True)
        th[a] = cap  # a whole row when theta is per label
        ep = None
        if eps is not None:  # LF a's votes are outliers as rarely as the model allows
            ep = eps.copy()
            ep[a] = _EPS_MIN
        cands.append(_Candidate(f"LF {a} trusted most", power, "fixed", th.copy(), ep))
        if ep is not None:  # ... and never
            ep = ep.copy()
            ep[a] = 0.0
        others = float(spread.sum() - spread[a] + own[a])
        th[a] = _dominant_theta(others, log_prior, unit, cap)
        cands.append(_Candidate(f"LF {a} first", power, "fixed", th, ep))

    folds = _folds(c, n_folds, rng)
    n = float(c.sum())
    rows = []
    losses = {}
    for cand in cands:
        if cand.mode == "fixed":
            loss = _row_losses(
                table(cand, cand.theta), log_prior, P, y_pos, D_T, T, groups, group_corr
            )
            per_row = loss * c
        else:
            per_row = np.zeros(c.size)
            for f in range(n_folds):
                train = c - folds[f]
                if train.sum() <= 0 or folds[f].sum() <= 0:
                    continue
                th = fit_theta(cand, train)
                loss = _row_losses(table(cand, th), log_prior, P, y_pos, D_T, T, None)
                per_row += loss * folds[f]
        losses[cand.name] = per_row
        rows.append(
            {
                "candidate": cand.name,
                "mean_distance": float(per_row.sum() / n),
                "fitted_on_dev": cand.mode != "fixed",
            }
        )
    scores = pd.DataFrame(rows)
    # Standard error of each candidate's difference from the unsupervised model
    # (paired over the labeled rows): how far apart they are beyond the noise of a
    # hundred rows.
    ref = losses[cands[0].name]
    se = [paired_se(losses[cand.name] - ref, c) for cand in cands]
    scores["se_of_difference"] = se
    best = keep_unless_clear_win(
        [cand.name for cand in cands],
        scores["mean_distance"].to_numpy(),
        se,
        "cross-validated mean distance",
        stacklevel=2,
    )
    chosen = cands[best]
    scores["chosen"] = np.arange(len(cands)) == best
    th = chosen.theta if chosen.mode == "fixed" else fit_theta(chosen, c)
    return DevChoice(
        chosen.name,
        np.asarray(th, dtype=np.float64),
        chosen.power,
        chosen.eps,
        scores,
        chosen.mode == "fixed",
    )
