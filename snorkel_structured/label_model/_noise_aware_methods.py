"""StructuredLabelModel's noise-aware end-model training methods (a mixin; see
:mod:`snorkel_structured.noise_aware`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from snorkel_structured._validation import (
    check_is_fitted,
    check_seed,
)
from snorkel_structured.noise_aware import NoiseMatrix, loss_weights, noise_matrix

__all__ = ["NoiseAwareMethods"]


class NoiseAwareMethods:
    """Q and the Q^-1 loss weights of a fitted
    :class:`~snorkel_structured.StructuredLabelModel`."""

    def noise_matrix(
        self,
        *,
        rule: str = "auto",
        support: Any = None,
        min_prior: float | str = "auto",
        seed: Any = None,
        **options: Any,
    ) -> NoiseMatrix:
        """Q_ij = P(pseudolabel = y_j | Y = y_i) under the fitted model, on the support.

        Abstain rates are ``1 - coverage_``. Other arguments are those of
        :func:`snorkel_structured.noise_matrix` (``method``, ``max_patterns``,
        ``n_draws``, ``warn_condition``).

        Returns
        -------
        NoiseMatrix
        """
        check_is_fitted(self, "theta_")
        return self._noise_matrix(
            self._family(),
            rule=rule,
            support=support,
            min_prior=min_prior,
            seed=seed,
            **options,
        )

    def _noise_matrix(self, family: dict[str, Any], **options: Any) -> NoiseMatrix:
        """:meth:`noise_matrix` with the fitted family already built (its full tables
        are an (n_lfs, r, r) array: :meth:`loss_weights` builds them once for both)."""
        return noise_matrix(
            self.space,
            self.theta_,
            self.prior_,
            abstain=np.minimum(1.0 - self.coverage_, 1.0 - 1e-9),
            posterior=self._log_posterior_of,
            **family,
            **options,
        )

    def _log_posterior_of(self, L: np.ndarray, labels: np.ndarray) -> np.ndarray:
        """log P(Y = labels_j | votes) of the fitted model, (n, len(labels)): -inf
        off its support. The votes' weights (dependencies) and abstains that depend
        on Y enter as in ``predict``."""
        logp, inverse = self._posterior.log_proba(L)  # (n_patterns, |support_|)
        pos = np.full(len(self.space), -1)
        pos[self.support_] = np.arange(self.support_.size)
        col = pos[np.asarray(labels, dtype=np.int64)]
        out = np.full((logp.shape[0], col.size), -np.inf)
        out[:, col >= 0] = logp[:, col[col >= 0]]
        return out[inverse]

    def _family(self) -> dict[str, Any]:
        """The fitted noise family, as noise_matrix/loss_weights take it."""
        outliers = bool(self.noise_model_.get("outliers", False))
        confusion = self.noise_model_.get("theta") == "confusion"
        return {
            "power": self.noise_power_,
            "outlier_rate": self.outlier_rate_ if outliers else None,
            "outlier_dist": self.outlier_dist_ if outliers else None,
            "log_cond": self.log_conditional_probs() if confusion else None,
        }

    def loss_weights(
        self,
        L: Any,
        *,
        rule: str = "auto",
        support: Any = None,
        min_prior: float | str = "auto",
        noise: NoiseMatrix | None = None,
        index: Any = None,
        seed: Any = None,
        **options: Any,
    ) -> Any:
        """Pseudolabels and Q^-1 loss weights per row, as a pandas DataFrame.

        Column ``"pseudolabel"`` (label index) and one column per support label holding
        the row of Q^-1 for that pseudolabel, so that sum_l w_l d^2(f(x), y_l) is an
        unbiased estimate of d^2(f(x), y) under the fitted model. Rows keep ``L``'s
        index when ``L`` is a DataFrame. Q uses abstain rates ``1 - coverage_`` unless
        ``noise`` (from :meth:`noise_matrix`) is given. See
        :func:`snorkel_structured.loss_weights` for the layout and abstain-only rows.

        Returns
        -------
        weights : DataFrame of shape (n_samples, k + 1)
        """
        check_is_fitted(self, "theta_")
        q_rng, z_rng = check_seed(seed).spawn(2)  # independent streams for Q and draws
        family = self._family()
        if noise is None:
            noise = self._noise_matrix(
                family,
                rule=rule,
                support=support,
                min_prior=min_prior,
                seed=q_rng,
                **options,
            )
        return loss_weights(
            L,
            self.space,
            self.theta_,
            self.prior_,
            noise=noise,
            index=index,
            seed=z_rng,
            posterior=self._log_posterior_of,
            **family,
        )
