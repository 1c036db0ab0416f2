"""Ranking tasks from scikit-learn's bundled tables (wines, tumours, diabetes patients).

Each task orders small groups of table rows by one real quantity; each LF orders the
group by one other column and abstains on ties (or, for sparse LFs, unless the group's
values are far apart). The tasks are built to show one regime each, named in their
``description``: a dominant LF with sparse others (wines), clusters of LFs sharing a
source (tumours), a consensus truth (a composite of the LFs' own signals; diabetes).
The tables ship with scikit-learn (``load_*``, never ``fetch_*``): nothing is
downloaded.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from snorkel_structured.datasets._task import WeakSupervisionTask
from snorkel_structured.datasets.rankings import (
    ColumnLF,
    _table_task,
    split_groups,
    train_scale,
)

__all__ = [
    "METABOLIC_SIGNALS",
    "load_metabolic_score_rankings",
    "load_tumour_concavity_rankings",
    "load_wine_flavanoid_rankings",
    "metabolic_score",
]

# (LF name, wine column, sign, min_gap in training standard deviations)
_WINE_LFS = (
    ("by_total_phenols", "total_phenols", 1.0, 0.0),  # the dominant LF
    ("by_od280", "od280/od315_of_diluted_wines", 1.0, 0.7),
    ("by_proanthocyanins", "proanthocyanins", 1.0, 0.7),
    ("by_hue", "hue", 1.0, 0.7),
    ("by_low_nonflavanoid_phenols", "nonflavanoid_phenols", -1.0, 0.7),
    ("by_low_alcalinity", "alcalinity_of_ash", -1.0, 0.7),
)

# (LF name, breast-cancer column): a size cluster, a compactness pair, smoothness.
_TUMOUR_LFS = (
    ("by_mean_radius", "mean radius"),
    ("by_mean_perimeter", "mean perimeter"),
    ("by_mean_area", "mean area"),
    ("by_worst_radius", "worst radius"),
    ("by_mean_compactness", "mean compactness"),
    ("by_worst_compactness", "worst compactness"),
    ("by_worst_smoothness", "worst smoothness"),
)

METABOLIC_SIGNALS = (
    ("by_bmi", "bmi", 1.0),
    ("by_blood_pressure", "bp", 1.0),
    ("by_triglycerides", "s5", 1.0),
    ("by_glucose", "s6", 1.0),
    ("by_low_hdl", "s3", -1.0),
)
"""(LF name, diabetes column, sign) of the metabolic score's five signals."""


def load_wine_flavanoid_rankings(
    seed: Any = 0, *, n_train: int = 1500, n_test: int = 500, n_items: int = 4
) -> WeakSupervisionTask:
    """Order groups of 4 wines by flavanoid content: a dominant LF with sparse others.

    The 178 wines of scikit-learn's ``load_wine`` are split 70/30 by wine before
    groups are drawn (:func:`~snorkel_structured.datasets.split_groups`). The label
    orders a group by ``flavanoids``, which no LF reads. The dominant LF orders by
    total phenols (flavanoids are most of them) and abstains only on ties (votes on
    93-94% of groups); the 5 sparse LFs order by OD280/OD315, proanthocyanins, hue,
    low non-flavanoid phenols and low ash alkalinity, and abstain unless every two
    wines of the group are at least 0.7 standard deviations (over the training
    wines) apart on their column (each votes on 2-5% of groups, from 1.8% for
    OD280/OD315 to 5.4% for proanthocyanins; figures for seeds 0-2 at the default
    sizes). Metric: Kendall distance, normalized by its maximum
    ``n_items (n_items - 1) / 2``.

    Parameters
    ----------
    seed : None, int or numpy.random.Generator, default=0
        The wine split and the groups.
    n_train, n_test : int
        Groups per split.
    n_items : int, default=4

    Returns
    -------
    task : WeakSupervisionTask
        ``L_*`` of shape (n_groups, 6), labels in ``Permutations(n_items)``.
    """
    from sklearn.datasets import load_wine

    wines = load_wine(as_frame=True).frame
    members = split_groups(
        len(wines), seed, n_train=n_train, n_test=n_test, n_items=n_items
    )
    lfs = [
        _scaled_lf(name, sign * wines[col].to_numpy(), gap, members[0])
        for name, col, sign, gap in _WINE_LFS
    ]
    return _table_task(
        "wine_flavanoid_rankings",
        lfs,
        wines["flavanoids"].to_numpy(dtype=np.float64),
        members,
        items="wines",
        description=(
            "Regime: a dominant LF with sparse others. Groups of "
            f"{n_items} of scikit-learn's 178 wines (split by wine) ordered by "
            "flavanoids; the dominant LF orders by total phenols (abstains on ties), "
            "5 sparse LFs (OD280/OD315, proanthocyanins, hue, low non-flavanoid "
            "phenols, low ash alkalinity) vote only when the group's values are at "
            "least 0.7 standard deviations apart."
        ),
    )


def load_tumour_concavity_rankings(
    seed: Any = 0, *, n_train: int = 1500, n_test: int = 500, n_items: int = 5
) -> WeakSupervisionTask:
    """Order groups of 5 tumours by concavity: clusters of LFs sharing a source.

    The 569 tumours of scikit-learn's ``load_breast_cancer`` are split 70/30 by
    tumour before groups are drawn. The label orders a group by ``worst concave
    points`` (the mean of the three largest numbers of concave contour points, the
    strongest single predictor of malignancy), which no LF reads. The 7 LFs order by
    one cell-nucleus measure each and abstain on ties: four *size* measures (mean
    radius, mean perimeter, mean area, worst radius) that are proxies of one latent
    size and agree with each other (rank correlations 0.98-1.0) far more than with
    the truth (about 0.75); two *compactness* measures (mean and worst, correlation
    0.9 with each other, 0.84 with the truth); and worst smoothness (0.54). LFs of
    a cluster make correlated errors, so they are not conditionally independent
    given the truth. Metric: Kendall distance, normalized by ``n_items (n_items -
    1) / 2``.

    Parameters
    ----------
    seed : None, int or numpy.random.Generator, default=0
    n_train, n_test : int
        Groups per split.
    n_items : int, default=5

    Returns
    -------
    task : WeakSupervisionTask
        ``L_*`` of shape (n_groups, 7), labels in ``Permutations(n_items)``.
    """
    from sklearn.datasets import load_breast_cancer

    tumours = load_breast_cancer(as_frame=True).frame
    members = split_groups(
        len(tumours), seed, n_train=n_train, n_test=n_test, n_items=n_items
    )
    lfs = [ColumnLF(name, tumours[col].to_numpy()) for name, col in _TUMOUR_LFS]
    return _table_task(
        "tumour_concavity_rankings",
        lfs,
        tumours["worst concave points"].to_numpy(dtype=np.float64),
        members,
        items="tumours",
        description=(
            "Regime: clusters of LFs sharing a source. Groups of "
            f"{n_items} of scikit-learn's 569 breast tumours (split by tumour) "
            "ordered by worst concave points; 4 LFs order by size measures (mean "
            "radius, perimeter, area, worst radius: one latent size), 2 by "
            "compactness (mean, worst), 1 by worst smoothness; all abstain on ties."
        ),
    )


def metabolic_score(patients: pd.DataFrame) -> np.ndarray:
    """The metabolic score of diabetes patients: the mean z-score of five signals.

    Parameters
    ----------
    patients : pandas.DataFrame
        ``load_diabetes(as_frame=True).frame`` (or rows of it, with the columns of
        :data:`METABOLIC_SIGNALS`).

    Returns
    -------
    score : ndarray of float of shape (n_patients,)
        ``mean_c sign_c (x_c - mean(x_c)) / std(x_c)`` over BMI, blood pressure,
        triglycerides (``s5``), blood sugar (``s6``) and minus HDL (``s3``), the
        statistics taken over the rows given: the shape of a continuous metabolic
        syndrome score.
    """
    z = [
        sign * (patients[col] - patients[col].mean()) / patients[col].std(ddof=0)
        for _, col, sign in METABOLIC_SIGNALS
    ]
    return np.mean(np.column_stack(z), axis=1)


def load_metabolic_score_rankings(
    seed: Any = 0, *, n_train: int = 1500, n_test: int = 500, n_items: int = 6
) -> WeakSupervisionTask:
    """Order groups of 6 patients by a metabolic score: a consensus truth.

    The 442 patients of scikit-learn's ``load_diabetes`` are split 70/30 by patient
    before groups are drawn. The label orders a group by :func:`metabolic_score`,
    the mean z-score of BMI, blood pressure, triglycerides, blood sugar and low HDL:
    the composite of the 5 LFs' own signals, each LF ordering by one of them (so
    equal LF weights are right; no LF is better than the others by design). The
    LFs abstain on ties (blood pressure and blood sugar take few distinct values,
    so they abstain on about a quarter and a third of groups). Metric: Kendall
    distance, normalized by ``n_items (n_items - 1) / 2`` (15 for 6 items).

    Parameters
    ----------
    seed : None, int or numpy.random.Generator, default=0
    n_train, n_test : int
        Groups per split.
    n_items : int, default=6

    Returns
    -------
    task : WeakSupervisionTask
        ``L_*`` of shape (n_groups, 5), labels in ``Permutations(n_items)``.
    """
    from sklearn.datasets import load_diabetes

    patients = load_diabetes(as_frame=True).frame
    members = split_groups(
        len(patients), seed, n_train=n_train, n_test=n_test, n_items=n_items
    )
    lfs = [
        ColumnLF(name, sign * patients[col].to_numpy())
        for name, col, sign in METABOLIC_SIGNALS
    ]
    return _table_task(
        "metabolic_score_rankings",
        lfs,
        metabolic_score(patients),
        members,
        items="patients",
        description=(
            "Regime: consensus truth (equal weights are right). Groups of "
            f"{n_items} of scikit-learn's 442 diabetes patients (split by patient) "
            "ordered by a metabolic score, the mean z-score of BMI, blood pressure, "
            "triglycerides, blood sugar and low HDL; each of the 5 LFs orders by one "
            "of these signals and abstains on ties."
        ),
    )


def _scaled_lf(
    name: str, values: np.ndarray, gap_sd: float, train_members: np.ndarray
) -> ColumnLF:
    """A column LF whose ``min_gap`` is ``gap_sd`` training standard deviations."""
    values = np.asarray(values, dtype=np.float64)
    return ColumnLF(name, values, min_gap=gap_sd * train_scale(values, train_members))
