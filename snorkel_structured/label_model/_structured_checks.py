"""Validation of StructuredLabelModel's parameters, inputs and loaded state (a mixin)."""

from __future__ import annotations

import inspect
from typing import Any, Self

import numpy as np

from snorkel_structured._persistence import (
    check_state_array,
    state_attr,
    state_float,
    state_int,
)
from snorkel_structured._validation import (
    check_distribution,
    check_gold_labels,
    check_label_matrix,
    check_scalar,
    check_seed,
)
from snorkel_structured.estimators._stats import VoteStats, _count_patterns
from snorkel_structured.estimators._support_posterior import SupportPosterior
from snorkel_structured.label_model._snorkel_compat import (
    check_class_balance,
    check_dev_classes,
)
from snorkel_structured.spaces.finite import DENSE_MAX_LABELS as _DENSE_MAX
from snorkel_structured.spaces.finite import Discrete, FiniteMetricSpace

__all__ = ["StructuredChecks"]

_ESTIMATORS = ("tensor", "mle", "uws")


class StructuredChecks:
    """Parameters (scikit-learn's get/set_params), input checks and the loaded-state
    check of :class:`~snorkel_structured.StructuredLabelModel`."""

    @classmethod
    def _param_names(cls) -> list[str]:
        sig = inspect.signature(cls.__init__)
        return [p for p in sig.parameters if p != "self"]

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """Constructor parameters, as scikit-learn's ``get_params``."""
        return {k: getattr(self, k) for k in self._param_names()}

    def set_params(self, **params: Any) -> Self:
        """Set constructor parameters, as scikit-learn's ``set_params``; returns self."""
        names = set(self._param_names())
        for k, v in params.items():
            if k not in names:
                raise ValueError(
                    f"Invalid parameter {k!r} for StructuredLabelModel; valid: {sorted(names)}."
                )
            setattr(self, k, v)
        if "space" in params:
            self.cardinality = len(self.space)
        return self

    def _validate_state(self) -> None:
        """Check a loaded fitted state against the space and ``n_lfs_`` (for ``load``)."""
        r = len(self.space)
        stats = state_attr(self, "stats_", VoteStats)
        m = state_int(self, "n_lfs_", low=3)
        if stats.n_labels != r:
            raise ValueError(
                f"the fitted attribute stats_ counts votes over {stats.n_labels} labels, "
                f"but the space has {r}."
            )
        check_state_array(
            stats.patterns, "stats_.patterns", (None, m), kind="i", low=-1, high=r - 1
        )
        n_patterns = stats.patterns.shape[0]
        check_state_array(stats.counts, "stats_.counts", (n_patterns,), low=0)
        check_state_array(state_attr(self, "prior_"), "prior_", (r,), low=0)
        support = check_state_array(
            state_attr(self, "support_"),
            "support_",
            (None,),
            kind="i",
            low=0,
            high=r - 1,
        )
        theta = state_attr(self, "theta_", np.ndarray)
        check_state_array(theta, "theta_", (m,) if theta.ndim == 1 else (m, r))
        if bool(state_attr(self, "label_dependent_")) != (theta.ndim == 2):
            raise ValueError(
                f"the fitted attribute label_dependent_ is {self.label_dependent_} but "
                f"theta_ has shape {theta.shape}."
            )
        state_attr(self, "abstain_dependent_")
        for name, shape, low, high in (
            ("expected_sq_dist_", (m,), None, None),
            ("coverage_", (m,), 0.0, 1.0),
            ("abstain_", (m, r), 0.0, 1.0),
            ("outlier_rate_", (m,), 0.0, 1.0),
            ("outlier_dist_", (m, r), 0.0, None),
            ("vote_weights_", (m,), 0.0, None),
        ):
            check_state_array(state_attr(self, name), name, shape, low=low, high=high)
        state_float(self, "noise_power_")
        state_float(self, "shrinkage_")
        state_float(self, "log_likelihood_", finite=False)  # NaN for "tensor"
        state_attr(self, "noise_model_", dict)
        state_attr(self, "fit_warnings_", list)
        for name in ("dependencies_", "_dependencies"):
            pairs = state_attr(self, name, list)
            if not all(len(p) == 2 and all(0 <= int(a) < m for a in p) for p in pairs):
                raise ValueError(
                    f"the fitted attribute {name} must hold pairs of LF indices in "
                    f"[0, {m}); got {pairs!r}."
                )
        fixed = state_attr(self, "_fixed_prior")
        if fixed is not None:
            check_state_array(fixed, "_fixed_prior", (r,), low=0)
        state_attr(self, "_labeled", (tuple, type(None)))
        post = state_attr(self, "_posterior", SupportPosterior)
        k = support.size
        if post.r != r or not np.array_equal(post.support, support):
            raise ValueError(
                "the fitted attribute _posterior does not belong to support_ and the "
                "space (its support or number of labels differ)."
            )
        check_state_array(
            post.table, "_posterior.table", (m, r + 1, k), finite="not_pos_inf"
        )
        check_state_array(
            post.log_prior, "_posterior.log_prior", (k,), finite="not_pos_inf"
        )

    def _check_params(self) -> None:
        if not isinstance(self.space, FiniteMetricSpace):
            raise TypeError(
                f"space must be a FiniteMetricSpace (e.g. ss.Permutations(4)); got "
                f"{type(self.space).__name__}."
            )
        if self.estimator not in _ESTIMATORS:
            raise ValueError(
                f"estimator must be one of {_ESTIMATORS}; got {self.estimator!r}."
            )
        r = len(self.space)
        if self.n_components is not None:
            check_scalar(self.n_components, "n_components", kind="int", low=1, high=r)
        for name in ("label_dependent", "confusion", "abstain_dependent"):
            value = getattr(self, name, "auto")  # confusion: pickles before it
            if not isinstance(value, (bool, np.bool_)) and value != "auto":
                raise TypeError(f"{name} must be True, False or 'auto'; got {value!r}.")
            if value is True and self.estimator != "mle":
                raise ValueError(
                    f"{name}=True needs estimator='mle'; got estimator={self.estimator!r}."
                )
        confusion = getattr(self, "confusion", "auto")
        if (
            not isinstance(confusion, str)
            and confusion
            and not self._confusion_applies()
        ):
            raise ValueError(
                "confusion=True needs a Discrete space, estimator='mle', "
                "n_components=None and label_dependent, abstain_dependent, "
                "noise_power, outliers, shrinkage and prior_support left at 'auto' "
                "(the tables replace them)."
            )
        if not (isinstance(self.noise_power, str) and self.noise_power == "auto") and (
            self.noise_power not in (1, 2)
        ):
            raise ValueError(
                f"noise_power must be 1, 2 or 'auto'; got {self.noise_power!r}."
            )
        if not isinstance(self.outliers, (bool, np.bool_)) and self.outliers != "auto":
            raise ValueError(
                f"outliers must be True, False or 'auto'; got {self.outliers!r}."
            )
        if not (isinstance(self.shrinkage, str) and self.shrinkage == "auto"):
            check_scalar(self.shrinkage, "shrinkage", low=0.0, high=1.0)
        for name in ("noise_power", "outliers", "shrinkage"):
            value = getattr(self, name)
            if self.estimator != "mle" and not (
                isinstance(value, str)
                or (name == "noise_power" and value == 2)
                or (name == "outliers" and value is False)
                or (name == "shrinkage" and value == 0)
            ):
                raise ValueError(
                    f"{name}={value!r} needs estimator='mle'; got estimator="
                    f"{self.estimator!r}."
                )
        # Each estimator reads only some of the prior's options: one it ignores
        # would be silently dropped.
        ps = self.prior_support
        if self.estimator == "tensor" and not (isinstance(ps, str) and ps == "auto"):
            raise ValueError(
                f"prior_support={ps!r} needs estimator='mle' or 'uws' (the tensor "
                "decomposition finds its own support; n_components sets its size)."
            )
        if self.estimator == "uws" and self.n_components is not None:
            raise ValueError(
                f"n_components={self.n_components!r} needs estimator='mle' or "
                "'tensor'; with 'uws' give the labels instead (prior_support=[...])."
            )
        check_scalar(self.max_iter, "max_iter", kind="int", low=1)
        check_scalar(self.tol, "tol", low=0.0, low_inclusive=False)
        check_seed(
            self.seed if not isinstance(self.seed, np.random.Generator) else None
        )

    def _spread_prior(self) -> bool:
        """Whether the prior spreads over the whole space (default on structured spaces):
        it then gets ``PRIOR_PSEUDO_COUNT`` per label, so that every label stays
        predictable."""
        ps = self.prior_support
        return (
            isinstance(ps, str)
            and ps == "auto"
            and self.n_components is None
            and not isinstance(self.space, Discrete)
            and len(self.space) <= _DENSE_MAX
        )

    def _support(self) -> np.ndarray | None:
        ps, r = self.prior_support, len(self.space)
        if isinstance(ps, str):
            if ps == "auto":
                # Every label the votes can support, so that none is unpredictable:
                # plain classes as in Snorkel, and any space whose (r, r) tables fit
                # (pruning the prior to a few labels collapsed real tasks, whose truth
                # spreads over the space, onto one answer). Larger spaces search.
                # (``n_components`` asks for a support of that size: the search.)
                if isinstance(self.space, Discrete):
                    return np.arange(r)
                return np.arange(r) if self._spread_prior() else None
            if ps == "all":
                return np.arange(r)
            if ps == "search":
                return np.arange(r) if isinstance(self.space, Discrete) else None
            raise ValueError(
                f"prior_support must be 'auto', 'all', 'search' or label indices; got "
                f"{ps!r}."
            )
        idx = np.asarray(ps)
        if idx.ndim != 1 or idx.size == 0 or idx.dtype.kind not in "iu":
            raise ValueError(
                f"prior_support must be a non-empty 1-D array of label indices; got {idx!r}."
            )
        if (idx < 0).any() or (idx >= r).any():
            raise ValueError(
                f"prior_support holds indices outside [0, {r}); got {idx.tolist()}."
            )
        return np.unique(idx)

    def _check_class_balance(self, class_balance: Any, Y_dev: Any) -> np.ndarray | None:
        r = len(self.space)
        if class_balance is not None:
            p = np.asarray(class_balance, dtype=np.float64)
            check_class_balance(self.space, p)  # Snorkel's refusals (Discrete only)
            return check_distribution(
                p,
                r,
                f"class_balance must be {r} non-negative numbers (one per label of the "
                f"space) with a positive sum; got shape {p.shape}.",
            )
        if Y_dev is not None:
            y = self._check_gold(Y_dev, "Y_dev")
            check_dev_classes(self.space, y)  # Snorkel's refusal (Discrete only)
            return np.bincount(y, minlength=r) / y.size
        return None

    def _check_gold(
        self, Y: Any, name: str, n: int | None = None, *, allow_unknown: bool = False
    ) -> np.ndarray:
        """Gold label indices of this space (:func:`check_gold_labels`)."""
        return check_gold_labels(
            Y, len(self.space), name, n, allow_unknown=allow_unknown
        )

    def _check_L(self, L: Any, name: str = "L") -> np.ndarray:
        return check_label_matrix(
            L, n_labels=len(self.space), min_lfs=3, name=name, n_lfs=self.n_lfs_
        )

    def _check_dev(
        self, L_dev: Any, Y_dev: Any, n_lfs: int
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """Labeled rows as (patterns, counts, labels), or None."""
        if L_dev is None:
            return None
        if self.estimator != "mle":
            raise ValueError(
                f"L_dev needs estimator='mle'; got estimator={self.estimator!r}."
            )
        Ld = check_label_matrix(
            L_dev, n_labels=len(self.space), min_lfs=3, name="L_dev", n_lfs=n_lfs
        )
        y = self._check_gold(Y_dev, "Y_dev", Ld.shape[0])
        support = self._support()
        if support is not None and not np.isin(y, support).all():
            bad = np.setdiff1d(y, support)
            raise ValueError(
                f"Y_dev holds labels {bad[:5].tolist()} outside prior_support; widen "
                "prior_support or drop those rows."
            )
        joint, counts = _count_patterns(np.column_stack([Ld, y]), len(self.space))
        return joint[:, :-1], counts.astype(np.float64), joint[:, -1]
