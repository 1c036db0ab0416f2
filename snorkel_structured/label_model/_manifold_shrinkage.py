"""Weight shrinkage of ManifoldLabelModel (declared dependencies: ``_dependency_groups``)."""

from __future__ import annotations

import numpy as np

__all__ = ["eb_shrink"]


def eb_shrink(log_e: np.ndarray, var: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Empirical-Bayes shrinkage of log E d^2 towards a common value.

    Normal-normal model: ``g_a ~ N(mu, tau^2 + v_a)`` with ``v_a`` the sampling variance
    of ``g_a = log e_a``. ``tau^2`` (the real spread of the LFs' qualities) is the
    fixed point of the Morris moment equation; each LF keeps the fraction
    ``1 - kappa_a = tau^2 / (tau^2 + v_a)`` of its deviation. No evidence of a spread
    (``tau^2 = 0``) means equal weights, so estimation noise cannot make the weighted
    mean worse than the unweighted one. An LF with infinite variance (at the edge of
    the family's range) is shrunk fully; with no variance at all (the UWS baseline)
    nothing is shrunk.
    """
    var = np.where(np.isfinite(var), np.maximum(var, 0.0), np.inf)
    fin = np.isfinite(var)
    if not fin.any() or np.all(var == 0):
        return log_e, np.zeros_like(log_e)
    g, v = log_e[fin], var[fin]
    tau2 = float(np.var(g)) if g.size > 1 else 0.0
    for _ in range(200):
        w = 1.0 / np.maximum(v + tau2, 1e-300)
        mu = float(np.sum(w * g) / np.sum(w))
        new = max(0.0, float(np.sum(w * ((g - mu) ** 2 - v)) / np.sum(w)))
        if g.size < 2:
            new = 0.0
        if abs(new - tau2) <= 1e-12 * max(1.0, tau2):
            tau2 = new
            break
        tau2 = new
    w = 1.0 / np.maximum(v + tau2, 1e-300)
    mu = float(np.sum(w * g) / np.sum(w))
    with np.errstate(invalid="ignore", divide="ignore"):
        kappa = np.where(fin, var / (var + tau2), 1.0)
    kappa = np.where(np.isnan(kappa), 0.0, kappa)  # var = tau2 = 0: exact, keep it
    return mu + (1.0 - kappa) * (log_e - mu), kappa
