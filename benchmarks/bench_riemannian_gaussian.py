"""Pair squared-distance estimator with the Riemannian Gaussian: before/after (issue 14.19).

"before" swaps in the reference implementations kept in ``noise.manifold`` (the radial
rule one parameter at a time and not memoized: ``_reference_pair_expected_sq_dist`` for
the pair map, a per-parameter loop for the 1-D moments), "after" is the library as is.
The pair fit then takes finite differences (two extra maps per step) instead of the
analytic Jacobian. The "before" column is still faster than the code before the change,
whose mode search was 4x slower and whose fit evaluated the map three times per step.
Median of 5 runs per case; also the largest relative difference of the pair map and of
the moments between the two paths on a grid of parameters.

Run: ``python benchmarks/bench_riemannian_gaussian.py``
"""

from __future__ import annotations

import contextlib
import statistics
import time
import warnings

import numpy as np

from snorkel_structured import Hyperbolic, ManifoldLabelModel, Sphere
from snorkel_structured.estimators._manifold_stats import ManifoldStats
from snorkel_structured.estimators.triplet import pair_sq_dist_estimate
from snorkel_structured.noise import manifold as nm
from snorkel_structured.synthetic_manifold import make_manifold_data


@contextlib.contextmanager
def reference_path():
    """Patch the Riemannian Gaussian back to the one-parameter-at-a-time path."""
    cls = nm.RiemannianGaussian
    names = (
        "pair_expected_sq_dist",
        "_radial_rules",
        "_pair_expected_sq_dist_and_grad",
    )
    saved = {k: cls.__dict__.get(k) for k in names}

    def pair(self, a, b):
        return nm._reference_pair_expected_sq_dist(self, a, b)

    def rules(self, scales, n_nodes=nm._N_LEGENDRE):
        # one parameter at a time, as the moments were computed before
        one = [self._compute_radial_rules(np.array([v]), n_nodes) for v in scales]
        return np.vstack([r for r, _ in one]), np.vstack([w for _, w in one])

    cls.pair_expected_sq_dist, cls._radial_rules = pair, rules
    cls._pair_expected_sq_dist_and_grad = None  # the fit falls back to differences
    try:
        yield
    finally:
        for k, v in saved.items():
            setattr(cls, k, v)


def median_time(fn, repeats=5):
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def cases():
    for space in (Hyperbolic(2), Sphere(2)):
        d = make_manifold_data(
            2,
            space=space,
            noise_scale=[5.0, 2.0, 1.0, 3.0],
            noise="riemannian_gaussian",
            seed=0,
        )
        stats = ManifoldStats.from_outputs(d.X, space)
        yield (
            f"pair_sq_dist_estimate {space!r} 2x4",
            lambda s=stats, n=d.noise: pair_sq_dist_estimate(s, n, min_overlap=1),
        )
        yield (
            f"ManifoldLabelModel.fit(X, X_dev, Y_dev) {space!r} 2x4",
            lambda s=space, d=d: ManifoldLabelModel(
                s, estimator="pair_sq_dist", noise="riemannian_gaussian", min_overlap=1
            ).fit(d.X, X_dev=d.X, Y_dev=d.Y),
        )


def accuracy():
    rng = np.random.default_rng(0)
    rows = []
    for space in (Hyperbolic(2), Hyperbolic(5), Sphere(2), Sphere(5)):
        rg = nm.RiemannianGaussian(space)
        theta = np.exp(rng.uniform(np.log(1e-2), np.log(1e5), (2, 200)))
        fast = rg.pair_expected_sq_dist(*theta)
        ref = nm._reference_pair_expected_sq_dist(rg, *theta)
        m_fast = rg.expected_sq_dist(theta[0])
        m_ref = np.array([rg.expectation(np.square, v) for v in theta[0]])
        rows.append(
            (
                repr(space),
                np.max(np.abs(fast / ref - 1)),
                np.max(np.abs(m_fast / m_ref - 1)),
            )
        )
    return rows


def main():
    warnings.simplefilter("ignore")
    print(f"{'case':<60} {'before (s)':>10} {'after (s)':>10}")
    for name, fn in cases():
        with reference_path():
            before = median_time(fn)
        after = median_time(fn)
        print(f"{name:<60} {before:>10.3f} {after:>10.3f}")
    print()
    print(f"{'space':<20} {'max rel diff pair map':>22} {'max rel diff E d^2':>20}")
    for space, dp, dm in accuracy():
        print(f"{space:<20} {dp:>22.1e} {dm:>20.1e}")


if __name__ == "__main__":
    main()
