"""A few labeled rows choose RankingLabelModel's weights, by their Kendall distance.

The candidates are weight sets ``(theta, gap slope)`` of the same model, so the choice
keeps ``predict``, ``predict_proba`` and the loss weights consistent:

- ``label model``: the unsupervised estimates;
- ``equal weights``: one weight for every LF (unweighted Kemeny);
- ``Borda count`` (``noise="position"``): every LF's weight on a pair equal to the
  pair's gap in its list, which makes the weighted Kemeny ranking the Borda count's
  (:func:`~snorkel_structured.rankings.estimate.gap_features`);
- ``LF <a> first``: LF a's weight, the others at ``SINGLE_LF_TIE_WEIGHT`` of it (they
  only order what LF a leaves unordered);
- ``dev weights``: each LF's maximum-likelihood weights from the labeled rows,
  scored by ``DEV_FOLDS``-fold cross-validation (fitted on the other folds);
- ``dev weights, sources once``: the same weights times each LF's share of the source
  its group shares (``source_share_``), as the unsupervised weights are; only when
  the model groups some LFs. Each LF's weight measures its own accuracy, so LFs that
  copy one source would otherwise count once per copy.

Each candidate is scored by its mean normalized Kendall distance on the labeled rows.
The best replaces the unsupervised model only when it beats it by more than
``DEV_MIN_SE`` standard errors of the paired difference; otherwise a warning says
so and the unsupervised model stays.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from snorkel_structured._validation import check_seed
from snorkel_structured.label_model._dev_choice import (
    DEV_FOLDS,
    keep_unless_clear_win,
    paired_se,
)
from snorkel_structured.label_model._ranking_votes import PairVotes
from snorkel_structured.rankings._votes import check_orderings, kendall_tau_distance
from snorkel_structured.rankings.estimate import (
    GapCells,
    fit_gap_curves,
    gap_features,
    k_histogram,
    pair_signs,
    theta_from_rate,
)
from snorkel_structured.rankings.mallows import theta_from_disagreements

__all__ = ["DEV_FOLDS", "SINGLE_LF_TIE_WEIGHT", "RankingDevChoice", "choose_on_dev"]

# A single LF as a candidate: its weight, with the others at this fraction of theirs
# (they only order what the LF leaves unordered).
SINGLE_LF_TIE_WEIGHT = 1e-3

# Weighted Kemeny orderings of votes under weights (theta, gap slope).
Decoder = Callable[[PairVotes, np.ndarray, np.ndarray], np.ndarray]


class RankingDevChoice(NamedTuple):
    """The chosen candidate's name and weights, every candidate's scores, and the
    fraction of the labeled rows' voted pairs the chosen weights order rightly."""

    name: str
    theta: np.ndarray
    gap_slope: np.ndarray
    scores: pd.DataFrame
    pair_accuracy: float | None


def _dev_theta(
    S: np.ndarray, k: np.ndarray | None, t: np.ndarray, noise: str, n_items: int
) -> np.ndarray:
    """Maximum-likelihood theta of each LF from labeled rows (closed form)."""
    D = (np.abs(S).sum(axis=(0, 2)) - np.einsum("rap,rp->a", S, t)) / 2
    if noise == "mallows":
        return np.asarray(theta_from_disagreements(D, n_items, k_histogram(k, n_items)))
    ordered = np.abs(S).sum(axis=(0, 2))
    eps = np.clip((D + 0.5) / (ordered + 1.0), 1e-6, 0.5)  # add-half smoothing
    return theta_from_rate(eps, n_items, None)


def _dev_params(
    votes: PairVotes, Y: np.ndarray, noise: str, n_items: int
) -> tuple[np.ndarray, np.ndarray]:
    """Maximum-likelihood (theta, gap slope) of each LF from labeled rows."""
    S, k, pos = votes
    m = S.shape[1]
    t = pair_signs(Y)
    if noise != "position":
        return _dev_theta(S, k, t, noise, n_items), np.zeros(m)
    cells = GapCells(
        S.transpose(0, 2, 1).reshape(-1, m).astype(np.float32),
        gap_features(pos).transpose(0, 2, 1).reshape(-1, m),
        n_items,
    )
    hit = cells.agreements(t.reshape(-1))
    return fit_gap_curves(cells.levels, hit, cells.total, np.zeros(m), np.zeros(m))


def choose_on_dev(
    votes: PairVotes,
    Y_dev: Any,
    *,
    unsupervised: tuple[np.ndarray, np.ndarray],
    share: np.ndarray,
    decode: Decoder,
    noise: str,
    n_items: int,
    seed: Any,
) -> RankingDevChoice:
    """The candidate of least mean Kendall distance on the labeled rows.

    Parameters
    ----------
    votes : PairVotes
        The labeled rows' votes.
    Y_dev : array-like of int of shape (n_dev, n_items)
        Their true orderings.
    unsupervised : (theta, gap slope)
        The unsupervised estimates, each of shape (n_lfs,).
    share : ndarray of shape (n_lfs,)
        Each LF's share of the source its group shares (1 alone).
    decode : callable
        ``decode(votes, theta, gap_slope)``: the weighted Kemeny orderings.
    noise : str
        The fitted noise model (``"position"``, ``"mallows"`` or ``"pairwise"``).
    n_items : int
    seed : None, int or numpy.random.Generator
        Draws the folds.

    Returns
    -------
    RankingDevChoice
    """
    S = votes.S
    m = unsupervised[0].shape[0]
    Y = check_orderings(Y_dev, n_items, name="Y_dev")
    if S.shape[0] != Y.shape[0] or S.shape[1] != m:
        raise ValueError(
            f"V_dev has shape {S.shape[:2]} (rows, LFs) and Y_dev {Y.shape[0]} rows; "
            f"expected matching rows and {m} LFs."
        )
    n_dev = Y.shape[0]
    if n_dev == 0:
        raise ValueError(
            "V_dev and Y_dev have no rows: pass at least one labeled row, or fit "
            "without V_dev and Y_dev."
        )
    votes = votes._replace(S=S.astype(np.float32))
    dev_params = _dev_params(votes, Y, noise, n_items)
    mean = float(np.mean(dev_params[0]))
    scale = mean if mean > 0 else 1.0
    flat = np.zeros(m)
    candidates: dict[str, tuple[np.ndarray, np.ndarray]] = {
        "label model": unsupervised,
        "equal weights": (np.full(m, scale), flat),
    }
    if noise == "position":
        # A weight equal to the pair's gap in the vote: the Borda count.
        candidates["Borda count"] = (
            np.full(m, scale),
            np.full(m, scale * (n_items - 1)),
        )
    for a in range(m):
        w = np.full(m, SINGLE_LF_TIE_WEIGHT * scale)
        w[a] = scale
        candidates[f"LF {a} first"] = (w, flat)
    errors = {
        name: kendall_tau_distance(decode(votes, *params), Y)
        for name, params in candidates.items()
    }
    # Weights from the labeled rows: scored on held-out folds only.
    scales = {"dev weights": np.ones(m)}
    if np.any(share < 1):
        scales["dev weights, sources once"] = np.asarray(share, dtype=np.float64)
    folds = check_seed(seed).permutation(n_dev) % min(DEV_FOLDS, n_dev)
    cv = {name: np.empty(n_dev) for name in scales}
    for f in np.unique(folds):
        held = folds == f
        theta, slope = _dev_params(votes.take(~held), Y[~held], noise, n_items)
        for name, c in scales.items():
            cv[name][held] = kendall_tau_distance(
                decode(votes.take(held), theta * c, slope * c), Y[held]
            )
    for name, c in scales.items():
        errors[name] = cv[name]
        candidates[name] = (dev_params[0] * c, dev_params[1] * c)
    base = errors["label model"]
    se = {c: paired_se(e - base) if n_dev > 1 else np.inf for c, e in errors.items()}
    scores = pd.DataFrame(
        {
            "score": {c: float(e.mean()) for c, e in errors.items()},
            "se_vs_label_model": se,
        }
    )
    scores.index.name = "candidate"
    names = list(errors)  # "label model" first
    best = names[
        keep_unless_clear_win(
            names,
            scores.loc[names, "score"].to_numpy(),
            [se[c] for c in names],
            "mean Kendall distance",
            stacklevel=4,  # the caller of RankingLabelModel.fit
        )
    ]
    theta = np.asarray(candidates[best][0], dtype=np.float64).copy()
    slope = np.asarray(candidates[best][1], dtype=np.float64).copy()
    # How often the pseudolabels are right, measured where some LF votes.
    z = pair_signs(decode(votes, theta, slope))
    voted = np.any(S != 0, axis=1)
    accuracy = float(np.mean((z * pair_signs(Y) > 0)[voted])) if voted.any() else None
    return RankingDevChoice(best, theta, slope, scores, accuracy)
