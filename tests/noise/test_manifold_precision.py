"""Accuracy of the manifold noise maps against brute-force integrals (fuzz report 4).

Items 3, 4 and 10 of the report on ``noise/manifold.py``:

- ``RiemannianGaussian(Hyperbolic).expected_invariant`` (E cosh d) was 18x too low at
  theta = 0.003 on H^2 and NaN at 1e-4 (where the true value overflows);
- ``pair_expected_sq_dist`` was off by ~1e-3 relative on H^2 (7.8e-4 at theta =
  (0.1, 0.1)), ``expected_sq_dist`` by up to 5e-4 at theta <= 1e-5;
- sampling a noisy parameter on H^d raised the space's ``max_radius`` error from
  ``exp`` or not, depending on the seed.

The references are written from the mathematics, not from the library's rules: the
radial densities ``exp(-theta r^2) sinh^(d-1) r`` (``sin`` on S^d) and
``r^(d-1) exp(-r^2 / (2 sigma2))`` integrated by ``scipy.integrate.quad`` (1-D) or by
fine Gauss-Legendre grids in log space; pair distances by the law of cosines
``cosh D = cosh(ra - rb) + 2 sinh ra sinh rb sin^2(phi / 2)`` (``cos D = cos(ra - rb)
- 2 sin ra sin rb sin^2(phi / 2)`` on S^d) with ``phi`` the angle between independent
uniform directions, density proportional to ``sin^(d-2) phi``, integrated on a
geometrically graded composite rule that resolves the log singularity of ``D^2`` at
``phi = 0`` (H^d) and the antipodal kink at ``phi = pi`` (S^d).
"""

import warnings

import numpy as np
import pytest
from scipy import integrate, optimize, special

from snorkel_structured import Hyperbolic, RiemannianGaussian, Sphere, WrappedNormal

# --- brute-force references ----------------------------------------------------------


def _log_sinh(r):
    with np.errstate(divide="ignore"):
        return r + np.log(-np.expm1(-2.0 * r)) - np.log(2.0)


def _log_density(kind, dim, theta):
    """Unnormalized log radial density of the Riemannian Gaussian (``kind`` H or S)."""

    def f(r):
        r = np.asarray(r, dtype=np.float64)
        if dim == 1:
            vol = np.zeros_like(r)
        elif kind == "H":
            vol = (dim - 1) * _log_sinh(r)
        else:
            with np.errstate(divide="ignore", invalid="ignore"):
                vol = (dim - 1) * np.log(np.sin(r))
        return np.where(np.isnan(vol), -np.inf, -theta * r * r + vol)

    return f


def _log_chi(dim, sigma2):
    def f(r):
        with np.errstate(divide="ignore"):
            vol = (dim - 1) * np.log(r) if dim > 1 else 0.0
        return vol - np.asarray(r) ** 2 / (2.0 * sigma2)

    return f


def _peak(logf, cap):
    """Maximizer of a unimodal log integrand on (0, cap), by scipy's bounded search."""
    res = optimize.minimize_scalar(
        lambda r: -float(logf(r)),
        bounds=(0.0, cap),
        method="bounded",
        options={"xatol": 1e-12 * cap},
    )
    return float(res.x)


def _cap(dim, sd):
    """A radius past every peak here: the tilted peaks lie below (dim + 1) sd^2."""
    return (dim + 1) * sd * sd + 100.0 * sd + 10.0


def _log_quad(logf, peak, sd, upper=np.inf):
    """log of ``int_0^upper exp(logf)`` by scipy quad on ``peak +- 40 sd``."""
    top = min(upper, peak + 40.0 * sd)
    lo = max(0.0, peak - 40.0 * sd)
    m = float(logf(peak))
    pts = [p for p in (peak - 3 * sd, peak, peak + 3 * sd) if lo < p < top]
    val = integrate.quad(
        lambda r: float(np.exp(logf(r) - m)) if r > 0 else 0.0,
        lo,
        top,
        points=pts or None,
        limit=400,
        epsabs=0.0,
        epsrel=1e-13,
    )[0]
    return m + np.log(val)


def _log_moment(logf, logh, sd, cap, upper=np.inf):
    """log E h(r) = log int f h - log int f, each around its own peak in (0, cap)."""
    log_z = _log_quad(logf, _peak(logf, cap), sd, upper)

    def logg(r):
        return logf(r) + logh(r)

    return _log_quad(logg, _peak(logg, cap), sd, upper) - log_z


def _gauss_rule(logf, lo, hi, n):
    """Normalized Gauss-Legendre rule of the density exp(logf) on [lo, hi]."""
    x, w = special.roots_legendre(n)
    r = lo + (hi - lo) * (x + 1.0) / 2.0
    with np.errstate(divide="ignore", invalid="ignore"):
        lw = np.log(w) + logf(r)
    lw = np.where(np.isfinite(lw), lw, -np.inf)
    w = np.exp(lw - lw.max())
    return r, w / w.sum()


def _bulk(logf, sd, cap, upper=np.inf):
    """[lo, hi] where the density is above e^-60 of its peak (root finding)."""
    peak = _peak(logf, min(cap, upper))
    floor = float(logf(peak)) - 60.0

    def edge(limit):  # the crossing of the floor between the peak and limit
        if float(logf(limit)) >= floor:
            return limit
        return optimize.brentq(lambda r: float(logf(r)) - floor, peak, limit)

    lo = edge(max(peak - 60.0 * sd, 1e-300))
    hi = edge(min(peak + 60.0 * sd, upper))
    return (0.0 if lo <= 1e-300 else lo), hi


def _angle_rule(dim, at_pi, levels=40, k=10):
    """phi nodes/weights on [0, pi], density prop. to sin^(dim-2) phi, graded towards
    phi = 0 (and towards phi = pi with ``at_pi``) by geometric sub-intervals."""
    grade = np.pi / 2 * 2.0 ** -np.arange(levels, 0, -1)
    left = np.concatenate([[0.0], grade, [np.pi / 2]])
    right = np.pi - grade[::-1] if at_pi else np.linspace(np.pi / 2, np.pi, 9)[1:-1]
    edges = np.concatenate([left, right, [np.pi]])
    x, w = special.roots_legendre(k)
    a, b = edges[:-1, None], edges[1:, None]
    phi = (a + (b - a) * (x + 1) / 2).ravel()
    wt = ((b - a) / 2 * w).ravel() * np.sin(phi) ** (dim - 2)
    return phi, wt / wt.sum()


def _sq_dist(kind, ra, rb, phi):
    """D^2 by the law of cosines in a cancellation-free form."""
    s2 = np.sin(phi / 2) ** 2
    if kind == "S":
        half = np.sin((ra - rb) / 2) ** 2 + np.sin(ra) * np.sin(rb) * s2
        return (2 * np.arcsin(np.sqrt(np.clip(half, 0, 1)))) ** 2
    # (cosh D - 1) / 2 = sinh^2((ra - rb)/2) + sinh ra sinh rb sin^2(phi/2) = y^2
    with np.errstate(divide="ignore"):
        log_y2 = np.logaddexp(
            2 * _log_sinh(np.abs(ra - rb) / 2),
            _log_sinh(ra) + _log_sinh(rb) + np.log(s2),
        )
    return (2 * np.arcsinh(np.sqrt(np.exp(log_y2)))) ** 2


def _pair_reference(kind, dim, rule_a, rule_b, n_angle_levels=40):
    """E D^2 over two radial rules and the graded angle rule.

    On S^d the rule for r_b is rebuilt per node r_a, split where D^2 has its kink
    (r_a + r_b = pi, plus r_a +- r_b = k pi for radii past pi): ``rule_b`` is then
    ``(logf, lo, hi, n)``.
    """
    phi, wphi = _angle_rule(dim, at_pi=kind == "S", levels=n_angle_levels)
    ra, wa = rule_a
    total = 0.0
    for r, w in zip(ra, wa, strict=True):
        if kind == "S":
            logf, lo, hi, n = rule_b
            ks = np.arange(1, 8) * np.pi
            cuts = np.concatenate([ks - r, r - ks, r + ks])
            edges = np.unique(np.r_[lo, cuts[(cuts > lo) & (cuts < hi)], hi])
            rb, lwb = [], []
            for a, b in zip(edges[:-1], edges[1:], strict=True):
                x, gw = special.roots_legendre(n)
                nodes = a + (b - a) * (x + 1) / 2
                rb.append(nodes)
                lwb.append(np.log(gw * (b - a) / 2) + logf(nodes))
            rb, lwb = np.concatenate(rb), np.concatenate(lwb)
            lwb = np.where(np.isfinite(lwb), lwb, -np.inf)
            wb = np.exp(lwb - special.logsumexp(lwb))
        else:
            rb, wb = rule_b
        total += w * (wb @ _sq_dist(kind, r, rb[:, None], phi[None, :]) @ wphi)
    return total


def _rg_pair_reference(kind, dim, theta_a, theta_b, n=72):
    upper = np.pi if kind == "S" else np.inf
    rules = []
    for theta in (theta_a, theta_b):
        logf, sd = _log_density(kind, dim, theta), 1 / np.sqrt(2 * theta)
        rules.append((logf, *_bulk(logf, sd, _cap(dim, sd), upper)))
    fa, lo_a, hi_a = rules[0]
    fb, lo_b, hi_b = rules[1]
    rule_a = _gauss_rule(fa, lo_a, hi_a, n)
    if kind == "S":
        return _pair_reference(kind, dim, rule_a, (fb, lo_b, hi_b, n // 2))
    return _pair_reference(kind, dim, rule_a, _gauss_rule(fb, lo_b, hi_b, n))


# --- item 3: E cosh d of the Riemannian Gaussian on H^d -------------------------------


def _log_expected_cosh(dim, theta):
    def logcosh(r):
        return r + np.log1p(np.exp(-2.0 * r)) - np.log(2.0)

    sd = 1 / np.sqrt(2 * theta)
    return _log_moment(_log_density("H", dim, theta), logcosh, sd, _cap(dim, sd))


def _expected_sq_dist(dim, theta):
    sd = 1 / np.sqrt(2 * theta)
    logf = _log_density("H", dim, theta)
    return np.exp(_log_moment(logf, lambda r: 2 * np.log(r), sd, _cap(dim, sd)))


@pytest.mark.parametrize(
    "dim, theta",
    [(2, 0.01), (2, 0.003), (2, 0.0015), (5, 0.01), (5, 0.005), (1, 0.002), (2, 3.0)],
)  # (2, 3.0): a control the old rule had right
def test_hyperbolic_expected_cosh_matches_log_space_quadrature(dim, theta):
    # cosh r tilts the density by e^r: its bulk sits near (2 dim - 1) / (2 theta),
    # outside the E d^2 rule below theta ~ 1/128. Before: 0.055x the truth at 0.003
    # on H^2, 1e-12x at 0.0015.
    log_want = _log_expected_cosh(dim, theta)
    assert log_want < 700.0  # representable
    got = RiemannianGaussian(Hyperbolic(dim)).expected_invariant(theta)
    np.testing.assert_allclose(np.log(got), log_want, rtol=0, atol=1e-9)


@pytest.mark.parametrize("dim", [1, 2, 5])
def test_hyperbolic_expected_cosh_is_inf_past_the_float_range(dim):
    # Before: NaN at 1e-4 (0-weight nodes times cosh = inf) with RuntimeWarnings.
    # Like WrappedNormal(Hyperbolic).expected_invariant: inf, silently, exactly when
    # the value is past the float range.
    rg = RiemannianGaussian(Hyperbolic(dim))
    theta = np.array([1e-4, 1e-3, 0.02, 0.3])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = rg.expected_invariant(theta)
    log_want = np.array([_log_expected_cosh(dim, t) for t in theta])
    big = log_want > np.log(np.finfo(np.float64).max)
    assert big[0] and not big[-1]
    assert np.all(np.isposinf(got[big]))
    np.testing.assert_allclose(np.log(got[~big]), log_want[~big], rtol=0, atol=1e-9)


# --- item 4: the 1-D moments and the pair map ----------------------------------------


@pytest.mark.parametrize(
    "dim, theta",
    [
        (2, 1e-6),
        (2, 1e-5),
        (5, 1e-5),
        (5, 1e-4),
        (2, 1e-3),
        (5, 1e-3),
        (2, 1.0),
        (5, 1.0),
    ],
)  # theta >= 1e-3 (and 1e-5 on H^2): controls the old rule had to 1e-9
def test_hyperbolic_expected_sq_dist_at_tiny_theta_matches_quad(dim, theta):
    # the mode (d - 1) / (2 theta) is far from 0 in units of the sd 1 / sqrt(2 theta):
    # a rule on [0, mode + 8 sd] put few nodes in the bulk (4e-5 .. 5e-4 off before)
    got = RiemannianGaussian(Hyperbolic(dim)).expected_sq_dist(theta)
    np.testing.assert_allclose(got, _expected_sq_dist(dim, theta), rtol=1e-9)


@pytest.mark.parametrize(
    "theta_a, theta_b",
    [(0.1, 0.1), (0.05, 0.03), (0.003, 0.01), (1.0, 30.0)],
)  # (1.0, 30.0): a control (small radii)
def test_hyperbolic_pair_map_matches_brute_force(theta_a, theta_b):
    # Before: 7.8e-4 (0.1, 0.1) and 1.4e-3 (0.05, 0.03) off: the 24-node Gauss-Jacobi
    # rule in t = cos(phi) against the log(1 - t) singularity of d^2 at large radii.
    want = _rg_pair_reference("H", 2, theta_a, theta_b)
    got = RiemannianGaussian(Hyperbolic(2)).pair_expected_sq_dist(theta_a, theta_b)
    np.testing.assert_allclose(got, want, rtol=1e-7)


def test_hyperbolic_pair_map_with_an_exact_lf_is_the_sum_of_the_moments():
    # an exact second LF (theta_b -> inf) sits at y: E d^2(la, lb) = E d^2(la, y);
    # before: 6e-4 off at theta_a = 3e-3 on H^5 (radial rule missing the bulk)
    theta = np.array([3e-3, 1e-3, 0.03])
    want = [_expected_sq_dist(5, t) for t in theta]
    got = RiemannianGaussian(Hyperbolic(5)).pair_expected_sq_dist(theta, 1e12)
    np.testing.assert_allclose(got, want, rtol=1e-9)


def test_wrapped_normal_hyperbolic_pair_map_matches_brute_force():
    # Before: 8.8e-5 off at sigma2 = (5, 5), 1.3e-3 at (50, 50)
    rules = []
    for sigma2 in (5.0, 50.0):
        logf, sd = _log_chi(2, sigma2), np.sqrt(sigma2)
        rules.append(_gauss_rule(logf, *_bulk(logf, sd, _cap(2, sd)), 72))
    wn = WrappedNormal(Hyperbolic(2))
    got = wn.pair_expected_sq_dist([5.0, 50.0], [5.0, 50.0])
    want = [_pair_reference("H", 2, r, r) for r in rules]
    np.testing.assert_allclose(got, want, rtol=1e-7)


@pytest.mark.parametrize(
    "dim, theta_a, theta_b", [(2, 0.1, 0.3), (2, 0.5, 0.5), (5, 0.05, 1.0)]
)  # S^5: a control (old error 3e-8: the kink is milder there)
def test_sphere_pair_map_matches_brute_force(dim, theta_a, theta_b):
    # d^2 has a kink at ra + rb = pi (antipodal points): the unsplit radial rule was
    # 5e-6 off on S^2 (and the angle rule 4e-4 at ra = rb = pi/2)
    want = _rg_pair_reference("S", dim, theta_a, theta_b)
    got = RiemannianGaussian(Sphere(dim)).pair_expected_sq_dist(theta_a, theta_b)
    np.testing.assert_allclose(got, want, rtol=1e-7)


def test_wrapped_normal_sphere_pair_map_matches_brute_force():
    # the wrapped radius is unbounded: D^2 has kinks wherever ra +- rb is a multiple
    # of pi. Before: 4.5e-6 off at (1.0, 1.5), 5.7e-4 at (1.7, 1.7).
    wn = WrappedNormal(Sphere(2))
    got = wn.pair_expected_sq_dist([1.0, 1.7], [1.5, 1.7])
    want = []
    for sa, sb in ((1.0, 1.5), (1.7, 1.7)):
        fa, fb = _log_chi(2, sa), _log_chi(2, sb)
        lo_a, hi_a = _bulk(fa, np.sqrt(sa), _cap(2, np.sqrt(sa)))
        lo_b, hi_b = _bulk(fb, np.sqrt(sb), _cap(2, np.sqrt(sb)))
        want.append(
            _pair_reference(
                "S", 2, _gauss_rule(fa, lo_a, hi_a, 72), (fb, lo_b, hi_b, 36)
            )
        )
    np.testing.assert_allclose(got, want, rtol=1e-7)


@pytest.mark.parametrize(
    "sigma2_a, sigma2_b", [(0.3, 0.5), (5.0, 0.008), (20.0, 0.004), (1.0, 2.0)]
)
def test_wrapped_normal_circle_pair_map_is_the_folded_normal(sigma2_a, sigma2_b):
    # On S^1 the two labels are at angles X_a, X_b ~ N(0, sigma2) around y, so
    # d(la, lb) is the folded difference: E d^2 = E fold(Z)^2, Z ~ N(0, sa + sb), a
    # 1-D integral. Before: 2.6e-3 off at (5.0, 0.008), 6e-2 at (20.0, 0.004).
    sd = np.sqrt(sigma2_a + sigma2_b)
    edges = np.r_[np.arange(0.0, 15.0 * sd, np.pi), 15.0 * sd]

    def f(z):
        folded = np.abs(np.mod(z + np.pi, 2 * np.pi) - np.pi)
        return folded**2 * np.exp(-0.5 * (z / sd) ** 2) / (sd * np.sqrt(2 * np.pi))

    want = 2 * sum(
        integrate.quad(f, a, b, epsabs=0.0, epsrel=1e-13)[0]
        for a, b in zip(edges[:-1], edges[1:], strict=True)
    )
    got = WrappedNormal(Sphere(1)).pair_expected_sq_dist(sigma2_a, sigma2_b)
    np.testing.assert_allclose(got, want, rtol=1e-7)


# --- item 10: sampling past Hyperbolic.max_radius ------------------------------------


def _log_tail(kind_family, dim, scale, radius):
    """log P(r > radius) by quad."""
    if kind_family == "wn":
        return np.log(special.gammaincc(dim / 2, radius**2 / (2 * scale)))
    logf, sd = _log_density("H", dim, scale), 1 / np.sqrt(2 * scale)
    log_z = _log_quad(logf, _peak(logf, _cap(dim, sd)), sd)
    m = float(logf(radius))
    tail = integrate.quad(
        lambda r: float(np.exp(logf(r) - m)),
        radius,
        radius + 40 * sd,
        epsabs=0.0,
        epsrel=1e-10,
        limit=200,
    )[0]
    return m + np.log(tail) - log_z


@pytest.mark.parametrize(
    "family, scale, name, code",
    [
        (RiemannianGaussian, 0.03, "theta", "rg"),
        (WrappedNormal, 40.0, "sigma2", "wn"),
    ],
)
@pytest.mark.parametrize("seed", [0, 2])
def test_hyperbolic_sampling_refuses_radii_past_max_radius_up_front(
    family, scale, name, code, seed
):
    # Before: a ValueError from Hyperbolic.exp ("tangent_vec has length 36.65 ...")
    # for some seeds only (200,000 draws at theta 0.03), naming no noise parameter.
    n = 200_000
    noise = family(Hyperbolic(2))
    y = np.tile(Hyperbolic(2).origin, (n, 1))
    with pytest.raises(
        ValueError, match=rf"scale \({name}\) = {scale!r} is too noisy"
    ) as e:
        noise.sample(y, scale, seed=seed)
    limit = float(str(e.value).split(f"Use {name} ")[1].split()[1])
    # the limit is where one of the n draws passes max_radius with probability 0.05
    log_tail = _log_tail(code, 2, limit, Hyperbolic.max_radius)
    # (to the 4 digits printed)
    np.testing.assert_allclose(log_tail, np.log(0.05 / n), atol=0.02)
    # and a slightly less noisy parameter samples fine
    ok = limit * (1.01 if family is RiemannianGaussian else 0.99)
    assert np.all(np.isfinite(noise.sample(y, ok, seed=seed)))
    # few draws of the noisy parameter are no risk (3 draws: chance 1e-4 or less)
    assert np.all(np.isfinite(noise.sample(y[:3], scale, seed=seed)))
