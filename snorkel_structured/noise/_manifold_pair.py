"""The pair map of the manifold noise families (a mixin): E d^2(lambda_a, lambda_b).

``PairMapMethods.pair_expected_sq_dist`` is the exact expected squared distance
between two independent LFs' votes around the same label: a product Gauss rule over
the two radii and the angle between the directions, via the law of cosines, with
radial rules on the bulk of each density (split on the sphere where ``d^2`` has a
kink, ``_split_rules``) and the angle rule and kernels of ``_manifold_rules``;
``_pair_map`` also gives its derivatives in the log parameters. The classes are in
:mod:`snorkel_structured.noise.manifold`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from snorkel_structured.noise._manifold_rules import (
    _WINDOW_SD,
    _angle_integrated_sq_dist,
    _angle_nodes,
    _legendre,
)
from snorkel_structured.spaces.manifolds import Sphere

__all__ = ["PairMapMethods"]

# Radial nodes of the pair map (accuracy in pair_expected_sq_dist), for r_a and r_b;
# the angle's are in _manifold_rules (see _angle_nodes). On S^d r_b's rule is split in
# two halves (_split_rules).
_N_RADIAL = 28
_N_RADIAL_SPHERE = (24, 32)  # (r_a, r_b): r_b's rule carries the kink
# Where the density is above e^(-4^2/2) of its mode: a kink of d^2 there needs a split
# rule (see _split_rules).
_CORE_SD = 4.0
_PAIR_CHUNK = 64  # pairs per block of the pair map: (64, 40, 40, 24) floats = 20 MB


class PairMapMethods:
    """The pair map ``pair_expected_sq_dist`` of the manifold noise families and its
    radial rules (they provide ``space``, ``_check_scale``, ``_less_noise``,
    ``_log_density``, ``_bulk_window``, ``_log_rules`` and ``_grad_factor``)."""

    # True where the rules on the sphere are for the folded radius (the wrapped
    # normal): not an exponential family in r^2, so _pair_map has no derivatives there
    _folded_sphere_rules = False

    def pair_expected_sq_dist(self, scale_a: Any, scale_b: Any) -> np.ndarray:
        """E d^2(lambda_a, lambda_b) for independent draws around a common ``y``.

        By isotropy the law of ``d(lambda_a, lambda_b)`` depends only on the two
        parameters: with radii ``r_a, r_b`` (distances to ``y``) and ``phi`` the angle
        between independent uniform directions (density proportional to
        ``sin^(dim - 2) phi``), the law of cosines gives the distance. The 3-D
        expectation is a product Gauss rule, vectorized over pairs: Gauss-Legendre
        rules on the bulk of each radial density (one batched rule per distinct
        parameter) and a graded rule in ``phi`` (:func:`_angle_nodes`), with one
        angle-integrated kernel per block of pairs (:func:`_angle_integrated_sq_dist`).
        On the sphere ``d^2`` has a kink where ``r_a + r_b = pi`` (antipodal points),
        so there the ``r_b`` rule is split at ``pi - r_a`` for each node ``r_a``.
        Accurate to about 1e-8 relative or better (H^d, S^d for dim >= 2, both
        families). :func:`_reference_pair_expected_sq_dist` is the same rule
        evaluated one pair at a time (kept to check this one against).

        Parameters
        ----------
        scale_a, scale_b : array-like of the same shape (...)

        Returns
        -------
        pair_sq_dist : ndarray of shape (...)
        """
        return self._pair_map(scale_a, scale_b, grad=False)[0]

    def _pair_map(self, scale_a: Any, scale_b: Any, *, grad: bool):
        """(pair map, d/d log scale_a, d/d log scale_b); the derivatives None without grad.

        The derivatives use that the radial law is an exponential family in ``r^2``
        (density ``exp(-theta r^2)`` or ``exp(-r^2 / (2 sigma2))`` times a
        parameter-free volume factor): ``d E f(r) / d log s = c(s) Cov(f(r), r^2)``
        with ``c = -theta`` or ``1 / (2 sigma2)``, evaluated with the map's own
        quadrature at no extra cost. (Not for the wrapped normal on the sphere, whose
        rules are for the folded radius.)
        """
        sa, sb = np.broadcast_arrays(
            self._check_scale(scale_a), self._check_scale(scale_b)
        )
        sphere = isinstance(self.space, Sphere)
        if grad and sphere and self._folded_sphere_rules:
            raise NotImplementedError(
                "the wrapped normal's pair rules on the sphere are for the folded "
                "radius, which is not an exponential family in r^2; use differences."
            )
        t, u, wt = _angle_nodes(self.space.dim, sphere)
        flat_a, flat_b = sa.ravel(), sb.ravel()
        # one batched rule per distinct parameter (an LF's parameter enters many pairs)
        uniq, inv = np.unique(np.r_[flat_a, flat_b], return_inverse=True)
        R, W = self._pair_radial_rules(uniq)
        # nodes of negligible weight (the last of the far tail) change the sums by
        # less than 1e-13 relative
        keep = (W > 1e-16 * W.max(axis=1, keepdims=True)).any(axis=0)
        R, W = R[:, keep], W[:, keep]
        ia, ib = inv[: flat_a.size], inv[flat_a.size :]
        swap = np.zeros(flat_a.size, dtype=bool)
        if sphere:
            lo, hi = self._bulk_window(uniq)
            # d^2 is symmetric: the noisier law takes the split rule. Its kink moves
            # with r_a; unsplit, a wide law of r_a against a narrow r_b near 0 sees a
            # near-kink of the r_b average at r_a ~ pi (1e-7 off at theta = (1e-3,
            # 1e4) on S^2). The order flips only where the two laws are equal, so the
            # map stays continuous.
            swap = self._less_noise * (flat_a - flat_b) < 0
            ia, ib = np.where(swap, ib, ia), np.where(swap, ia, ib)
        out, ga, gb = (
            np.empty(flat_a.size),
            np.empty(flat_a.size),
            np.empty(flat_a.size),
        )
        for start in range(0, flat_a.size, _PAIR_CHUNK):  # bounds the 4-D temporary
            sl = slice(start, start + _PAIR_CHUNK)
            ra, wa = R[ia[sl]], W[ia[sl]]
            if sphere:  # r_b nodes per node of r_a: (P, N, M)
                jb = ib[sl]
                rb, wb = self._split_rules(uniq[jb], lo[jb], hi[jb], np.pi - ra)
            else:  # one r_b rule per pair: (P, 1, M)
                rb, wb = R[ib[sl]][:, None, :], W[ib[sl]][:, None, :]
            K = _angle_integrated_sq_dist(self.space, ra, rb, t, wt, u)
            if sphere:
                kb = np.einsum("pij,pij->pi", K, wb)  # E over r_b at each node of r_a
            else:
                rb, wb = rb[:, 0, :], wb[:, 0, :]
                kb = np.einsum("pij,pj->pi", K, wb)
            out[sl] = np.einsum("pi,pi->p", wa, kb)
            if grad:
                ra2, rb2 = ra**2, rb**2
                ga[sl] = np.einsum("pi,pi,pi->p", wa, kb, ra2) - out[sl] * np.einsum(
                    "pi,pi->p", wa, ra2
                )
                if sphere:  # E[K r_b^2] - E[K] E[r_b^2], r_b's rule per node of r_a
                    gb[sl] = np.einsum("pi,pij,pij->p", wa, wb * rb2, K) - out[
                        sl
                    ] * np.einsum("pi,pij,pij->p", wa, wb, rb2)
                else:
                    ka = np.einsum("pi,pij->pj", wa, K)
                    gb[sl] = np.einsum("pj,pj,pj->p", wb, ka, rb2) - out[
                        sl
                    ] * np.einsum("pj,pj->p", wb, rb2)
        if not grad:
            return out.reshape(sa.shape), None, None
        ga, gb = np.where(swap, gb, ga), np.where(swap, ga, gb)
        ga, gb = ga * self._grad_factor(flat_a), gb * self._grad_factor(flat_b)
        return out.reshape(sa.shape), ga.reshape(sa.shape), gb.reshape(sa.shape)

    @property
    def _n_radial(self) -> tuple[int, int]:
        """Radial nodes of the pair map for ``(r_a, r_b)``."""
        if isinstance(self.space, Sphere):
            return _N_RADIAL_SPHERE
        return (_N_RADIAL, _N_RADIAL)

    def _pair_radial_rules(self, scales: np.ndarray):
        """Normalized radial rules of the pair map, (n_scales, n_radial)."""
        lo, hi = self._bulk_window(scales)
        r, logw = self._log_rules(scales, lo, hi, self._n_radial[0])
        w = np.exp(logw - logw.max(axis=1, keepdims=True))
        return r, w / w.sum(axis=1, keepdims=True)

    def _split_rules(self, scale, lo, hi, cut):
        """Rules for ``r_b`` split at ``cut``: shape ``cut.shape + (n_radial[1],)``.

        ``scale``, ``lo``, ``hi`` of shape (P,) (the law of ``r_b`` and its bulk),
        ``cut`` of shape (P, N): Gauss rules on ``[lo, cut]`` and ``[cut, hi]``, each
        row normalized. On the sphere the angle-integrated ``d^2`` behaves like
        ``x^2 log|x|`` in ``x = r_a + r_b - pi`` (S^2; ``|x|^3`` on S^3): a Gauss
        rule across the kink converges slowly (40 nodes: 1.4e-5 relative on S^2),
        one with the kink at an end only like ``n^-6`` (2e-7 with 20 nodes for a
        wrapped normal near ``sigma2_max``, whose density does not vanish at pi). So
        the longer piece gets 20 of the 32 nodes, graded towards the cut (``r = cut
        + (end - cut) (2 s^2 - s^3)``, Gauss-Legendre in ``s``: ``s^5 log s`` at the
        cut), and the shorter one 12 (Gauss-Legendre): 6e-11 there, 2e-8 at worst.
        Where the cut is outside the core of the density (``_CORE_SD`` sd from the
        mode; the whole bulk on S^1), where the kink costs nothing, the row keeps
        the unsplit rule on ``[lo, hi]``: a piece would not resolve a narrow density
        on the wide side.
        """
        n = self._n_radial[1]
        r_all, lw_all = self._log_rules(scale, lo, hi, n)
        shape = cut.shape + (n,)
        r = np.array(np.broadcast_to(r_all[:, None, :], shape))
        logw = np.array(np.broadcast_to(lw_all[:, None, :], shape))
        # on S^1 the kink is d^2 = min(x, 2 pi - x)^2 itself, not smoothed by an
        # angle average: split wherever it is in the bulk
        core = _CORE_SD if self.space.dim > 1 else _WINDOW_SD
        core_lo, core_hi = self._bulk_window(scale, core)
        inside = (cut > np.maximum(lo, core_lo)[:, None]) & (
            cut < np.minimum(hi, core_hi)[:, None]
        )
        p, i = np.nonzero(inside)
        if p.size:  # only those rows: the densities are most of the cost here
            c, lo, hi, scale = cut[p, i, None], lo[p, None], hi[p, None], scale[p, None]
            n_long = (5 * n) // 8  # on the longer piece, graded towards the cut
            s, w = _legendre(n_long)
            s, w = 0.5 * (s + 1.0), 0.5 * w
            up = c - lo >= hi - c  # the longer piece is [lo, c]
            far = np.where(up, lo, hi)
            # r = c + (far - c) g(s), g = 2 s^2 - s^3: g'(0) = 0 clusters the nodes at
            # the cut, and g' <= 4/3 keeps the rest about as fine as a plain rule
            r1 = c + (far - c) * (2.0 * s * s - s**3)
            with np.errstate(divide="ignore", invalid="ignore"):
                lw1 = np.log(
                    np.abs(far - c) * (4.0 * s - 3.0 * s * s) * w
                ) + self._log_density(r1, scale)
            r2, lw2 = self._log_rules(
                scale[:, 0],
                np.where(up, c, lo)[:, 0],
                np.where(up, hi, c)[:, 0],
                n - n_long,
            )
            r[p, i] = np.concatenate([r1, r2], axis=-1)
            logw[p, i] = np.concatenate(
                [np.where(np.isfinite(lw1), lw1, -np.inf), lw2], axis=-1
            )
        w = np.exp(logw - logw.max(axis=-1, keepdims=True))
        return r, w / w.sum(axis=-1, keepdims=True)

    def _grad_factor(self, scale: np.ndarray) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError
