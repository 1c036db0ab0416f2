"""The paper's own plotted values, read off the figures of its Section 6 (Experiments)."""

from __future__ import annotations

# Ranking recovery: median |E d^2 - estimate| per LF, by n (LF1, LF2, LF3).
RANKING_RECOVERY_TENSOR = {
    1_000: (0.63, 0.14, 0.39),
    10_000: (0.17, 0.10, 0.08),
    100_000: (0.036, 0.038, 0.035),
    1_000_000: (0.008, 0.007, 0.011),
}
# UWS as the paper ran it: flat in n.
RANKING_RECOVERY_UWS = (0.60, 0.10, 0.22)

# Label model with theta = [0, 0, 1], n = 200..2000 (accuracy, exact permutation match).
LABEL_MODEL_ACCURACY = {
    "paper label model": 0.73,
    "UWS": 0.67,
    "likelier center": 0.80,
    "exact posterior": 0.985,
}

# End model (logistic regression on pseudolabels) at n = 2000.
END_MODEL_ACCURACY_2000 = 0.884

# Hyperbolic (dim 5, three LFs, tangent variance ~ U(0, 5)): median |theta_1 - estimate|.
HYPERBOLIC = {100: 0.16, 1_000: 0.076, 10_000: 0.022, 100_000: 0.019, 1_000_000: 0.021}
