"""RankingLabelModel's safeguards on its fitted weights: an LF with no evidence of
beating chance gets weight 0 (all of them: equal tiny weights), LFs whose errors
visibly depend on each other leave every LF the same weight, and LFs that look like
copies, sit at the weight's cap or agree more than any accuracy allows are named in a
warning."""

from __future__ import annotations

import numpy as np

from snorkel_structured import _warnings
from snorkel_structured.exceptions import IdentifiabilityWarning
from snorkel_structured.rankings.estimate import RankingStats
from snorkel_structured.rankings.mallows import THETA_MAX

__all__ = [
    "CHANCE_Z",
    "COPY_AGREEMENT",
    "equal_if_frustrated",
    "evidence_checks",
    "warn_if_overagreeing",
]

# An LF is taken to beat chance only if its agreement with some other LF is this many
# standard errors above 0 (random orderings agree on half of the pairs).
CHANCE_Z = 3.0
# Two LFs ordering this fraction of their common pairs alike may be copies.
COPY_AGREEMENT = 0.99


def evidence_checks(
    stats: RankingStats,
    theta: np.ndarray,
    slope: np.ndarray,
    dependencies: list[tuple[int, int]],
) -> tuple[np.ndarray, np.ndarray]:
    """Weights that rest on no evidence give way, with a warning.

    An LF whose agreement with every other LF is within CHANCE_Z standard errors of
    0 (the agreement of a random ordering) shows no sign of beating chance: its
    weight is set to 0. If no LF shows one, every LF gets the same tiny weight
    (unweighted Kemeny, pair probabilities near 1/2). LFs that (almost) never
    disagree are flagged: their agreement cannot tell accurate LFs from copies.
    """
    A = stats.agreement
    m = stats.n_lfs
    n_eff = stats.both / max(stats.n_items - 1, 1)
    with np.errstate(invalid="ignore"):
        z = np.where(stats.both > 0, A * np.sqrt(n_eff), 0.0)
    np.fill_diagonal(z, 0.0)
    informative = np.any(z >= CHANCE_Z, axis=1)
    theta, slope = theta.copy(), slope.copy()
    if not informative.any():
        _warnings.warn(
            "No two LFs agree on the order of item pairs more often than random "
            f"orderings would ({CHANCE_Z:g} standard errors): there is no evidence "
            "that any LF beats chance, so every LF gets the same weight. Check the "
            "LFs, or pass V_dev and Y_dev.",
            IdentifiabilityWarning,
            stacklevel=4,
        )
        return np.full(m, 1e-3), np.zeros(m)
    weak = np.flatnonzero(~informative & (np.diag(stats.both) > 0))
    if weak.size:
        _warnings.warn(
            (f"LFs {weak.tolist()} agree" if weak.size > 1 else f"LF {weak[0]} agrees")
            + " with no other LF more often than a random ordering would "
            f"({CHANCE_Z:g} standard errors): no evidence that "
            + ("they beat" if weak.size > 1 else "it beats")
            + " chance, so weight 0.",
            IdentifiabilityWarning,
            stacklevel=4,
        )
        theta[weak] = 0.0
        slope[weak] = 0.0
    declared = {tuple(p) for p in dependencies}
    copies = [
        (a, b)
        for a in range(m)
        for b in range(a + 1, m)
        if (a, b) not in declared
        and n_eff[a, b] >= 10
        and (1 + A[a, b]) / 2 >= COPY_AGREEMENT
    ]
    if copies:
        _warnings.warn(
            f"LF pairs {copies} order at least {COPY_AGREEMENT:.0%} of their common "
            "pairs alike: LFs that copy one source look exactly like very accurate "
            "LFs, and the votes cannot tell which. If they share a source, declare "
            "them (dependencies=[...]) or keep one.",
            IdentifiabilityWarning,
            stacklevel=4,
        )
    capped = np.flatnonzero(theta >= 0.999 * THETA_MAX)
    if capped.size:
        # As StructuredLabelModel warns: the LF decides every pair it orders. On
        # real lists it was a top-10 LF whose agreement with a cluster sharing
        # another source made it look perfect (true pair accuracy 0.67).
        _warnings.warn(
            f"LF(s) {capped.tolist()} reached theta={THETA_MAX:g}, the upper bound: "
            "the model treats their ordering of a pair as never wrong and lets them "
            "decide every pair they order. This usually means their agreement with "
            "other LFs comes from a shared source rather than from the truth; check "
            "them (RankingLFAnalysis), declare dependencies=[...], or pass V_dev and "
            "Y_dev.",
            IdentifiabilityWarning,
            stacklevel=4,
        )
    return theta, slope


# The pairwise model's likelihood fit may take an LF this far (in log-odds) above
# its closed-form estimate from the agreements before a warning: a tenth of the
# error rate its agreements give.
PAIRWISE_DRIFT = float(np.log(10.0))


def warn_if_pairwise_drift(theta: np.ndarray, theta_triplet: np.ndarray) -> None:
    """Warn when the pairwise model's Monte Carlo EM took an LF far above its
    closed-form (triplet) weight.

    Under the pairwise model each pair's vote is an independent flip of the truth,
    and both estimates are consistent. Votes that are orderings (transitive, such
    as lists passed in pairwise form) break that model, and its likelihood rewards
    a truth that copies one LF: on real lists of 20-30 items in pairwise form one
    LF went from theta 1.9 to 22 (and from 3.9 to 24), its ordering then deciding
    every pair it orders, and the error rose by 0.004-0.009 over the lists model.
    """
    drift = np.flatnonzero(theta > theta_triplet + PAIRWISE_DRIFT)
    if drift.size:
        shown = ", ".join(
            f"{int(a)} ({theta_triplet[a]:.2g} -> {theta[a]:.3g})" for a in drift
        )
        _warnings.warn(
            f"LF(s) {shown}: the pairwise model's likelihood fit took their weight "
            "far above what their agreements with the other LFs give, so they "
            "decide every pair they order. The pairwise model reads each pair's vote "
            "as an independent flip of the truth; votes that are orderings (lists, "
            "also in pairwise form) are not, and its likelihood then rewards copying "
            "one LF. Fit lists as lists (noise='position' or 'mallows'), or pass "
            "V_dev and Y_dev to check the weights.",
            IdentifiabilityWarning,
            stacklevel=4,
        )


def equal_if_frustrated(
    theta: np.ndarray,
    slope: np.ndarray,
    triangles: list[tuple[int, int, int]],
    against: list[tuple[int, int, int]] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Every LF with a weight gets the same one when ``triangles`` (LF triplets whose
    agreements no independently erring LFs show,
    :func:`~snorkel_structured.rankings.dependencies.frustrated_triangles`) or
    ``against`` (over-agreeing triplets with a negative agreement, see below) exist;
    with a warning naming them.

    The fitted weights read agreement as accuracy, and there agreement comes partly
    from the dependence: on two real tasks with such triplets (country densities,
    worst tumour texture in lists of 20) the LF at the centre of the dependent
    sources got the largest weight, and the weighted rankings were 0.04 and 0.08
    (normalized Kendall) worse than the equal weights'. On the third task where
    triplets show (wine alcohol, lists of 12) the weights had been 0.028 better
    (0.272 against 0.300, the best unweighted fusion's 0.300); on the other tasks of
    the benchmark and the hold-out lists none shows. The common weight is the
    median of the fitted ones (a slope at least 0); LFs at weight 0 (no evidence of
    beating chance, or no votes) stay there, and a group sharing a source still
    counts once (``source_share_`` applies after).

    ``against``: an LF that agrees with one LF and *against* another more than any
    accuracy allows (:func:`~snorkel_structured.rankings.dependencies.overagreeing_triplets`
    with a negative agreement) reads a quantity that one of them reads reversed,
    e.g. a capital's population against the number of cities in its region. The
    weights then take it for a near-perfect LF: on city populations (lists of 20)
    it had the largest weight on every seed, and equal weights are better by 0.012
    (0.4161 -> 0.4046, seeds 0-2, each seed better); on country densities (lists of
    5, through this model) on the three seeds without frustrated triangles by
    0.002-0.017. A consensus truth of the LFs' own columns shows over-agreement
    with positive agreements only, and is left to the warning of
    :func:`warn_if_overagreeing`.
    """
    if not (triangles or against):
        return theta, slope
    why = []
    if triangles:
        why.append(
            f"LF triplets {triangles} agree in a way LFs that err independently cannot "
            "(the product of their pairwise agreements beyond chance is negative)"
        )
    if against:
        why.append(
            f"in LF triplets {against} the first LF agrees with one LF and against the "
            "other more than any accuracy allows (see overagreeing_triplets_)"
        )
    _warnings.warn(
        "; and ".join(why) + ": their errors depend on each other, so their "
        "accuracies cannot be told from their agreements, and every LF gets the same "
        "weight (unweighted Kemeny, a group sharing a source counted once; see "
        "frustrated_triangles_). Pass V_dev and Y_dev to weigh them, or "
        "dependencies=None to fit them as independent.",
        IdentifiabilityWarning,
        stacklevel=4,
    )
    active = theta != 0
    if not active.any():
        return theta, slope
    theta, slope = theta.copy(), slope.copy()
    common = float(np.median(theta[active]))
    theta[active] = common if common > 0 else 1e-3
    slope[active] = max(float(np.median(slope[active])), 0.0)
    return theta, slope


def warn_if_overagreeing(triplets: list[tuple[int, int, int]]) -> None:
    """Warn when an LF agrees with two others more than any accuracy allows
    (:func:`~snorkel_structured.rankings.dependencies.overagreeing_triplets`).

    The weights then rest on an assumption the votes contradict and cannot replace:
    agreements alone cannot tell LFs that share something beyond the truth from a
    truth that is a consensus of the LFs' signals. On the benchmark's list tasks with
    such triplets the fitted weights were ahead of the Borda count on some (diabetes
    progression, 0.308 against 0.335) and far behind on a consensus truth (the sum
    of five tumour measurements' z-scores, 0.149 against 0.094); 100 labeled rows
    chose well on both (0.311 and 0.094).
    """
    if not triplets:
        return
    centres = sorted({a for a, _, _ in triplets})
    shown = ", ".join(f"{a} with {b} and {c}" for a, b, c in triplets[:4])
    more = f" and {len(triplets) - 4} more" if len(triplets) > 4 else ""
    who = f"LFs {centres} agree" if len(centres) > 1 else f"LF {centres[0]} agrees"
    _warnings.warn(
        f"{who} with two other LFs more often than any accuracy allows ({shown}{more}; "
        "see overagreeing_triplets_ and RankingLFAnalysis(V).pair_agreement()): "
        "either they share something beyond the "
        "truth, or the truth is a consensus of what the LFs read. Agreements cannot "
        "tell which, and the weights read either as accuracy. Pass V_dev and Y_dev "
        "(about 100 labeled rows) to choose between the weights and the Borda "
        "count, or declare dependencies=[...].",
        IdentifiabilityWarning,
        stacklevel=4,
    )
