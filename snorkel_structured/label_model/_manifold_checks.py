"""Validation of ManifoldLabelModel's parameters and loaded state (a mixin)."""

from __future__ import annotations

from typing import Any

import numpy as np

from snorkel_structured._persistence import (
    check_state_array,
    state_attr,
    state_float,
    state_int,
)
from snorkel_structured._validation import (
    check_scalar,
)
from snorkel_structured.estimators._manifold_stats import (
    ManifoldStats,
)
from snorkel_structured.estimators.robust_manifold import (
    OutlierBackground,
)
from snorkel_structured.noise.manifold import (
    RiemannianGaussian,
    WrappedNormal,
)
from snorkel_structured.spaces.manifolds import Euclidean, Hyperbolic, Sphere

__all__ = ["ESTIMATORS", "ROBUST", "WEIGHTINGS", "ManifoldChecks"]

ESTIMATORS = ("triplet", "pair_sq_dist", "uws")
WEIGHTINGS = ("inverse_variance", "beta_squared")
ROBUST = ("auto", True, False)


def _as_outputs(chunk: Any, space: Any) -> np.ndarray:
    """A chunk as (n, n_lfs, ambient_dim): 2-D chunks (Dask DataFrame partitions) hold
    each row's LF outputs side by side, n_lfs * ambient_dim columns."""
    try:
        arr = np.asarray(chunk.to_numpy() if hasattr(chunk, "to_numpy") else chunk)
    except (
        ValueError
    ):  # ragged (e.g. None for abstains): check_manifold_outputs says so
        return chunk
    D = space.ambient_dim
    if arr.ndim == 2 and arr.shape[1] % D == 0:
        arr = arr.reshape(arr.shape[0], -1, D)
    return arr


class ManifoldChecks:
    """Parameter checks and the loaded-state check of :class:`~snorkel_structured.ManifoldLabelModel`."""

    def _check_params(self) -> None:
        if not isinstance(self.space, (Euclidean, Sphere, Hyperbolic)):
            raise ValueError(
                "space must be a Euclidean, Sphere or Hyperbolic instance; got "
                f"{self.space!r}. For products, fit one model per factor."
            )
        if self.estimator not in ESTIMATORS:
            raise ValueError(
                f"estimator must be one of {ESTIMATORS}; got {self.estimator!r}."
            )
        if self.weighting not in WEIGHTINGS:
            raise ValueError(
                f"weighting must be one of {WEIGHTINGS}; got {self.weighting!r}."
            )
        if not any(
            self.robust is v or (isinstance(v, str) and self.robust == v)
            for v in ROBUST
        ):
            raise ValueError(
                f"robust must be 'auto', True or False; got {self.robust!r}."
            )
        if not (isinstance(self.shrinkage, str) and self.shrinkage == "auto"):
            check_scalar(self.shrinkage, "shrinkage", low=0.0, high=1.0)
        check_scalar(self.min_overlap, "min_overlap", kind="int", low=1)
        check_scalar(self.atol, "atol", low=0.0)

    def _validate_state(self) -> None:
        """Check a loaded fitted state against the space and ``n_lfs_`` (for ``load``)."""
        stats = state_attr(self, "stats_", ManifoldStats)
        m = state_int(self, "n_lfs_", low=3)
        if stats.space != self.space:
            raise ValueError(
                f"the fitted attribute stats_ is on {stats.space!r}, not {self.space!r}."
            )
        check_state_array(stats.vote_count, "stats_.vote_count", (m,), low=0)
        for name in (
            "pair_count",
            "pair_invariant_sum",
            "pair_sq_dist_sum",
            "pair_sq_dist_sq_sum",
            "pair_invariant_sq_sum",
        ):
            check_state_array(getattr(stats, name), f"stats_.{name}", (m, m))
        noise = state_attr(self, "noise_", (WrappedNormal, RiemannianGaussian))
        if noise.space != self.space:
            raise ValueError(
                f"the fitted attribute noise_ is on {noise.space!r}, not {self.space!r}."
            )
        check_state_array(
            state_attr(self, "dependencies_"),
            "dependencies_",
            (None, 2),
            kind="i",
            low=0,
            high=m - 1,
        )
        check_state_array(
            state_attr(self, "groups_"), "groups_", (m,), kind="i", low=0, high=m - 1
        )
        for name in ("noise_scale_", "expected_sq_dist_", "expected_invariant_"):
            check_state_array(state_attr(self, name), name, (m,), finite="no_nan")
        check_state_array(
            state_attr(self, "outlier_rate_"), "outlier_rate_", (m,), low=0, high=1
        )
        check_state_array(state_attr(self, "shrinkage_"), "shrinkage_", (m,))
        weights = check_state_array(
            state_attr(self, "weights_"), "weights_", (m,), low=0
        )
        if not weights.sum() > 0:
            raise ValueError("the fitted attribute weights_ must have a positive sum.")
        state_float(self, "weight_exponent_")
        state_attr(self, "noise_model_", dict)
        robust = state_attr(self, "_robust_params", (dict, type(None)))
        if robust is not None:
            # "prior" (the population of labels, apart from the outlier law) is new;
            # models saved without it used the background for both
            keys = {"expected_sq_dist", "outlier_rate", "background"}
            if set(robust) not in (keys, keys | {"prior"}):
                raise ValueError(
                    "the fitted attribute _robust_params must have the keys "
                    "expected_sq_dist, outlier_rate, background (and optionally "
                    f"prior); got {sorted(robust)}."
                )
            check_state_array(
                robust["expected_sq_dist"], "_robust_params['expected_sq_dist']", (m,)
            )
            check_state_array(
                robust["outlier_rate"],
                "_robust_params['outlier_rate']",
                (m,),
                low=0,
                high=1,
            )
            for key in ("background", "prior"):
                if key in robust and not isinstance(robust[key], OutlierBackground):
                    raise ValueError(
                        f"the fitted attribute _robust_params[{key!r}] must be an "
                        f"OutlierBackground; got {type(robust[key]).__name__}."
                    )
