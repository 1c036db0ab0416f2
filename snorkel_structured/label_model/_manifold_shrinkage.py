"""Weight shrinkage of ManifoldLabelModel (declared dependencies: ``_dependency_groups``)."""

from __future__ import annotations

import numpy as np

__all__ = ["eb_shrink"]


def eb_shrink(
    log_e: np.ndarray, var: np.ndarray, side_var: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Empirical-Bayes shrinkage of log E d^2 towards a common value.

    Normal-normal model: ``g_a ~ N(mu, tau^2 + v_a)`` with ``v_a`` the sampling variance
    of ``g_a = log e_a``. ``tau^2`` (the real spread of the LFs' qualities) is the
    fixed point of the Morris moment equation; each LF keeps the fraction
    ``1 - kappa_a = tau^2 / (tau^2 + v_a)`` of its deviation. No evidence of a spread
    (``tau^2 = 0``) means equal weights, so estimation noise cannot make the weighted
    mean worse than the unweighted one. An LF with infinite variance (at the edge of
    the family's range) is shrunk fully; with no variance at all (the UWS baseline)
    nothing is shrunk.

    ``side_var`` (n_lfs, 2), when given, is the variance below and above ``g_a``:
    near the family's noiseless end an LF's log E d^2 is far less certain downwards
    (it may be better still) than upwards. ``v_a`` is then the side that faces
    ``mu``, the way shrinkage moves it: a precise LF is not pulled to the mean by
    the doubt that it is even better. And no LF moves more than one standard
    deviation (of that side) from its estimate, Efron and Morris's limited
    translation: a dominant LF is an outlier of the normal prior, which would
    otherwise pull it to the others' level (a Sphere(2) LF at E d^2 0.09 among four
    near 1, 100 rows: squared error 0.23 against 0.086 unshrunk; 0.108 so).

    Last, the shrunk values keep the estimates' order (ties allowed): an LF whose
    estimate is less certain may be pulled to the others' level, not past an LF
    estimated noisier (pooled, weighted by precision, where they would cross).

    Returns the shrunk log E d^2 and each LF's kappa, the fraction of its deviation
    from ``mu`` removed.
    """
    var = np.where(np.isfinite(var), np.maximum(var, 0.0), np.inf)
    if side_var is None:
        side_var = np.stack([var, var], axis=1)
    side_var = np.where(np.isfinite(side_var), np.maximum(side_var, 0.0), np.inf)
    fin = np.isfinite(side_var).all(axis=1)
    if not fin.any() or np.all(side_var == 0):
        return log_e, np.zeros_like(log_e)
    g, sides = log_e[fin], side_var[fin]

    def facing(values: np.ndarray, v: np.ndarray, mu: float) -> np.ndarray:
        # above mu shrinkage moves an estimate down: the variance below it counts
        return np.where(values > mu, v[:, 0], v[:, 1])

    tau2 = float(np.var(g)) if g.size > 1 else 0.0
    mu = float(np.mean(g))
    for _ in range(200):
        v = facing(g, sides, mu)
        w = 1.0 / np.maximum(v + tau2, 1e-300)
        mu = float(np.sum(w * g) / np.sum(w))
        v = facing(g, sides, mu)
        w = 1.0 / np.maximum(v + tau2, 1e-300)
        new = max(0.0, float(np.sum(w * ((g - mu) ** 2 - v)) / np.sum(w)))
        if g.size < 2:
            new = 0.0
        if abs(new - tau2) <= 1e-12 * max(1.0, tau2):
            tau2 = new
            break
        tau2 = new
    v = facing(g, sides, mu)
    w = 1.0 / np.maximum(v + tau2, 1e-300)
    mu = float(np.sum(w * g) / np.sum(w))
    v_all = facing(log_e, side_var, mu)
    with np.errstate(invalid="ignore", divide="ignore"):
        kappa = np.where(np.isfinite(v_all), v_all / (v_all + tau2), 1.0)
    kappa = np.where(np.isnan(kappa), 0.0, kappa)  # var = tau2 = 0: exact, keep it
    shrunk = mu + (1.0 - kappa) * (log_e - mu)
    shrunk = np.clip(
        shrunk, log_e - np.sqrt(side_var[:, 0]), log_e + np.sqrt(side_var[:, 1])
    )
    shrunk = _keep_order(log_e, shrunk, 1.0 / np.maximum(v_all + tau2, 1e-300))
    dev = log_e - mu
    with np.errstate(invalid="ignore", divide="ignore"):
        kappa = np.where(dev != 0, 1.0 - (shrunk - mu) / dev, kappa)
    return shrunk, kappa


def _keep_order(raw: np.ndarray, values: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """``values`` made nondecreasing in the order of ``raw``: the weighted least-squares
    fit under that order (pool adjacent violators; a loop over LFs, not rows)."""
    means: list[float] = []
    weights: list[float] = []
    sizes: list[int] = []
    order = np.argsort(raw, kind="stable")
    for i in order:
        means.append(float(values[i]))
        weights.append(max(float(weight[i]), 1e-300))
        sizes.append(1)
        while len(means) > 1 and means[-2] > means[-1]:
            w = weights[-2] + weights[-1]
            means[-2:] = [(means[-2] * weights[-2] + means[-1] * weights[-1]) / w]
            weights[-2:] = [w]
            sizes[-2:] = [sizes[-2] + sizes[-1]]
    out = np.empty_like(values)
    out[order] = np.repeat(means, sizes)
    return out
