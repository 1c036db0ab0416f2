"""Synthetic manifold-valued weak supervision: LF outputs around true labels.

Self-contained generators for the manifold experiments (paper section 5 and the
hyperbolic figure); to be folded into ``snorkel_structured.synthetic``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from snorkel_structured._validation import check_points, check_scalar, check_seed
from snorkel_structured.noise.manifold import make_noise
from snorkel_structured.spaces.manifolds import Hyperbolic

__all__ = ["ManifoldData", "make_manifold_data"]


@dataclass(frozen=True)
class ManifoldData:
    """Synthetic LF outputs and the truth that generated them.

    Attributes
    ----------
    X : ndarray of shape (n_samples, n_lfs, ambient_dim)
        LF outputs; rows of NaN are abstains.
    Y : ndarray of shape (n_samples, ambient_dim)
        True labels.
    noise_scale : ndarray of shape (n_lfs,)
        True parameters of the noise family.
    expected_sq_dist : ndarray of shape (n_lfs,)
        True ``E d^2(lambda_a, y)``.
    noise : WrappedNormal or RiemannianGaussian
    """

    X: np.ndarray
    Y: np.ndarray
    noise_scale: np.ndarray
    expected_sq_dist: np.ndarray
    noise: Any


def make_manifold_data(
    n_samples: int,
    *,
    space: Any,
    noise_scale: Any,
    noise: str = "wrapped_normal",
    abstain: float = 0.0,
    y: Any = "random",
    seed: Any = None,
) -> ManifoldData:
    """Draw true labels and conditionally independent, isotropic LF outputs.

    Parameters
    ----------
    n_samples : int
    space : Euclidean, Sphere or Hyperbolic
    noise_scale : array-like of shape (n_lfs,)
        Each LF's parameter of the family (``sigma2`` or ``theta``).
    noise : {"wrapped_normal", "riemannian_gaussian"}, default="wrapped_normal"
    abstain : float in [0, 1), default=0.0
        Probability that an LF abstains on a row (independently).
    y : "random", None or array-like of shape (ambient_dim,), default="random"
        ``"random"``: ``space.random_point`` per row; ``None``: every row's label is
        ``space.origin`` (the paper's hyperbolic setting); a point: that fixed label.
    seed : None, int or numpy.random.Generator, default=None

    Returns
    -------
    data : ManifoldData

    Raises
    ------
    ValueError
        On hyperbolic space, if a label or draw lies farther than
        ``Hyperbolic.max_radius`` from the origin (float64 coordinates cannot resolve
        it); place ``y`` nearer the origin. Also for a noise scale so large that one
        of the draws would pass ``max_radius`` from its label with probability above
        0.05; the message names the noisiest scale that can be sampled (see the
        noise family's ``sample``).

    Examples
    --------
    >>> from snorkel_structured.spaces.manifolds import Sphere
    >>> d = make_manifold_data(5, space=Sphere(2), noise_scale=[0.1, 0.2, 0.3], seed=0)
    >>> d.X.shape, d.Y.shape
    ((5, 3, 3), (5, 3))
    """
    n_samples = check_scalar(n_samples, "n_samples", kind="int", low=1)
    abstain = check_scalar(abstain, "abstain", low=0.0, high=1.0, high_inclusive=False)
    rng = check_seed(seed)
    family = make_noise(noise, space)
    scale = np.asarray(noise_scale, dtype=np.float64)
    if scale.ndim != 1 or scale.size == 0:
        raise ValueError(
            f"noise_scale must be a 1-D array with one parameter per LF; got shape "
            f"{scale.shape}."
        )
    scale = family._check_scale(scale, "noise_scale")
    if isinstance(y, str) and y == "random":
        Y = space.random_point(n_samples, seed=rng)
    elif y is None:
        Y = np.broadcast_to(space.origin, (n_samples, space.ambient_dim)).copy()
    else:
        point = check_points(y, space, name="y")
        if point.shape != (space.ambient_dim,):
            raise ValueError(
                f"y must be 'random', None or one point of shape ({space.ambient_dim},); "
                f"got shape {point.shape}."
            )
        Y = np.broadcast_to(point, (n_samples, space.ambient_dim)).copy()
    m = scale.size
    if isinstance(space, Hyperbolic):
        # Draw around the origin and move the draws to Y by the translation taking the
        # origin to Y (an isometry: same law, by isotropy). Drawing at Y directly goes
        # through ambient tangent vectors, whose coordinates are too coarse far out.
        base = np.broadcast_to(space.origin, (n_samples, m, space.ambient_dim))
        X = space.translate(family.sample(base, scale, seed=rng), Y[:, None, :])
    else:
        base = np.broadcast_to(Y[:, None, :], (n_samples, m, space.ambient_dim))
        X = family.sample(base, scale, seed=rng)
    if abstain > 0:
        X[rng.random((n_samples, m)) < abstain] = np.nan
    return ManifoldData(
        X=X,
        Y=Y,
        noise_scale=scale,
        expected_sq_dist=np.asarray(family.expected_sq_dist(scale), dtype=np.float64),
        noise=family,
    )
