"""What a fitted ManifoldLabelModel reports about its pseudolabels: spread and scores.

Kept out of ``manifold.py`` (the fitting) so each module holds one idea:

- :func:`posterior_spread`: the expected squared distance from a row's pseudolabel to
  its true label under the fitted noise model, given which LFs voted (the manifold
  analogue of how peaked ``predict_proba`` is for finite labels);
- :func:`score_points`: Snorkel-style ``score`` with the metrics of manifold labels.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from snorkel_structured import _warnings

__all__ = ["MANIFOLD_METRICS", "posterior_spread", "score_points"]

MANIFOLD_METRICS = ("mean_distance", "mean_sq_distance", "coverage")


def posterior_spread(
    row_weights: np.ndarray, expected_sq_dist: np.ndarray, groups: np.ndarray
) -> np.ndarray:
    """Expected ``d^2(pseudolabel, y)`` of weighted Frechet means, per row.

    Parameters
    ----------
    row_weights : ndarray of shape (n_samples, n_lfs)
        The weights each row's Frechet mean gave its votes (0 where an LF abstained).
    expected_sq_dist : ndarray of shape (n_lfs,)
        ``E d^2(lambda_a, y)`` of each LF.
    groups : ndarray of int of shape (n_lfs,)
        Dependency group of each LF.

    Returns
    -------
    spread : ndarray of shape (n_samples,)
        NaN where no LF voted.

    Notes
    -----
    In normal coordinates at ``y`` the weighted mean is ``sum_a w_a e_a / sum_a w_a``
    with independent zero-mean errors ``e_a`` of ``E|e_a|^2 = E d^2_a``, so its
    expected squared error is ``sum_a w_a^2 E d^2_a / (sum_a w_a)^2``: exact on
    ``Euclidean`` spaces (any noise law), a first-order approximation on curved ones
    (good while ``E d^2`` is small against the squared curvature radius). With
    inverse-variance weights it is ``1 / sum_a (1 / E d^2_a)``, the posterior
    variance of a flat prior under Gaussian noise. LFs of one dependency group are
    taken as perfectly correlated (their errors add as standard deviations, not as
    variances), the cautious reading of a declared dependency.
    """
    w = np.where(np.isfinite(row_weights), row_weights, 0.0)
    sd = np.sqrt(np.maximum(expected_sq_dist, 0.0))
    n_groups = int(groups.max()) + 1 if groups.size else 0
    one_hot = np.zeros((groups.size, n_groups))
    one_hot[np.arange(groups.size), groups] = 1.0
    group_sd = (w * sd[None, :]) @ one_hot  # (n, n_groups): within a group, sds add
    total = w.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        spread = (group_sd**2).sum(axis=1) / total**2
    return np.where(total > 0, spread, np.nan)


def score_points(
    space: Any,
    pred: np.ndarray,
    Y: np.ndarray,
    metrics: list[str] | None,
) -> dict[str, float]:
    """Snorkel's ``score`` conventions for manifold pseudolabels.

    ``coverage``: the fraction of rows with a pseudolabel (some LF voted). Other
    metrics: over rows with a pseudolabel and a known true label (not a row of NaN).
    Nothing scorable gives NaN and a ``UserWarning`` (Snorkel's scorer would raise on
    empty arrays). Unknown names raise Snorkel's "Unrecognized metric: ...".
    """
    metrics = [] if metrics is None else list(metrics)
    for name in metrics:
        if name not in MANIFOLD_METRICS:
            raise ValueError(
                f"Unrecognized metric: {name}. ManifoldLabelModel.score knows "
                f"{list(MANIFOLD_METRICS)}."
            )
    labeled = ~np.isnan(pred).any(axis=1)
    keep = labeled & ~np.isnan(Y).any(axis=1)
    if not keep.any() and any(m != "coverage" for m in metrics):
        _warnings.warn(
            "No row has both a pseudolabel and a known true label (every LF abstains, "
            "or Y is NaN, on every row): metrics other than coverage are NaN.",
            UserWarning,
            stacklevel=3,
        )
    d = space.dist(pred[keep], Y[keep]) if keep.any() else np.empty(0)
    out: dict[str, float] = {}
    for name in metrics:
        if name == "coverage":
            out[name] = float(labeled.mean())
        elif not keep.any():
            out[name] = float("nan")
        elif name == "mean_distance":
            out[name] = float(np.mean(d))
        else:
            out[name] = float(np.mean(d * d))
    return out
