"""StructuredLabelModel: Snorkel's LabelModel lifted to labels in a finite metric space."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Iterator
from typing import Any

import numpy as np

from snorkel_structured import _warnings
from snorkel_structured._chunks import (
    is_dask_collection,
    reduce_stats,
)
from snorkel_structured._persistence import (
    PersistenceMixin,
    check_state_array,
    state_attr,
    state_float,
    state_int,
)
from snorkel_structured._validation import (
    ABSTAIN,
    check_is_fitted,
    check_label_matrix,
    check_scalar,
    check_seed,
)
from snorkel_structured.estimators._noise_family import SHRINK_GRID
from snorkel_structured.estimators._stats import VoteStats, _count_patterns
from snorkel_structured.estimators.em import (
    em_refine,
    mle_estimate,
    support_log_table,
)
from snorkel_structured.estimators.uws import uws_expected_sq_dist
from snorkel_structured.exceptions import IdentifiabilityWarning
from snorkel_structured.label_model._dependency_groups import (
    check_dependencies,
    dependency_weights,
)
from snorkel_structured.label_model._posterior import (
    PosteriorMethods,
    _SupportPosterior,
)
from snorkel_structured.label_model._snorkel_compat import (
    check_class_balance,
    check_dev_classes,
    check_prec_init_shape,
    check_train_options,
    snorkel_base_labeler,
)
from snorkel_structured.noise.finite import (
    expected_sq_dist,
    theta_from_expected_sq_dist,
)
from snorkel_structured.noise_aware import NoiseMatrix, loss_weights, noise_matrix
from snorkel_structured.spaces.finite import DENSE_MAX_LABELS as _DENSE_MAX
from snorkel_structured.spaces.finite import Discrete, FiniteMetricSpace

__all__ = ["StructuredLabelModel"]

_ESTIMATORS = ("tensor", "mle", "uws")
# Snorkel's BaseLabeler, without the torch import of Snorkel's model package.
BaseLabeler = snorkel_base_labeler()


def _chunk_stats(
    chunk: Any, *, n_labels: int, name: str, n_lfs: int | None
) -> VoteStats:
    """VoteStats of one chunk of rows (module level, so Dask workers can unpickle it)."""
    L = check_label_matrix(chunk, n_labels=n_labels, min_lfs=3, name=name, n_lfs=n_lfs)
    patterns, counts = _count_patterns(L, n_labels)
    return VoteStats(int(n_labels), patterns, counts.astype(np.float64))


def _is_chunked(data: Any) -> bool:
    return is_dask_collection(data) or isinstance(data, Iterator)


class StructuredLabelModel(PosteriorMethods, PersistenceMixin, BaseLabeler):
    """Label model for labels in a finite metric space (rankings, tree nodes, classes).

    Labeling functions vote items of ``space`` (as indices; -1 abstains). Given the true
    label y, LF a votes v with probability exp(-theta_a d^2(v, y)) / Z_a(y), independently
    of the other LFs; the prior P(Y = y) lives on a few labels (its support). The model
    is fitted without ground truth from the counts of vote patterns, and returns the
    posterior P(Y | votes) like Snorkel's ``LabelModel``, whose method signatures it keeps.

    Parameters
    ----------
    space : FiniteMetricSpace
        The label space (``ss.Permutations``, ``ss.GraphSpace``, ``ss.Discrete``...).
    estimator : {"mle", "tensor", "uws"}, default="mle"
        "mle": maximum likelihood by EM over vote patterns, started from the tensor
        estimate (or a greedy support search when that is not identifiable).
        "tensor": the paper's tensor decomposition (Algorithm 1, done without oracles).
        "uws": the universal weak supervision baseline (additive squared distances);
        its prior is then estimated by EM over the prior alone, theta held fixed.
    n_components : int, optional
        Number of labels with prior mass; estimated when omitted.
    label_dependent : bool or "auto", default="auto"
        One theta per LF and true label, shape (n_lfs, r) (like Snorkel's class-
        conditional accuracies). "auto" lets the data choose (BIC on how the LFs
        agree) among one theta shared by all LFs (the unweighted vote), one per LF,
        and, for ``Discrete`` spaces only, one per LF and class. Only
        ``estimator="mle"`` has it ("auto" means one per LF for the others).
    abstain_dependent : bool or "auto", default="auto"
        Let P(LF abstains | Y) depend on the true label, as in Snorkel's label model
        (whose synthetic LFs abstain more on some classes). "auto" keeps it when BIC
        prefers it. ``estimator="mle"`` only. Rows where no LF votes still get the
        prior, as in Snorkel.
    noise_power : {1, 2, "auto"}, default="auto"
        The noise family exp(-theta_a d^p): p = 2 is the paper's; p = 1 has heavier
        tails (on rankings with the Kendall distance, the Mallows model). "auto"
        chooses on held-out rows ("mle" only; see Notes).
    outliers : bool or "auto", default="auto"
        Add an outlier component: with probability eps_a LF a's vote is unrelated
        to Y (drawn from the LF's own vote distribution), so an LF that is usually
        right but sometimes far off is not judged by its worst votes. "auto"
        chooses on held-out rows ("mle" only).
    shrinkage : float in [0, 1] or "auto", default="auto"
        How far each theta_a moves toward the LFs' mean (0: not at all, 1: all LFs
        weigh the same, the unweighted vote). "auto" chooses on held-out rows, so
        that estimation noise cannot make the model lose to unweighted voting
        ("mle" only).
    prior_support : "auto", "all" or array-like of int, default="auto"
        Labels the prior may use ("mle" and "uws"): chosen from the data, the whole
        space, or given. For ``Discrete`` spaces "auto" keeps every class. Elsewhere,
        "auto" fits the prior over all candidate labels (all labels, or the 64
        most-voted in a space above 64 labels) and keeps the heaviest labels as long
        as BIC improves, comparing with a greedy search; it warns
        (``IdentifiabilityWarning``) when two support sizes are within 1 in BIC.
    max_iter : int, default=500
        EM iterations ("mle", "uws").
    tol : float, default=1e-8
        EM tolerance on the log-likelihood per row.
    seed : None, int or numpy.random.Generator
        Randomness of the estimators (restarts). An int gives identical refits; a
        Generator advances at each fit.
    verbose : bool, default=False
        Unused (kept for Snorkel compatibility); nothing is printed.

    Attributes
    ----------
    stats_ : VoteStats
        Vote-pattern counts the model was fitted on (``partial_fit`` adds to them).
    n_lfs_ : int
    prior_ : ndarray of shape (r,)
        Estimated P(Y = y), zero off the support.
    support_ : ndarray of int of shape (k,)
    theta_ : ndarray of shape (n_lfs,) or (n_lfs, r)
    expected_sq_dist_ : ndarray of shape (n_lfs,)
        Estimated E[d^2(lambda_a, Y)] per LF.
    coverage_ : ndarray of shape (n_lfs,)
        Fraction of rows each LF voted on.
    abstain_ : ndarray of shape (n_lfs, r)
        P(LF abstains | Y = y): ``1 - coverage_`` for every y unless
        ``abstain_dependent_``.
    noise_model_ : dict
        The noise model the data chose ("mle"): ``{"prior": "free" | "uniform" |
        "fixed", "theta": "shared" | "lf" | "label", "abstain": bool}``; empty for
        "tensor" and "uws".
    label_dependent_ : bool
        Whether ``theta_`` is (n_lfs, r) (one theta per LF and label).
    abstain_dependent_ : bool
        Whether abstains depend on the label.
    noise_power_ : float
        p of the noise family exp(-theta d^p) (2 for "tensor" and "uws").
    outlier_rate_ : ndarray of shape (n_lfs,)
        eps_a: the probability that LF a's vote is unrelated to Y (zeros without
        the outlier component).
    outlier_dist_ : ndarray of shape (n_lfs, r)
        h_a, the distribution of an outlier vote of LF a: its own vote frequencies.
        P(lambda_a = v | y) = (1 - eps_a) exp(-theta_a d^p(v, y)) / Z_a(y) +
        eps_a h_a(v).
    shrinkage_ : float
        The shrinkage of theta toward the LFs' mean that was applied.
    dependencies_ : list of (int, int)
        The LF pairs declared dependent in ``fit``.
    vote_weights_ : ndarray of shape (n_lfs,)
        Each LF's weight in the posterior: 1, or 1/g for an LF in a group of g
        mutually dependent LFs (declared with ``fit(..., dependencies=...)``).
    log_likelihood_ : float
        Log-likelihood of the fitted votes under the estimate.
    fit_warnings_ : list of str
        Warnings raised by the estimators during the last fit (also emitted).

    See Also
    --------
    snorkel_structured.estimators.em.mle_estimate
    snorkel_structured.estimators.tensor.tensor_estimate

    Notes
    -----
    P(Y = y | votes) is proportional to prior_y prod_a exp(-theta_a S[lambda_a, y]) /
    Z_a(y) over the LFs that voted (the paper's section 2.2, with the partition
    function kept: it depends on y outside homogeneous spaces). Estimation needs only the
    additive :class:`~snorkel_structured.estimators.VoteStats`, so ``fit`` equals
    ``partial_fit`` over chunks equals ``fit_stats(sum(chunk_stats))`` equals ``fit``
    of an iterator of chunks or of a Dask array/DataFrame (reduced on the workers).

    Scale. The posterior is zero off ``support_``, so prediction uses only the k rows
    S[support_, :] (an (n_lfs, r + 1, k) table) and costs O(n_patterns k n_lfs).
    Spaces above 2,048 labels (Permutations(7), r = 5,040; Permutations(8), r =
    40,320) never build the (r, r) distance matrix: "mle" computes the rows it needs
    with ``space.dist`` and searches supports among the 64 most-voted labels;
    "tensor"/"uws" and ``prior_support="all"`` are refused there. Use
    ``predict_proba(L, labels="support")`` (n_samples, k) for such spaces: the
    default (n_samples, r) form raises when it would exceed ``max_bytes`` (1 GiB).

    References
    ----------
    .. [1] H. Vishwakarma, N. Roberts, F. Sala. "Lifting Weak Supervision To Structured
       Prediction." NeurIPS 2022.

    Examples
    --------
    >>> import numpy as np, snorkel_structured as ss
    >>> data = ss.synthetic.make_ranking_data(5000, seed=0)
    >>> lm = ss.StructuredLabelModel(data.space, estimator="mle", seed=0).fit(data.L)
    >>> lm.theta_.shape, lm.predict_proba(data.L).shape
    ((3,), (5000, 24))
    >>> bool(np.abs(lm.expected_sq_dist_ - data.expected_sq_dist).max() < 0.1)
    True
    """

    def __init__(
        self,
        space: FiniteMetricSpace,
        *,
        estimator: str = "mle",
        n_components: int | None = None,
        label_dependent: bool | str = "auto",
        abstain_dependent: bool | str = "auto",
        noise_power: Any = "auto",
        outliers: bool | str = "auto",
        shrinkage: Any = "auto",
        prior_support: Any = "auto",
        max_iter: int = 500,
        tol: float = 1e-8,
        seed: Any = None,
        verbose: bool = False,
    ) -> None:
        BaseLabeler.__init__(
            self, cardinality=len(space) if hasattr(space, "__len__") else 0
        )
        self.space = space
        self.estimator = estimator
        self.n_components = n_components
        self.label_dependent = label_dependent
        self.abstain_dependent = abstain_dependent
        self.noise_power = noise_power
        self.outliers = outliers
        self.shrinkage = shrinkage
        self.prior_support = prior_support
        self.max_iter = max_iter
        self.tol = tol
        self.seed = seed
        self.verbose = verbose

    # -- scikit-learn style parameters --------------------------------------------
    @classmethod
    def _param_names(cls) -> list[str]:
        sig = inspect.signature(cls.__init__)
        return [p for p in sig.parameters if p != "self"]

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """Constructor parameters, as scikit-learn's ``get_params``."""
        return {k: getattr(self, k) for k in self._param_names()}

    def set_params(self, **params: Any) -> StructuredLabelModel:
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

    def __repr__(self) -> str:
        return f"StructuredLabelModel({self.space!r}, estimator={self.estimator!r})"

    # -- persistence (see snorkel_structured._persistence) -----------------------------
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
        post = state_attr(self, "_posterior", _SupportPosterior)
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

    # -- validation ----------------------------------------------------------------
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
        for name in ("label_dependent", "abstain_dependent"):
            value = getattr(self, name)
            if not isinstance(value, (bool, np.bool_)) and value != "auto":
                raise TypeError(f"{name} must be True, False or 'auto'; got {value!r}.")
            if value is True and self.estimator != "mle":
                raise ValueError(
                    f"{name}=True needs estimator='mle'; got estimator={self.estimator!r}."
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
        check_scalar(self.max_iter, "max_iter", kind="int", low=1)
        check_scalar(self.tol, "tol", low=0.0, low_inclusive=False)
        check_seed(
            self.seed if not isinstance(self.seed, np.random.Generator) else None
        )

    def _support(self) -> np.ndarray | None:
        ps, r = self.prior_support, len(self.space)
        if isinstance(ps, str):
            if ps == "auto":  # plain classes: every class is a label (as in Snorkel)
                return np.arange(r) if isinstance(self.space, Discrete) else None
            if ps == "all":
                return np.arange(r)
            raise ValueError(
                f"prior_support must be 'auto', 'all' or label indices; got {ps!r}."
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
            if (
                p.shape != (r,)
                or not np.isfinite(p).all()
                or (p < 0).any()
                or p.sum() <= 0
            ):
                raise ValueError(
                    f"class_balance must be {r} non-negative numbers (one per label of the "
                    f"space) with a positive sum; got shape {p.shape}."
                )
            return p / p.sum()
        if Y_dev is not None:
            y = self._check_gold(Y_dev, "Y_dev")
            check_dev_classes(self.space, y)  # Snorkel's refusal (Discrete only)
            return np.bincount(y, minlength=r) / y.size
        return None

    def _check_gold(
        self, Y: Any, name: str, n: int | None = None, *, allow_unknown: bool = False
    ) -> np.ndarray:
        """Gold label indices; integral floats pass, as in Snorkel.

        ``allow_unknown`` lets -1 mark a row whose label is unknown (``score``).
        """
        r = len(self.space)
        y = np.asarray(Y)
        if y.ndim == 2 and y.shape[1] == 1:
            y = y[:, 0]
        integral = y.dtype.kind in "iu" or (
            y.dtype.kind == "f" and bool(np.all(np.isfinite(y) & (y == np.round(y))))
        )
        if y.ndim != 1 or y.size == 0 or not integral:
            raise ValueError(
                f"{name} must be a 1-D array of label indices; got shape {y.shape}, dtype {y.dtype}."
            )
        if n is not None and y.size != n:
            raise ValueError(
                f"{name} must have one label per row of L ({n}); got {y.size}."
            )
        y = y.astype(np.int64)
        bad = ((y < 0) & ~(allow_unknown & (y == ABSTAIN))) | (y >= r)
        if bad.any():
            i = int(np.argmax(bad))
            unknown = " (or -1 for an unknown label)" if allow_unknown else ""
            raise ValueError(
                f"{name} holds a label outside [0, {r}){unknown}: entry {i} is {y[i]}."
            )
        return y

    def _check_L(self, L: Any, name: str = "L") -> np.ndarray:
        return check_label_matrix(
            L, n_labels=len(self.space), min_lfs=3, name=name, n_lfs=self.n_lfs_
        )

    # -- fitting ---------------------------------------------------------------------
    def fit(
        self,
        L_train: Any,
        Y_dev: Any = None,
        class_balance: Any = None,
        progress_bar: bool = True,
        *,
        L_dev: Any = None,
        dependencies: Any = None,
        **config: Any,
    ) -> StructuredLabelModel:
        """Estimate the prior and each LF's noise from the votes ``L_train``.

        Parameters
        ----------
        L_train : array-like of int of shape (n_samples, n_lfs), iterator of such chunks, or Dask array/DataFrame
            Label indices into ``space``; -1 = abstain. At least 3 LFs. An iterator
            (e.g. a generator reading a file chunk by chunk) is consumed once and never
            held whole; a Dask collection is reduced partition by partition where it
            lives (on the workers of an active ``dask.distributed`` client) and only
            the vote-pattern counts travel back. All give the same estimate as one
            in-memory array (the statistics are additive).
        Y_dev : array-like of int of shape (n_dev,), optional
            Gold labels. With ``L_dev``: the labels of those rows (a small labeled
            dev set). Without ``L_dev``: as in Snorkel, when ``class_balance`` is
            not given their frequencies fix the prior. On a ``Discrete`` space every class must
            occur in ``Y_dev`` (Snorkel's "Does not match LabelModel cardinality");
            elsewhere labels absent from ``Y_dev`` get prior 0.
        class_balance : array-like of shape (r,), optional
            A fixed prior over the labels of ``space`` (normalized here). On a
            ``Discrete`` space it must have one positive entry per class, as in
            Snorkel; elsewhere zeros are allowed (a prior on a few labels).
        progress_bar : bool, default=True
            Show a tqdm bar over EM's starting points (estimator "mle"; the fit has
            no epochs), as Snorkel shows one over its epochs.
        L_dev : array-like of int of shape (n_dev, n_lfs), optional
            Votes on labeled rows whose labels are ``Y_dev`` ("mle" only). They join
            the likelihood with their labels known (jointly with the unlabeled
            votes) and their labels join the support. The noise family and
            shrinkage chosen on held-out votes (a labeled row weighing as one row)
            are overruled, as is that weight (1, or all unlabeled rows' together),
            when the posterior's held-out expected distance to their labels
            improves by two standard errors. A hundred rows typically suffice.
        dependencies : sequence of (int, int), optional
            LF pairs known to be dependent (e.g. reading the same source; see
            ``StructuredLFAnalysis.lf_dependencies``). Each group of mutually
            dependent LFs counts as one LF in the likelihood and the posterior
            (every member weighs 1/g), so shared errors are not counted twice;
            "tensor" (and the tensor start of "mle") uses no triplet containing a
            dependent pair, "uws" no dependent pair's mean distance.
            Warns when fewer than 3 groups remain (the noise is then not
            identifiable).
        **config
            ``seed``, ``max_iter`` and ``tol`` override the constructor's for this
            fit. Snorkel's training options ``n_epochs``, ``lr``, ``l2``,
            ``optimizer``, ``optimizer_config``, ``lr_scheduler``,
            ``lr_scheduler_config``, ``prec_init``, ``log_freq`` and ``mu_eps`` are
            validated as Snorkel's ``LabelModel.fit`` validates them (same errors,
            e.g. "Unrecognized optimizer option") and then ignored: the fit is EM on
            vote-pattern counts, with no epochs, learning rate or initial precisions.
            ``mu_eps`` (in [0, 0.5]) is not applied either: the reported
            ``get_conditional_probs()`` stay those of the model ``predict`` uses.

        Returns
        -------
        self : StructuredLabelModel

        Raises
        ------
        ValueError
            If ``L_train`` is not a 2-D integer matrix with at least 3 columns and votes
            in [-1, r), ``class_balance``/``Y_dev`` do not fit the space, or a Snorkel
            training option has a value Snorkel refuses.
        TypeError
            For an unknown keyword argument, or an option of a type Snorkel refuses.
        """
        self._check_params()
        options = check_train_options(
            config, progress_bar=progress_bar, own=("seed", "max_iter", "tol")
        )
        if L_dev is not None and Y_dev is None:
            raise ValueError("L_dev needs Y_dev, the labels of its rows.")
        fixed = self._check_class_balance(
            class_balance, Y_dev if L_dev is None else None
        )
        stats = self._collect_stats(L_train, "L_train")
        check_prec_init_shape(options["prec_init"], stats.n_lfs)
        self._labeled = self._check_dev(L_dev, Y_dev, stats.n_lfs)
        self._dependencies = check_dependencies(dependencies, stats.n_lfs)
        return self._fit_stats(stats, fixed, dict(config, progress_bar=progress_bar))

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

    def _collect_stats(
        self, data: Any, name: str, n_lfs: int | None = None
    ) -> VoteStats:
        """VoteStats of an array, an iterator of chunks or a Dask collection."""
        to_stats = functools.partial(
            _chunk_stats, n_labels=len(self.space), name=name, n_lfs=n_lfs
        )
        if _is_chunked(data):
            return reduce_stats(data, to_stats)
        return to_stats(data)

    def fit_stats(
        self, stats: VoteStats, class_balance: Any = None
    ) -> StructuredLabelModel:
        """Fit from vote-pattern counts (e.g. ``sum`` of per-chunk ``VoteStats``).

        Parameters
        ----------
        stats : VoteStats
            With ``n_labels == len(space)`` and at least 3 LFs.
        class_balance : array-like of shape (r,), optional
            A fixed prior.

        Returns
        -------
        self : StructuredLabelModel
        """
        self._check_params()
        if not isinstance(stats, VoteStats):
            raise TypeError(f"stats must be a VoteStats; got {type(stats).__name__}.")
        if stats.n_labels != len(self.space):
            raise ValueError(
                f"stats must count votes over {len(self.space)} labels (the space); got "
                f"n_labels={stats.n_labels}."
            )
        if stats.n_lfs < 3:
            raise ValueError(
                f"stats must have at least 3 labeling functions; got {stats.n_lfs}. Add "
                "labeling functions."
            )
        self._labeled, self._dependencies = None, []
        return self._fit_stats(
            stats, self._check_class_balance(class_balance, None), {}
        )

    def partial_fit(self, L_chunk: Any) -> StructuredLabelModel:
        """Add the votes of ``L_chunk`` to the statistics and re-estimate.

        The prior fixed by the last ``fit`` (``class_balance``/``Y_dev``) is kept.

        Parameters
        ----------
        L_chunk : array-like of int of shape (n_chunk, n_lfs), iterator of chunks, or Dask collection

        Returns
        -------
        self : StructuredLabelModel
        """
        self._check_params()
        fitted = hasattr(self, "stats_")
        stats = self._collect_stats(L_chunk, "L_chunk", self.n_lfs_ if fitted else None)
        if not fitted:
            self._labeled, self._dependencies = None, []
        if fitted:
            stats = self.stats_ + stats
        return self._fit_stats(stats, getattr(self, "_fixed_prior", None), {})

    def _fit_stats(
        self, stats: VoteStats, fixed: np.ndarray | None, config: dict[str, Any]
    ) -> StructuredLabelModel:
        stats.check_has_votes("L_train")
        seed = config.get("seed", self.seed)
        max_iter = check_scalar(
            config.get("max_iter", self.max_iter), "max_iter", kind="int", low=1
        )
        tol = check_scalar(
            config.get("tol", self.tol), "tol", low=0.0, low_inclusive=False
        )
        rng = check_seed(seed)
        r = len(self.space)
        large = r > _DENSE_MAX
        if large and self.estimator != "mle":
            raise ValueError(
                f"estimator={self.estimator!r} needs (r, r) tables of the space; r = {r} "
                f"labels is above {_DENSE_MAX}. Use estimator='mle', which works on the "
                "rows of the support only."
            )
        if (
            large
            and isinstance(self.prior_support, str)
            and self.prior_support == "all"
        ):
            raise ValueError(
                f"prior_support='all' on a space of {r} labels would need (n_patterns, "
                f"{r}) tables; use 'auto' (or n_components) or give the label indices."
            )
        S = None if large else self.space.squared_distance_matrix
        support = self._support()
        vote_weights = dependency_weights(self._dependencies, stats.n_lfs)
        with _warnings.captured() as caught:
            if self.estimator == "mle":
                est = mle_estimate(
                    stats,
                    self.space if large else S,
                    n_components=self.n_components,
                    support=support,
                    prior=fixed,
                    label_dependent=self.label_dependent,
                    abstain_dependent=self.abstain_dependent,
                    plain_classes=isinstance(self.space, Discrete),
                    max_iter=max_iter,
                    tol=tol,
                    seed=rng,
                    labeled=self._labeled,
                    progress_bar=bool(config.get("progress_bar", False)),
                    powers=(1.0, 2.0)
                    if self.noise_power == "auto"
                    else (float(self.noise_power),),
                    outliers=(False, True)
                    if self.outliers == "auto"
                    else (bool(self.outliers),),
                    shrinkages=SHRINK_GRID
                    if self.shrinkage == "auto"
                    else (float(self.shrinkage),),
                    vote_weights=vote_weights,
                    dependencies=self._dependencies,
                )
                prior, theta, ll = est.prior, est.theta, est.log_likelihood
                expected, abstain = est.expected_sq_dist, est.abstain
                support, noise_model = est.support, est.noise_model
                power, log_h = est.power, est.log_vote_dist
                eps = est.outlier_rate if noise_model.get("outliers") else None
            elif self.estimator == "tensor":
                from snorkel_structured.estimators.tensor import tensor_estimate

                t = tensor_estimate(
                    stats,
                    S,
                    n_components=self.n_components,
                    seed=rng,
                    dependencies=self._dependencies,
                )
                prior = (
                    np.asarray(t.prior, dtype=np.float64) if fixed is None else fixed
                )
                theta = np.asarray(t.theta, dtype=np.float64)
                ll = float("nan")
                expected, abstain, noise_model = None, None, {}
                power, eps, log_h = 2.0, None, None
            else:
                prior, theta, ll = self._fit_uws(
                    stats, S, fixed, support, max_iter, tol
                )
                expected, abstain, noise_model = None, None, {}
                power, eps, log_h = 2.0, None, None
        self.fit_warnings_ = [w.message for w in caught]
        for w in caught:  # re-emit, pointing at the caller
            _warnings.warn(w.message, w.category, stacklevel=3)
        self.stats_ = stats
        self.n_lfs_ = stats.n_lfs
        self.prior_ = np.asarray(prior, dtype=np.float64)
        self.support_ = (
            np.asarray(support, dtype=np.int64)
            if self.estimator == "mle"
            else np.flatnonzero(self.prior_ > 0)
        )
        self.theta_ = np.asarray(theta, dtype=np.float64)
        self.noise_model_ = noise_model
        self.noise_power_ = float(power)
        self.outlier_rate_ = np.zeros(stats.n_lfs) if eps is None else np.asarray(eps)
        with np.errstate(under="ignore"):
            self.outlier_dist_ = (
                np.zeros((stats.n_lfs, r)) if log_h is None else np.exp(log_h)
            )
        self.shrinkage_ = float(noise_model.get("shrinkage", 0.0))
        self.dependencies_ = list(self._dependencies)
        self.vote_weights_ = (
            np.ones(stats.n_lfs) if vote_weights is None else vote_weights
        )
        self.label_dependent_ = self.theta_.ndim == 2
        self.abstain_dependent_ = abstain is not None
        self.abstain_ = (
            np.asarray(abstain, dtype=np.float64)
            if abstain is not None
            else np.repeat((1.0 - stats.coverage())[:, None], r, axis=1)
        )
        self.expected_sq_dist_ = (
            np.asarray(expected, dtype=np.float64)
            if expected is not None
            else expected_sq_dist(S, self.theta_, self.prior_)
        )
        self.coverage_ = stats.coverage()
        self.log_likelihood_ = float(ll)
        self._fixed_prior = fixed
        T = self.support_
        table = support_log_table(
            self.space if large else S,
            self.theta_,
            T,
            power=self.noise_power_,
            eps=eps,
            log_h=log_h,
        )
        if self.abstain_dependent_:  # the votes' factor 1 - alpha, abstains' alpha
            alpha = self.abstain_[:, T]
            table[:, 1:, :] += np.log1p(-alpha)[:, None, :]
            table[:, 0, :] = np.log(alpha)
        table *= self.vote_weights_[:, None, None]
        self._posterior = _SupportPosterior(table, np.log(self.prior_[T]), T, r)
        return self

    def _fit_uws(
        self,
        stats: VoteStats,
        S: np.ndarray,
        fixed: np.ndarray | None,
        support: np.ndarray | None,
        max_iter: int,
        tol: float,
    ) -> tuple[np.ndarray, np.ndarray, float]:
        m, r = stats.n_lfs, len(self.space)
        P, c = np.asarray(stats.patterns), np.asarray(stats.counts)
        M = np.full((m, m), np.nan)
        for a in range(m):  # m^2 / 2 vectorized sums over patterns
            for b in range(a + 1, m):
                keep = (P[:, a] != ABSTAIN) & (P[:, b] != ABSTAIN)
                w = c[keep]
                if w.sum() > 0:
                    M[a, b] = M[b, a] = (w @ S[P[keep, a], P[keep, b]]) / w.sum()
        np.fill_diagonal(M, 0.0)
        for a, b in self._dependencies:  # not the additive distance of independent LFs
            M[a, b] = M[b, a] = np.nan
        e = uws_expected_sq_dist(M)
        bad = ~np.isfinite(e) | (e < 0)
        if bad.any():
            _warnings.warn(
                f"UWS could not estimate E[d^2] for LFs {np.flatnonzero(bad).tolist()} "
                "(no fully observed triplet, or additivity badly violated); treated as "
                "the most accurate possible.",
                IdentifiabilityWarning,
                stacklevel=4,
            )
            e = np.where(np.isfinite(e), np.maximum(e, 0.0), 0.0)
        base = fixed if fixed is not None else np.full(r, 1.0 / r)
        theta = theta_from_expected_sq_dist(S, e, base)
        if fixed is not None:
            return fixed, theta, float("nan")
        T = np.arange(r) if support is None else support
        p0 = np.zeros(r)
        p0[T] = 1.0 / T.size
        est = em_refine(
            stats,
            S,
            theta=theta,
            prior=p0,
            support=T,
            fixed_theta=True,
            max_iter=max_iter,
            tol=tol,
        )
        return est.prior, theta, est.log_likelihood

    # -- noise-aware end-model training (see snorkel_structured.noise_aware) ------------
    def noise_matrix(
        self,
        *,
        rule: str = "auto",
        support: Any = None,
        min_prior: float = 0.05,
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
        return noise_matrix(
            self.space,
            self.theta_,
            self.prior_,
            abstain=np.minimum(1.0 - self.coverage_, 1.0 - 1e-9),
            rule=rule,
            support=support,
            min_prior=min_prior,
            seed=seed,
            **self._family(),
            **options,
        )

    def _family(self) -> dict[str, Any]:
        """The fitted noise family, as noise_matrix/loss_weights take it."""
        outliers = bool(self.noise_model_.get("outliers", False))
        return {
            "power": self.noise_power_,
            "outlier_rate": self.outlier_rate_ if outliers else None,
            "outlier_dist": self.outlier_dist_ if outliers else None,
        }

    def loss_weights(
        self,
        L: Any,
        *,
        rule: str = "auto",
        support: Any = None,
        min_prior: float = 0.05,
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
        if noise is None:
            noise = self.noise_matrix(
                rule=rule, support=support, min_prior=min_prior, seed=q_rng, **options
            )
        return loss_weights(
            L,
            self.space,
            self.theta_,
            self.prior_,
            noise=noise,
            index=index,
            seed=z_rng,
            **self._family(),
        )
