"""Sampling of the manifold noise families (a mixin): radius x uniform direction.

``SamplingMethods.sample`` draws a radius from the family's radial law
(``_sample_radius``) and a uniform tangent direction, then maps them with ``exp``. On
H^d it first refuses parameters so noisy that a draw would pass
``Hyperbolic.max_radius`` (``_check_radius_tail``, from the family's
``_log_radius_tail``), naming the noisiest parameter it can sample that many times.
The classes are in :mod:`snorkel_structured.noise.manifold`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import optimize

from snorkel_structured._validation import check_seed
from snorkel_structured.spaces.manifolds import Hyperbolic

__all__ = ["SamplingMethods"]

# Largest chance that one of sample's draws passes Hyperbolic.max_radius that it
# accepts up front (see SamplingMethods._check_radius_tail): one call in 20 would
# then raise, naming the parameter, and another seed draws.
_SAMPLE_FAILURE = 0.05


class SamplingMethods:
    """``sample`` of the manifold noise families, with the check of the radius tail on H^d
    (they provide ``space``, ``_check_scale``, ``_less_noise``, ``_sample_radius`` and
    ``_log_radius_tail``)."""

    def _sample_radius(self, scale: np.ndarray, rng) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError

    def sample(self, base_point: Any, scale: Any, *, seed: Any = None) -> np.ndarray:
        """Draw one noisy point around each base point.

        Parameters
        ----------
        base_point : array-like of shape (..., ambient_dim)
            True labels ``y`` on the manifold.
        scale : float or array-like broadcastable to ``base_point.shape[:-1]``
            The family's parameter (``sigma2`` or ``theta``) per draw.
        seed : None, int or numpy.random.Generator, default=None
            A Generator passed in advances.

        Returns
        -------
        point : ndarray of shape (..., ambient_dim)

        Raises
        ------
        ValueError
            On hyperbolic space, for a parameter so noisy that one of the draws
            would lie farther than ``Hyperbolic.max_radius`` (about 31.9) from its
            label with probability above 0.05: float64 coordinates cannot resolve
            such points (``Hyperbolic.exp`` refuses them), so the parameter cannot
            be sampled that many times although its moments are defined. The check
            is made before drawing, so it does not depend on the seed; the message
            gives the noisiest parameter that can be sampled as many times (e.g.
            ``theta >= 0.0372`` for 200,000 draws of
            ``RiemannianGaussian(Hyperbolic(2))``). Below that chance a draw that
            passes ``max_radius`` (a call in 20 at most) raises the same kind of
            error, naming the parameter: draw again with another seed. Also if
            ``base_point`` lies farther than ``max_radius`` from the origin (see
            ``Hyperbolic.exp``).
        """
        rng = check_seed(seed)
        x = np.asarray(base_point, dtype=np.float64)
        if x.shape[-1:] != (self.space.ambient_dim,):
            raise ValueError(
                f"base_point must have shape (..., {self.space.ambient_dim}); got {x.shape}."
            )
        s = np.broadcast_to(self._check_scale(scale), x.shape[:-1])
        space = self.space
        if isinstance(space, Hyperbolic):
            level = _SAMPLE_FAILURE / max(s.size, 1)  # per draw
            self._check_radius_tail(s, space.max_radius, level)
        direction = self.space.random_tangent_vec(x, seed=rng)
        # the norm at x: far out on hyperbolic space only the base point makes it exact
        norm = self.space.norm(direction, x)
        direction = direction / np.where(norm > 0, norm, 1.0)[..., None]
        r = self._sample_radius(s, rng)
        if isinstance(space, Hyperbolic) and np.any(r > space.max_radius):
            # under the level above: still name the parameter, not exp's step
            self._raise_too_noisy(
                s.ravel()[np.argmax(r.ravel())], space.max_radius, level
            )
        return self.space.exp(r[..., None] * direction, x)

    def _log_radius_tail(
        self, scale: np.ndarray, radius: float
    ) -> np.ndarray:  # pragma: no cover
        """log P(r > radius) per parameter of a 1-D array."""
        raise NotImplementedError

    def _check_radius_tail(
        self, scale: np.ndarray, radius: float, level: float
    ) -> None:
        """Refuse parameters whose radii pass ``radius`` with probability > ``level``."""
        if not scale.size:
            return
        # the tail grows with the noise: checking the noisiest parameter is enough
        noisiest = np.min(scale) if self._less_noise > 0 else np.max(scale)
        log_tail = self._log_radius_tail(np.array([noisiest]), radius)
        if log_tail[0] > np.log(level):
            self._raise_too_noisy(noisiest, radius, level)

    def _raise_too_noisy(self, value: float, radius: float, level: float) -> None:
        name = self.parameter_name
        tail = float(np.exp(self._log_radius_tail(np.array([value]), radius)[0]))
        if not tail > level:  # a draw past the check: bad luck, not the law
            raise ValueError(
                f"scale ({name}) = {float(value)!r} drew a radius beyond "
                f"Hyperbolic.max_radius = {radius:.4g} (probability {tail:.2g} per "
                "draw), where float64 coordinates cannot resolve points. Draw again "
                f"with another seed, or use a less noisy {name}."
            )
        # the boundary parameter, by root finding in log(scale) from the bad value
        # towards less noise (larger theta, smaller sigma2)
        step = self._less_noise

        def excess(t: float) -> float:
            lt = self._log_radius_tail(np.array([np.exp(t)]), radius)[0]
            return max(float(lt), -1e3) - np.log(level)

        t0 = float(np.log(value))
        t1 = t0 + step
        while excess(t1) > 0:
            t1 += step
        limit = float(np.exp(optimize.brentq(excess, t0, t1, xtol=1e-6)))
        bound = ">=" if step > 0 else "<="
        raise ValueError(
            f"scale ({name}) = {float(value)!r} is too noisy to sample on "
            f"{self.space!r}: a draw lands farther than Hyperbolic.max_radius = "
            f"{radius:.4g} from its label with probability {tail:.2g} per draw, "
            f"more than {_SAMPLE_FAILURE:g} over the {round(_SAMPLE_FAILURE / level)} "
            "draws, and float64 coordinates cannot resolve points that far. Use "
            f"{name} {bound} {limit:.4g} for {type(self).__name__} on this space and "
            "that many draws; the moments and maps (expected_sq_dist, "
            "pair_expected_sq_dist) are defined for every parameter."
        )
