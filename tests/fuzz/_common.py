"""Shared settings and strategies of the property-based fuzz suite.

The suite runs in CI on a small, repeatable budget: every property has its own number
of examples (``budget(n)``), examples are derived from the test's name
(``derandomize=True``) and nothing is written to a Hypothesis database. Raise the budget
locally with the environment variable ``SNORKEL_STRUCTURED_FUZZ_EXAMPLES``: every
property then runs that many examples (e.g. ``SNORKEL_STRUCTURED_FUZZ_EXAMPLES=500
python -m pytest tests/fuzz``); set ``SNORKEL_STRUCTURED_FUZZ_RANDOM=1`` as well to
draw fresh examples instead of the CI ones.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st

import snorkel_structured as ss

PROFILE = "snorkel_structured_fuzz"

_OVERRIDE = os.environ.get("SNORKEL_STRUCTURED_FUZZ_EXAMPLES")
_RANDOM = os.environ.get("SNORKEL_STRUCTURED_FUZZ_RANDOM", "") not in ("", "0")

settings.register_profile(
    PROFILE,
    deadline=None,
    derandomize=not _RANDOM,
    database=None,
    print_blob=True,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
    ],
)


def budget(n_examples: int) -> settings:
    """Settings of one property: the shared profile with ``n_examples`` examples (CI).

    ``SNORKEL_STRUCTURED_FUZZ_EXAMPLES`` replaces ``n_examples`` when it is set.
    """
    n = int(_OVERRIDE) if _OVERRIDE else n_examples
    return settings(settings.get_profile(PROFILE), max_examples=n)


# --- checks shared by the properties ---------------------------------------------------

# Exception types a user may see from the library: ValueError (NotFittedError subclasses
# it) and TypeError for wrong types. IndexError, ZeroDivisionError, LinAlgError (a
# ValueError subclass, so excluded explicitly), KeyError, FloatingPointError... are bugs.
ALLOWED = (ValueError,)


def check_user_error(exc: BaseException) -> None:
    """Fail unless ``exc`` is a clean, user-facing ValueError with a message."""
    if isinstance(exc, np.linalg.LinAlgError) or not isinstance(exc, ALLOWED):
        raise AssertionError(
            f"raised {type(exc).__name__} ({exc}); only ValueError with a message may "
            "reach the user"
        ) from exc
    assert str(exc).strip(), f"{type(exc).__name__} without a message"


@contextmanager
def user_warnings() -> Iterator[list[warnings.WarningMessage]]:
    """Record every warning; on exit fail on raw numpy warnings or empty messages.

    numpy's RuntimeWarnings ("overflow encountered in ...", "invalid value ...",
    "divide by zero ...") mean a NaN/inf was produced inside the library: they are
    raw numpy errors, not messages written for the user.
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield caught
    for w in caught:
        msg = str(w.message)
        assert msg.strip(), f"{w.category.__name__} without a message"
        if issubclass(w.category, RuntimeWarning) and "encountered in" in msg:
            raise AssertionError(
                f"raw numpy warning reached the user: {msg} ({w.filename}:{w.lineno})"
            )


def run_or_value_error(fn: Callable[[], Any]) -> Any:
    """``fn()``, or None when it raised a clean ValueError (any other type fails)."""
    try:
        out = fn()
    except Exception as exc:  # noqa: BLE001 - the type is what is checked
        check_user_error(exc)
        event("refused", str(exc)[:60])  # --hypothesis-show-statistics lists these
        return None
    event("outcome", "ok")
    return out


# --- strategies --------------------------------------------------------------------------


@st.composite
def distance_matrices(
    draw: st.DrawFn,
    min_r: int = 2,
    max_r: int = 6,
    low: float = 1e-2,
    high: float = 1e2,
) -> np.ndarray:
    """Valid distance matrices: symmetric, zero diagonal, positive off-diagonal.

    Entries are drawn independently, so the triangle inequality may fail and the
    matrix is in general not Euclidean (a semimetric, which the spaces accept).
    """
    r = draw(st.integers(min_r, max_r))
    k = r * (r - 1) // 2
    vals = draw(st.lists(st.floats(low, high, allow_nan=False), min_size=k, max_size=k))
    D = np.zeros((r, r))
    iu = np.triu_indices(r, 1)
    D[iu] = vals
    return D + D.T


@st.composite
def label_matrices(
    draw: st.DrawFn,
    n_labels: int,
    *,
    min_rows: int = 1,
    max_rows: int = 30,
    min_lfs: int = 3,
    max_lfs: int = 6,
    n_lfs: int | None = None,
) -> np.ndarray:
    """Label matrices with random abstains, all-abstain rows/columns and duplicate LFs.

    A planted truth makes most votes agree (so fits get past identifiability checks);
    Hypothesis then shrinks toward small, sparse matrices.
    """
    n = draw(st.integers(min_rows, max_rows))
    m = draw(st.integers(min_lfs, max_lfs)) if n_lfs is None else n_lfs
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, n_labels, size=n)
    accuracy = draw(st.floats(0.0, 1.0))
    abstain = draw(st.floats(0.0, 0.9))
    right = rng.random((n, m)) < accuracy
    L = np.where(right, truth[:, None], rng.integers(0, n_labels, size=(n, m)))
    L = np.where(rng.random((n, m)) < abstain, ss.ABSTAIN, L)
    if draw(st.booleans()):  # an LF that never votes
        L[:, draw(st.integers(0, m - 1))] = ss.ABSTAIN
    if draw(st.booleans()):  # rows where nobody votes
        L[rng.random(n) < 0.3] = ss.ABSTAIN
    if m >= 2 and draw(st.booleans()):  # a duplicated LF
        a, b = draw(st.permutations(range(m)))[:2]
        L[:, b] = L[:, a]
    return L.astype(np.int64)


@st.composite
def weighted_graphs(draw: st.DrawFn, tree: bool | None = None) -> Any:
    """Connected weighted networkx graphs (trees or with extra edges), 1 to 9 nodes."""
    import networkx as nx

    n = draw(st.integers(1, 9))
    is_tree = draw(st.booleans()) if tree is None else tree
    weights = st.floats(0.05, 20.0, allow_nan=False)
    G = nx.Graph()
    names = draw(st.sampled_from(["int", "str", "tuple"]))
    label = {
        "int": lambda i: i,
        "str": lambda i: f"node{i}",
        "tuple": lambda i: ("n", i),
    }[names]
    G.add_nodes_from(label(i) for i in range(n))
    for i in range(1, n):  # random recursive tree: connected by construction
        parent = draw(st.integers(0, i - 1))
        G.add_edge(label(parent), label(i), weight=draw(weights))
    if not is_tree and n >= 3:
        for _ in range(draw(st.integers(1, n))):
            u, v = draw(st.integers(0, n - 1)), draw(st.integers(0, n - 1))
            if u != v:
                G.add_edge(label(u), label(v), weight=draw(weights))
    return G


# --- geometry by the textbook formulas (independent of the library's maps) ----------------


def minkowski(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Minkowski inner product ``-a_0 b_0 + sum_i a_i b_i`` over the last axis."""
    return -a[..., 0] * b[..., 0] + np.einsum("...i,...i->...", a[..., 1:], b[..., 1:])


def manifold(kind: str, dim: int) -> Any:
    """``ss.Euclidean(dim)``, ``ss.Sphere(dim)`` or ``ss.Hyperbolic(dim)``."""
    return {
        "euclidean": ss.Euclidean,
        "sphere": ss.Sphere,
        "hyperbolic": ss.Hyperbolic,
    }[kind](dim)


def polar(kind: str, radius: Any, direction: np.ndarray) -> np.ndarray:
    """Points at geodesic distance ``radius`` from the origin, in unit ``direction``."""
    r = np.asarray(radius, dtype=np.float64)[..., None]
    if kind == "euclidean":
        return r * direction
    if kind == "sphere":
        return np.concatenate([np.cos(r), np.sin(r) * direction], axis=-1)
    return np.concatenate([np.cosh(r), np.sinh(r) * direction], axis=-1)


def project_tangent(kind: str, base: np.ndarray, raw: np.ndarray) -> np.ndarray:
    """Orthogonal projection of ``raw`` onto the tangent space at ``base``."""
    if kind == "euclidean":
        return raw
    if kind == "sphere":
        return raw - np.einsum("...i,...i->...", raw, base)[..., None] * base
    return raw + minkowski(raw, base)[..., None] * base


def tangent_norm(kind: str, v: np.ndarray) -> np.ndarray:
    if kind == "hyperbolic":
        return np.sqrt(np.maximum(minkowski(v, v), 0.0))
    return np.linalg.norm(v, axis=-1)


def geodesic_step(kind: str, base: np.ndarray, v: np.ndarray) -> np.ndarray:
    """exp_base(v) by the closed forms (v tangent at base)."""
    r = tangent_norm(kind, v)[..., None]
    safe = np.where(r > 0, r, 1.0)
    if kind == "euclidean":
        return base + v
    if kind == "sphere":
        return np.cos(r) * base + np.where(r > 0, np.sin(r) / safe, 1.0) * v
    return np.cosh(r) * base + np.where(r > 0, np.sinh(r) / safe, 1.0) * v


def random_points(
    kind: str, dim: int, n: int, max_radius: float, rng: np.random.Generator
) -> np.ndarray:
    """``n`` points within ``max_radius`` of the origin, shape (n, ambient_dim)."""
    u = rng.standard_normal((n, dim))
    u /= np.maximum(np.linalg.norm(u, axis=1, keepdims=True), 1e-12)
    return polar(kind, rng.uniform(0.0, max_radius, n), u)


def perturb(
    kind: str, points: np.ndarray, lengths: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """Each point moved along a random geodesic by the matching entry of ``lengths``."""
    v = project_tangent(kind, points, rng.standard_normal(points.shape))
    n = tangent_norm(kind, v)[..., None]
    v = v / np.maximum(n, 1e-12) * np.asarray(lengths)[..., None]
    return geodesic_step(kind, points, v)
