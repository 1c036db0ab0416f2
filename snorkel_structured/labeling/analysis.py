"""LF analysis for structured labels: coverage, overlaps and conflicts in the metric.

``StructuredLFAnalysis`` is the structured counterpart of Snorkel's ``LFAnalysis``. On
top of Snorkel's counts it measures *how far apart* co-voting LFs are in the label
metric (Kendall distance between rankings, kilometres between cities, ...), and, given a
fitted label model, reports each LF's estimated ``E[d^2(lambda_a, Y)]`` and weight.
It handles both kinds of label space:

- finite spaces: ``L`` of shape ``(n_samples, n_lfs)``, indices with -1 for abstain;
- manifolds: ``L`` of shape ``(n_samples, n_lfs, ambient_dim)``, NaN rows = abstain.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from snorkel_structured import _warnings, exceptions
from snorkel_structured._validation import (
    ABSTAIN,
    check_label_matrix,
    check_manifold_outputs,
    check_points,
    warn_silent_lfs,
)
from snorkel_structured.spaces.finite import DENSE_MAX_LABELS

__all__ = ["StructuredLFAnalysis"]

# Label pairs per call of space.dist() on spaces too large for the dense matrix
# (bounds the temporaries of the distance computation, as the spaces' own row blocks).
_PAIR_BLOCK = 200_000
_MISSING = object()


def _is_finite_space(space: Any) -> bool:
    # getattr_static, not hasattr: distance_matrix is a cached property that builds the
    # (r, r) matrix (12 GiB for Permutations(8)), which the counts never need.
    has_matrix = inspect.getattr_static(space, "distance_matrix", _MISSING)
    return has_matrix is not _MISSING and hasattr(space, "index")


def _uses_dense_matrix(space: Any) -> bool:
    """Whether distances are read from ``space.distance_matrix``: small spaces, a matrix
    already built, or a space without ``dist`` (as the label models decide)."""
    return (
        len(space) <= DENSE_MAX_LABELS
        or "distance_matrix" in getattr(space, "__dict__", {})
        or not callable(getattr(space, "dist", None))
    )


def _finite_distances(space: Any, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """Distances between label indices ``i`` and ``j`` (1-D, same length), as floats.

    Spaces above ``DENSE_MAX_LABELS`` labels are computed with ``space.dist`` in
    blocks of pairs, never building the (r, r) matrix.
    """
    if _uses_dense_matrix(space):
        return np.asarray(space.distance_matrix[i, j], dtype=np.float64)
    out = np.empty(i.size, dtype=np.float64)
    for start in range(0, i.size, _PAIR_BLOCK):  # blocks of pairs, not rows
        stop = start + _PAIR_BLOCK
        out[start:stop] = space.dist(i[start:stop], j[start:stop])
    return out


def _masked_distances(
    space: Any, i: np.ndarray, j: np.ndarray, mask: np.ndarray
) -> np.ndarray:
    """``d(i, j)`` where ``mask`` holds, NaN elsewhere (``i``, ``j``, ``mask``
    broadcast); only the masked pairs are computed, so abstains (-1) never reach
    the space."""
    i, j, mask = np.broadcast_arrays(i, j, mask)
    out = np.full(mask.shape, np.nan)
    out[mask] = _finite_distances(space, i[mask], j[mask])
    return out


def warn_silent(
    votes: np.ndarray, *, name: str, lf_names: list[Any] | None, stacklevel: int
) -> None:
    """Warn (``IdentifiabilityWarning``) about LFs that never voted, also when none did.

    ``warn_silent_lfs`` leaves the all-silent case to label models, which raise; an
    analysis still runs (all counts zero), so it warns there too.

    Parameters
    ----------
    votes : ndarray of bool of shape (n_samples, n_lfs)
        Where each LF voted.
    name : str
        Name of the vote matrix in the message.
    lf_names : list, optional
        LF names for the message.
    stacklevel : int
        As in ``warnings.warn``, counted from the caller of this function.
    """
    n_samples, n_lfs = votes.shape
    counts = votes.sum(axis=0)
    warn_silent_lfs(
        counts,
        n_samples=n_samples,
        name=name,
        lf_names=lf_names,
        stacklevel=stacklevel + 1,
    )
    if n_lfs > 0 and not counts.any():
        _warnings.warn(
            f"No LF voted in {name}: all {n_lfs} LFs abstained on all {n_samples} "
            "rows, so the coverages, overlaps and conflicts are all zero and the "
            "data say nothing about the LFs' accuracies. Check that the LFs return "
            f"labels (not None) on this data and that {name} is the appliers' output.",
            exceptions.IdentifiabilityWarning,
            stacklevel=stacklevel + 1,
        )


def _lf_name(lf: Any, j: int) -> Any:
    """The name of ``lfs[j]``: a labeling function's ``name``, or the string itself."""
    if isinstance(lf, str):
        return lf
    if not hasattr(lf, "name"):
        raise TypeError(
            f"lfs[{j}] is {lf!r} of type {type(lf).__name__}; lfs must hold labeling "
            "functions (objects with a name, as Snorkel's LabelingFunction) or their "
            "names as strings."
        )
    return lf.name


def lf_names(lfs: Sequence[Any] | None, n_lfs: int, matrix: str) -> list[Any]:
    """The names of ``lfs`` (labeling functions or strings), one per column of the
    vote matrix named ``matrix``; ``lf_0, lf_1, ...`` without ``lfs``."""
    if lfs is None:
        return [f"lf_{j}" for j in range(n_lfs)]
    if isinstance(lfs, str):  # list("abc") would give three one-letter names
        raise TypeError(
            f"lfs must be a list of labeling functions or of their names; got "
            f"the string {lfs!r}. Pass [{lfs!r}] for a single LF."
        )
    lfs = list(lfs)
    if len(lfs) != n_lfs:
        raise ValueError(
            f"lfs has {len(lfs)} labeling functions but {matrix} has {n_lfs} LFs; "
            "pass the LFs in the order they were applied."
        )
    return [_lf_name(lf, j) for j, lf in enumerate(lfs)]


class StructuredLFAnalysis:
    """Summaries of structured labeling functions' votes, in the label metric.

    Parameters
    ----------
    L : array-like of shape (n_samples, n_lfs) or (n_samples, n_lfs, ambient_dim)
        Votes. For a finite ``space``: indices into the space, ``-1`` for abstain (the
        output of Snorkel's appliers). For a manifold: points, with a row of NaN where
        an LF abstains (the output of ``ManifoldPandasApplier``).
    lfs : list of labeling functions or of str, optional
        Used only for their names (the summary's index): labeling functions (their
        ``name``, as Snorkel's ``LFAnalysis`` reads it) or the names themselves.
    space : label space
        A finite space (``Permutations``, ``GraphSpace``, ...) or a manifold
        (``Sphere``, ``Euclidean``, ``Hyperbolic``) with a ``dist`` method.
    atol : float, default=1e-6
        Manifolds only: votes farther than ``atol`` from the manifold raise, as in
        ``ManifoldLabelModel`` (the votes are analysed as given, not projected).

    Attributes
    ----------
    L : ndarray
        A validated copy of the votes.
    space : label space
    lf_names : list of str
        LF names, or ``"lf_0", "lf_1", ...`` when ``lfs`` is not given.

    Raises
    ------
    ValueError
        If ``L`` has the wrong shape or values (for a manifold: the checks
        ``ManifoldLabelModel`` applies, e.g. a vote off the manifold), or ``lfs``
        has the wrong length.
    TypeError
        If an entry of ``lfs`` is neither a labeling function nor a string.

    Warns
    -----
    IdentifiabilityWarning
        When an LF never voted in ``L`` (zero coverage), naming it; when no LF voted,
        saying so.

    See Also
    --------
    snorkel.labeling.LFAnalysis : Snorkel's analysis for categorical labels.

    Notes
    -----
    Two LFs *overlap* on a row when both vote; they *conflict* when their votes
    differ (different items; for manifolds, distance above ``1e-9``). The metric view
    of conflicts is :meth:`lf_distances`: the mean distance ``d(lambda_a, lambda_b)``
    over rows where both vote, and :meth:`lf_mean_distances`, which pools, for each
    LF, the distances to every other LF over their common rows. Under the paper's
    model with independent LFs, ``E d^2(lambda_a, lambda_b) ~ E d^2(lambda_a, Y) +
    E d^2(lambda_b, Y)`` (exactly in Euclidean space), so LFs far from all others are
    the noisy ones. Finite spaces with more than ``DENSE_MAX_LABELS`` labels
    (``Permutations(7)`` and up) are measured with ``space.dist``, never building
    their (r, r) distance matrix, as in the label models.

    Examples
    --------
    >>> import numpy as np, snorkel_structured as ss
    >>> space = ss.Permutations(n_items=3)
    >>> L = np.array([[0, 0, 5], [0, 1, -1], [-1, -1, 2]])
    >>> a = ss.StructuredLFAnalysis(L, space=space)
    >>> a.lf_coverages().tolist()
    [0.6666666666666666, 0.6666666666666666, 0.6666666666666666]
    >>> a.lf_distances().round(2).iloc[0].tolist()
    [0.0, 0.5, 3.0]
    """

    def __init__(
        self,
        L: Any,
        lfs: Sequence[Any] | None = None,
        *,
        space: Any,
        atol: float = 1e-6,
    ) -> None:
        self.space = space
        self._finite = _is_finite_space(space)
        self._atol = atol
        if self._finite:
            self.L = check_label_matrix(L, n_labels=len(space), name="L")
            self._votes = self.L != ABSTAIN
        else:
            if not hasattr(space, "dist") or not hasattr(space, "ambient_dim"):
                raise TypeError(
                    "space must be a finite label space or a manifold with dist and "
                    f"ambient_dim; got {type(space).__name__}."
                )
            self.L = self._check_points(L, space, atol)
            self._votes = ~np.isnan(self.L).all(axis=-1)
        n_lfs = self.L.shape[1]
        self.lf_names = lf_names(lfs, n_lfs, "L")
        warn_silent(
            self._votes,
            name="L",
            lf_names=self.lf_names if lfs is not None else None,
            stacklevel=2,
        )

    @staticmethod
    def _check_points(L: Any, space: Any, atol: float) -> np.ndarray:
        try:
            X = np.array(L, dtype=np.float64, copy=True)
        except (TypeError, ValueError):
            # None for an abstain, or ragged points: check_manifold_outputs has the
            # message that says so (numpy's "inhomogeneous shape" does not).
            check_manifold_outputs(L, space, name="L", atol=atol)
            raise ValueError(  # pragma: no cover - the check above raises first
                f"L must be a numeric array of shape (n_samples, n_lfs, "
                f"{space.ambient_dim}) with a row of NaN where an LF abstains."
            ) from None
        d = int(space.ambient_dim)
        if X.ndim == 2 and d == 1:
            X = X[..., None]
        if X.ndim != 3 or X.shape[2] != d or X.shape[0] == 0:
            raise ValueError(
                f"L must have shape (n_samples, n_lfs, {d}) for {space!r}; got shape "
                f"{X.shape}. Apply manifold LFs with ManifoldPandasApplier."
            )
        nan = np.isnan(X)
        partial = nan.any(axis=-1) & ~nan.all(axis=-1)
        if partial.any():
            i, j = (int(v) for v in np.argwhere(partial)[0])
            raise ValueError(
                f"L[{i}, {j}] is partly NaN ({X[i, j].tolist()}); an abstain must be a "
                "whole row of NaN."
            )
        if np.isinf(X).any():
            i, j = (int(v) for v in np.argwhere(np.isinf(X).any(axis=-1))[0])
            raise ValueError(f"L[{i}, {j}] is not finite: {X[i, j].tolist()}.")
        if hasattr(space, "belongs") and hasattr(space, "projection"):
            # The label model's own check: off-manifold votes (e.g. rescaled, or on the
            # hyperboloid's lower sheet) would give distances of another geometry.
            # Its projected copy is dropped, so valid votes give the same numbers.
            check_manifold_outputs(X, space, name="L", atol=atol)
        return X

    # -- pairwise distances between co-voting LFs ----------------------------------
    def _pair_distances(self, a: int) -> np.ndarray:
        """Distances (n_samples, n_lfs) from LF ``a`` to every LF; NaN on abstains."""
        both = self._votes[:, a, None] & self._votes
        if self._finite:
            return _masked_distances(self.space, self.L[:, a, None], self.L, both)
        with np.errstate(invalid="ignore"):
            dist = np.asarray(self.space.dist(self.L[:, a, None, :], self.L))
        return np.where(both, dist, np.nan)

    def _distance_sums(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        m = self.L.shape[1]
        counts = (self._votes.T.astype(np.int64) @ self._votes.astype(np.int64)).astype(
            float
        )
        sums = np.zeros((m, m))
        sq_sums = np.zeros((m, m))
        for a in range(m):
            dist = self._pair_distances(a)
            sums[a] = np.nansum(dist, axis=0)
            sq_sums[a] = np.nansum(dist**2, axis=0)
        return counts, sums, sq_sums

    def lf_distances(self, squared: bool = False) -> pd.DataFrame:
        """Mean distance between each pair of LFs over the rows where both vote.

        Parameters
        ----------
        squared : bool, default=False
            Average squared distances instead.

        Returns
        -------
        distances : pandas.DataFrame of shape (n_lfs, n_lfs)
            Indexed and labeled by LF name; NaN for pairs that never co-vote.
        """
        counts, sums, sq_sums = self._distance_sums()
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = np.where(counts > 0, (sq_sums if squared else sums) / counts, np.nan)
        return pd.DataFrame(mean, index=self.lf_names, columns=self.lf_names)

    def lf_mean_distances(self, squared: bool = False) -> np.ndarray:
        """For each LF, the mean distance to the other LFs' votes on common rows.

        Pools every (row, other LF) pair where both vote, so LFs that co-vote often
        weigh more. NaN for an LF that never co-votes.

        Returns
        -------
        mean_distances : ndarray of shape (n_lfs,)
        """
        counts, sums, sq_sums = self._distance_sums()
        np.fill_diagonal(counts, 0.0)
        total = sq_sums if squared else sums
        np.fill_diagonal(total, 0.0)
        n = counts.sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(n > 0, total.sum(axis=1) / n, np.nan)

    # -- Snorkel-style counts --------------------------------------------------------
    def label_coverage(self) -> float:
        """Fraction of rows with at least one vote."""
        return float(self._votes.any(axis=1).mean())

    def label_overlap(self) -> float:
        """Fraction of rows with at least two votes."""
        return float((self._votes.sum(axis=1) > 1).mean())

    def label_conflict(self) -> float:
        """Fraction of rows where two LFs vote different labels."""
        return float(self._conflicted_rows().mean())

    def lf_coverages(self) -> np.ndarray:
        """Fraction of rows each LF votes on, shape (n_lfs,)."""
        return self._votes.mean(axis=0)

    def lf_overlaps(self) -> np.ndarray:
        """Fraction of rows where the LF and another LF vote, shape (n_lfs,)."""
        overlapped = self._votes.sum(axis=1) > 1
        return (self._votes & overlapped[:, None]).mean(axis=0)

    def _differs(self) -> np.ndarray:
        """(n_samples, n_lfs): the LF votes and another LF votes a different label."""
        m = self.L.shape[1]
        out = np.zeros(self._votes.shape, dtype=bool)
        for a in range(m):
            if self._finite:
                diff = (
                    self._votes[:, a, None]
                    & self._votes
                    & (self.L != self.L[:, a, None])
                )
            else:
                dist = self._pair_distances(a)
                with np.errstate(invalid="ignore"):
                    diff = np.nan_to_num(dist, nan=0.0) > 1e-9
            out[:, a] = diff.any(axis=1)
        return out

    def _conflicted_rows(self) -> np.ndarray:
        return self._differs().any(axis=1)

    def lf_conflicts(self) -> np.ndarray:
        """Fraction of rows where another LF votes differently, shape (n_lfs,)."""
        return self._differs().mean(axis=0)

    # -- against gold labels and a fitted model ----------------------------------------
    def _check_gold(self, Y: Any) -> np.ndarray:
        n = self.L.shape[0]
        if self._finite:
            Y = check_label_matrix(
                np.asarray(Y).reshape(-1, 1), n_labels=len(self.space), name="Y"
            )[:, 0]
            if Y.shape[0] != n:
                raise ValueError(
                    f"Y must have {n} entries, one per row of L; got {Y.shape[0]}."
                )
            return Y
        d = self.L.shape[2]
        try:
            Y = np.array(Y, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError(
                f"Y must be a numeric array of shape ({n}, {d}), one gold point per "
                "row of L, with a row of NaN where the gold label is unknown (not "
                "None); got a ragged or non-numeric sequence."
            ) from None
        if Y.ndim == 1 and d == 1:
            Y = Y[:, None]
        if Y.shape != (n, d):
            raise ValueError(f"Y must have shape ({n}, {d}); got {Y.shape}.")
        # The checks L gets: a gold point that is partly NaN, infinite or off the
        # manifold would give inf or distances of another geometry in the summary.
        nan = np.isnan(Y)
        partial = nan.any(axis=1) & ~nan.all(axis=1)
        if partial.any():
            i = int(np.flatnonzero(partial)[0])
            raise ValueError(
                f"Y[{i}] is partly NaN ({Y[i].tolist()}); a gold label that is "
                "unknown must be a whole row of NaN."
            )
        infinite = np.isinf(Y).any(axis=1)
        if infinite.any():
            i = int(np.flatnonzero(infinite)[0])
            raise ValueError(
                f"Y[{i}] is not finite: {Y[i].tolist()}. Give the gold point, or a "
                "whole row of NaN where it is unknown."
            )
        if hasattr(self.space, "belongs") and hasattr(self.space, "projection"):
            # Raises on an off-manifold point; the projected copy is dropped, so the
            # gold points are analysed as given, like the votes.
            check_points(
                Y,
                self.space,
                name="Y",
                atol=self._atol,
                allow_nan=True,
                axis_names=("row",),
            )
        return Y

    def _gold_distances(self, Y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Distances (n, m) from each vote to the gold label, valid mask (n, m)."""
        if self._finite:
            valid = self._votes & (Y[:, None] != ABSTAIN)
            return _masked_distances(self.space, self.L, Y[:, None], valid), valid
        valid = self._votes & ~np.isnan(Y).any(axis=1)[:, None]
        with np.errstate(invalid="ignore"):
            dist = np.asarray(self.space.dist(self.L, Y[:, None, :]))
        return np.where(valid, dist, np.nan), valid

    def lf_summary(self, Y: Any = None, label_model: Any = None) -> pd.DataFrame:
        """Per-LF statistics as a DataFrame indexed by LF name.

        Parameters
        ----------
        Y : array-like, optional
            Gold labels for a development set: indices of shape (n_samples,) (``-1``
            where unknown) for finite spaces, points of shape (n_samples, ambient_dim)
            for manifolds (a whole row of NaN where unknown; the points are checked
            as ``L`` is: finite and on the manifold up to ``atol``). Adds empirical
            columns.
        label_model : fitted label model, optional
            A fitted ``StructuredLabelModel`` or ``ManifoldLabelModel`` over this
            analysis's ``space`` and LFs; adds its estimated ``E[d^2]`` and weight
            of each LF (no gold labels needed).

        Returns
        -------
        summary : pandas.DataFrame
            Columns ``j``, ``Coverage``, ``Overlaps``, ``Conflicts``, ``Mean dist.``
            (mean distance to co-voting LFs, :meth:`lf_mean_distances`); with ``Y``:
            ``Emp. Acc.`` (finite only: exact matches), ``Emp. mean dist.`` and
            ``Emp. E[d^2]``; with ``label_model``: ``Est. E[d^2]`` and
            ``Learned Weight`` (``get_weights()`` for finite models, ``weights_`` for
            manifold models).

        Raises
        ------
        ValueError
            If ``Y`` is malformed (for a manifold also: a point partly NaN, not
            finite or off the manifold), or ``label_model`` is not fitted, was fitted on
            another space than ``space`` or on another number of LFs.
        """
        names = self.lf_names
        m = len(names)
        d: dict[str, Any] = {
            "j": np.arange(m),
            "Coverage": self.lf_coverages(),
            "Overlaps": self.lf_overlaps(),
            "Conflicts": self.lf_conflicts(),
            "Mean dist.": self.lf_mean_distances(),
        }
        if Y is not None:
            Y = self._check_gold(Y)
            dist, valid = self._gold_distances(Y)
            n_valid = valid.sum(axis=0)
            with np.errstate(invalid="ignore", divide="ignore"):
                if self._finite:
                    hits = (self.L == Y[:, None]) & valid
                    d["Emp. Acc."] = np.where(
                        n_valid > 0, hits.sum(axis=0) / n_valid, np.nan
                    )
                d["Emp. mean dist."] = np.where(
                    n_valid > 0, np.nansum(dist, axis=0) / n_valid, np.nan
                )
                d["Emp. E[d^2]"] = np.where(
                    n_valid > 0, np.nansum(dist**2, axis=0) / n_valid, np.nan
                )
        if label_model is not None:
            if not hasattr(label_model, "expected_sq_dist_"):
                raise ValueError(
                    f"label_model must be fitted (it has no expected_sq_dist_); got "
                    f"{type(label_model).__name__}. Call label_model.fit(L) first."
                )
            model_space = getattr(label_model, "space", None)
            if model_space is not None and model_space != self.space:
                # E[d^2] and weights in another metric would be read as this one's
                raise ValueError(
                    f"label_model was fitted on {model_space!r}, but this analysis is "
                    f"over {self.space!r}; pass a label model fitted on L's space."
                )
            est = np.asarray(label_model.expected_sq_dist_, dtype=float)
            if hasattr(label_model, "weights_"):
                weights = np.asarray(label_model.weights_, dtype=float)
            else:
                weights = np.asarray(label_model.get_weights(), dtype=float)
            if est.shape != (m,) or weights.shape != (m,):
                raise ValueError(
                    f"label_model was fitted with {est.shape[0]} labeling functions "
                    f"but L has {m}; pass the model fitted on these LFs."
                )
            d["Est. E[d^2]"] = est
            d["Learned Weight"] = weights
        return pd.DataFrame(d, index=pd.Index(names, name=None))

    # -- dependencies between LFs ------------------------------------------------------
    def lf_dependencies(
        self, label_model: Any = None, alpha: float = 0.05, **options: Any
    ) -> pd.DataFrame:
        """Pairs of LFs that agree more than conditionally independent LFs would.

        Runs :func:`snorkel_structured.estimators.dependencies.lf_dependency_test` on
        these votes (needs at least 4 LFs); ``lf_a``/``lf_b`` hold LF names. Pass the
        flagged pairs, as indices, to ``fit(..., dependencies=...)`` with
        :meth:`dependent_lf_pairs`.

        Parameters
        ----------
        label_model : fitted StructuredLabelModel, optional
            Finite spaces: gives the rank of the joint tables (its support size), or
            the null model with ``method="model"``. Manifolds need none.
        alpha : float, default=0.05
            Family-wise false-alarm rate over all pairs.
        **options
            ``method`` ("moments", the default model-free test, or "model", a score
            test against ``label_model``, fitted on these votes when not given),
            ``n_components``, ``n_boot`` and ``seed`` of the moments test.

        Returns
        -------
        result : pandas.DataFrame
            One row per pair: ``lf_a``, ``lf_b``, ``n_both``, ``observed``,
            ``expected``, ``z``, ``p_value``, ``dependent``.
        """
        return self._dependency_frame(label_model, alpha, self.lf_names, options)

    def _dependency_frame(
        self,
        label_model: Any,
        alpha: float,
        lf_names: Any,
        options: dict[str, Any],
    ) -> pd.DataFrame:
        if options.get("method") == "model":
            # the score test reads (or fits) a label model: the label-model layer
            from snorkel_structured.label_model._dependency_score import (
                model_dependency_test,
            )

            extra = sorted(set(options) - {"method", "seed"})  # seed: deterministic
            if extra:
                raise ValueError(
                    f"method='model' takes no options {extra}; they belong to the "
                    "moments test (method='moments')."
                )
            return model_dependency_test(
                self.L,
                label_model,
                space=self.space,
                alpha=alpha,
                lf_names=lf_names,
            )
        from snorkel_structured.estimators.dependencies import lf_dependency_test

        return lf_dependency_test(
            self.L,
            label_model,
            space=self.space,
            alpha=alpha,
            lf_names=lf_names,
            **options,
        )

    def dependent_lf_pairs(
        self, label_model: Any = None, alpha: float = 0.05, **options: Any
    ) -> list[tuple[int, int]]:
        """The flagged pairs of :meth:`lf_dependencies` as (a, b) LF indices.

        Ready for ``StructuredLabelModel.fit(L, dependencies=...)``.
        """
        from snorkel_structured.estimators.dependencies import dependent_pairs

        return dependent_pairs(
            self._dependency_frame(label_model, alpha, None, options)
        )
