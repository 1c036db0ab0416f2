"""Value nodes of the model format: what ``save`` writes into the JSON header.

Values are JSON nodes: ``null``, booleans, integers and strings as themselves; every
other value is an object with a ``"type"``: ``float`` (finite floats as numbers,
``nan``/``inf`` as strings), ``array`` and ``scalar`` (a key into the archive; NumPy
scalars keep their dtype), ``list``, ``tuple`` and ``dict`` (as ``[key, value]``
pairs, so keys need not be strings), ``space`` (``Discrete``, ``Permutations``,
``FiniteMetricSpace`` and ``GraphSpace`` by their items and distances,
``Euclidean``/``Sphere``/``Hyperbolic`` by ``dim``, ``ProductManifold`` by its
factors), ``object`` (one of the library's own small result classes, by qualified name
and fields, looked up in an explicit allowlist, never imported by name from the file),
``generator`` (a NumPy ``Generator`` by bit generator name and state), ``warning``
(category, from builtins or ``snorkel_structured.exceptions``, and message), and
pandas ``index``/``series``/``dataframe`` (arrays and labels). A value of any other
kind makes the encoder raise ``ValueError`` naming it: nothing is pickled.

See :mod:`snorkel_structured._persistence` for the file around these nodes.
"""

from __future__ import annotations

import dataclasses
import math
import zipfile
from collections.abc import Callable
from typing import Any

import numpy as np


def _qualname(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


# -- the allowlist of our own classes that may appear in a fitted state -------------------
@dataclasses.dataclass(frozen=True)
class _Codec:
    """How to take an allowed object apart (``fields``) and build it back."""

    cls: type
    fields: tuple[str, ...]
    build: Callable[[dict[str, Any]], Any]
    # fields that files written before they existed lack (built with the default)
    optional: tuple[str, ...] = ()


def _registry() -> dict[str, _Codec]:
    """Our classes by qualified name (imported here: the estimators import this module)."""
    from snorkel_structured.estimators._manifold_stats import (
        LabeledManifoldStats,
        ManifoldStats,
    )
    from snorkel_structured.estimators._stats import VoteStats
    from snorkel_structured.estimators._support_posterior import SupportPosterior
    from snorkel_structured.estimators.robust_manifold import OutlierBackground
    from snorkel_structured.noise.manifold import RiemannianGaussian, WrappedNormal
    from snorkel_structured.rankings.estimate import RankingStats

    codecs: list[_Codec] = []
    for cls in (
        VoteStats,
        ManifoldStats,
        LabeledManifoldStats,
        OutlierBackground,
        RankingStats,
    ):
        names = tuple(f.name for f in dataclasses.fields(cls) if f.init)
        codecs.append(_Codec(cls, names, lambda kw, cls=cls: cls(**kw)))
    codecs.append(
        _Codec(
            SupportPosterior,
            ("table", "log_prior", "support", "r", "groups", "group_corr"),
            lambda kw: SupportPosterior(**kw),
            optional=("groups", "group_corr"),
        )
    )
    for cls in (WrappedNormal, RiemannianGaussian):
        codecs.append(_Codec(cls, ("space",), lambda kw, cls=cls: cls(kw["space"])))
    registry = {_qualname(c.cls): c for c in codecs}
    # files written before the posterior table moved down to the estimators
    registry["snorkel_structured.label_model._posterior._SupportPosterior"] = registry[
        _qualname(SupportPosterior)
    ]
    return registry


def _warning_categories() -> dict[str, type[Warning]]:
    import builtins

    from snorkel_structured import exceptions

    cats = [
        v
        for v in vars(builtins).values()
        if isinstance(v, type) and issubclass(v, Warning)
    ]
    cats += [
        v
        for v in vars(exceptions).values()
        if isinstance(v, type)
        and issubclass(v, Warning)
        and v.__module__ == exceptions.__name__
    ]
    return {_qualname(c): c for c in cats}


_BIT_GENERATORS = ("PCG64", "PCG64DXSM", "MT19937", "Philox", "SFC64")


def _plain(value: Any) -> Any:
    """NumPy scalars in (nested tuples of) items as Python scalars."""
    if isinstance(value, tuple):
        return tuple(_plain(v) for v in value)
    if isinstance(value, np.generic):
        return value.item()
    return value


# -- encoding ------------------------------------------------------------------------------
class _Encoder:
    """Values -> JSON nodes, collecting arrays for the archive."""

    def __init__(self) -> None:
        self.arrays: dict[str, np.ndarray] = {}
        self.registry = _registry()

    def _store(self, arr: np.ndarray, path: str) -> str:
        if arr.dtype.hasobject:
            raise ValueError(
                f"Cannot save {path}: an array of dtype {arr.dtype} (Python objects) "
                "cannot be saved without pickle; convert it to a numeric or string "
                "array."
            )
        key = f"a{len(self.arrays)}"
        self.arrays[key] = arr
        return key

    def encode(self, value: Any, path: str) -> Any:
        if value is None or isinstance(value, (bool, str)):
            return value
        if isinstance(value, int) and type(value) is int:
            return value
        if type(value) is float:
            if math.isfinite(value):
                return {"type": "float", "value": value}
            return {"type": "float", "value": repr(value)}  # 'nan', 'inf', '-inf'
        if isinstance(value, np.ndarray):
            return {"type": "array", "key": self._store(np.asarray(value), path)}
        if isinstance(value, np.generic):
            return {"type": "scalar", "key": self._store(np.asarray(value), path)}
        if type(value) in (list, tuple):
            return {
                "type": type(value).__name__,
                "items": [self.encode(v, f"{path}[{i}]") for i, v in enumerate(value)],
            }
        if type(value) is dict:
            return {
                "type": "dict",
                "items": [
                    [
                        self.encode(k, f"{path} (a key)"),
                        self.encode(v, f"{path}[{k!r}]"),
                    ]
                    for k, v in value.items()
                ],
            }
        space = self._encode_space(value, path)
        if space is not None:
            return space
        codec = self.registry.get(_qualname(type(value)))
        if codec is not None and type(value) is codec.cls:
            return {
                "type": "object",
                "class": _qualname(codec.cls),
                "fields": {
                    f: self.encode(getattr(value, f), f"{path}.{f}")
                    for f in codec.fields
                },
            }
        if isinstance(value, np.random.Generator):
            name = type(value.bit_generator).__name__
            if name in _BIT_GENERATORS:
                return {
                    "type": "generator",
                    "bit_generator": name,
                    "state": self.encode(value.bit_generator.state, f"{path}.state"),
                }
        if isinstance(value, Warning) and _qualname(type(value)) in (
            _warning_categories()
        ):
            return {
                "type": "warning",
                "category": _qualname(type(value)),
                "message": str(value),
            }
        pandas = self._encode_pandas(value, path)
        if pandas is not None:
            return pandas
        raise ValueError(
            f"Cannot save {path}: a {type(value).__module__}.{type(value).__qualname__} "
            "is not one of the types the model format stores (numbers, strings, None, "
            "arrays, lists/tuples/dicts of these, label spaces, NumPy Generators, "
            "pandas objects and the library's own result classes). Nothing was written."
        )

    def _encode_space(self, space: Any, path: str) -> dict[str, Any] | None:
        from snorkel_structured.spaces.finite import Discrete, FiniteMetricSpace
        from snorkel_structured.spaces.graphs import GraphSpace
        from snorkel_structured.spaces.manifolds import (
            Euclidean,
            Hyperbolic,
            ProductManifold,
            Sphere,
        )
        from snorkel_structured.spaces.permutations import Permutations
        from snorkel_structured.spaces.rankings import Rankings

        kind = type(space)
        if kind is Rankings:
            node = {"kind": "Rankings", "n_items": int(space.n_items)}
        elif kind is Discrete:
            node = {"kind": "Discrete", "cardinality": int(space.cardinality)}
        elif kind is Permutations:
            node = {
                "kind": "Permutations",
                "n_items": int(space.n_items),
                "metric": str(space.metric),
            }
        elif kind in (FiniteMetricSpace, GraphSpace):
            node = {
                "kind": kind.__name__,
                # NumPy scalar items become Python ones (equal and hashing alike), so a
                # space of r integer items is r JSON numbers, not r arrays.
                "items": self.encode(_plain(tuple(space.items)), f"{path}.items"),
                "distances": self.encode(
                    np.asarray(space.distance_matrix), f"{path}.distance_matrix"
                ),
            }
        elif kind in (Euclidean, Sphere, Hyperbolic):
            node = {"kind": kind.__name__, "dim": int(space.dim)}
        elif kind is ProductManifold:
            node = {
                "kind": "ProductManifold",
                "factors": [
                    self._encode_space(f, f"{path}.factors[{i}]")
                    for i, f in enumerate(space.factors)
                ],
            }
            if any(f is None for f in node["factors"]):
                raise ValueError(
                    f"Cannot save {path}: a factor of the ProductManifold is not a "
                    "Euclidean, Sphere or Hyperbolic space."
                )
        elif isinstance(
            space, (FiniteMetricSpace, Euclidean, Sphere, Hyperbolic, ProductManifold)
        ):
            raise ValueError(
                f"Cannot save {path}: {kind.__qualname__} is a subclass of a "
                "snorkel_structured space that the model format does not describe; "
                "use FiniteMetricSpace(items, distances) or one of the library's spaces."
            )
        else:
            return None
        node["type"] = "space"
        # The spec must rebuild the very same space (a new attribute that __eq__ reads
        # would otherwise be lost silently).
        try:
            rebuilt = _Decoder({}, "", self.arrays).decode(node, path)
            same = rebuilt == space
        except ValueError:
            same = False
        if not same:
            raise ValueError(
                f"Cannot save {path}: {space!r} cannot be rebuilt from its description "
                f"{ {k: v for k, v in node.items() if k != 'distances'} } (its items "
                "must be strings, numbers, booleans or tuples of these)."
            )
        return node

    def _encode_pandas(self, value: Any, path: str) -> dict[str, Any] | None:
        import pandas as pd

        if type(value) in (pd.Index, pd.RangeIndex):
            values = value.to_numpy()
            if values.dtype.hasobject:
                values = self._object_to_str(values, path)
            return {
                "type": "index",
                "values": self.encode(values, f"{path}.index"),
                "name": self.encode(value.name, f"{path}.name"),
            }
        if type(value) is pd.Series:
            values = value.to_numpy()
            if values.dtype.hasobject:
                values = self._object_to_str(values, path)
            return {
                "type": "series",
                "values": self.encode(values, path),
                "index": self._encode_pandas(value.index, f"{path}.index"),
                "name": self.encode(value.name, f"{path}.name"),
            }
        if type(value) is pd.DataFrame:
            return {
                "type": "dataframe",
                "columns": self.encode(list(value.columns), f"{path}.columns"),
                "data": [
                    self._encode_pandas(value.iloc[:, j], f"{path}[{c!r}]")
                    for j, c in enumerate(value.columns)
                ],
                "index": self._encode_pandas(value.index, f"{path}.index"),
            }
        if isinstance(value, (pd.Index, pd.Series, pd.DataFrame)):
            raise ValueError(
                f"Cannot save {path}: a {type(value).__name__} (MultiIndex, categorical "
                "or datetime index) is not stored by the model format."
            )
        return None

    @staticmethod
    def _object_to_str(values: np.ndarray, path: str) -> np.ndarray:
        if all(isinstance(v, str) for v in values.tolist()):
            return values.astype(str)
        raise ValueError(
            f"Cannot save {path}: pandas values of dtype object that are not all "
            "strings cannot be saved without pickle."
        )


# -- decoding ------------------------------------------------------------------------------
class _Decoder:
    """JSON nodes -> values; every failure is a ValueError saying where."""

    def __init__(
        self, arrays: Any, source: str, pending: dict[str, np.ndarray] | None = None
    ) -> None:
        self.arrays = arrays
        self.source = source
        self.pending = pending or {}  # arrays not yet written (the check in save)

    def _fail(self, path: str, problem: str) -> ValueError:
        where = f"{self.source!r}: " if self.source else ""
        return ValueError(f"{where}{path} {problem}")

    def _array(self, node: dict[str, Any], path: str) -> np.ndarray:
        key = node.get("key")
        if key in self.pending:
            return self.pending[key]
        if not isinstance(key, str) or key not in self.arrays:
            raise self._fail(
                path, f"refers to array {key!r}, which is missing from the file."
            )
        try:
            return self.arrays[key]
        except (ValueError, OSError, EOFError, zipfile.BadZipFile) as e:
            raise self._fail(path, f"has an unreadable array {key!r} ({e}).") from None

    def decode(self, node: Any, path: str) -> Any:
        if node is None or isinstance(node, (bool, str)):
            return node
        if isinstance(node, int):
            return node
        if not isinstance(node, dict) or not isinstance(node.get("type"), str):
            raise self._fail(path, f"is not a valid value description: {node!r:.80}.")
        kind = node["type"]
        try:
            if kind == "float":
                v = node["value"]
                if isinstance(v, str) and v in ("nan", "inf", "-inf"):
                    return float(v)
                if isinstance(v, (int, float)) and not isinstance(v, bool):
                    return float(v)
                raise KeyError("value")
            if kind == "array":
                return self._array(node, path)
            if kind == "scalar":
                arr = self._array(node, path)
                if arr.ndim != 0:
                    raise self._fail(
                        path, f"should be a scalar; got shape {arr.shape}."
                    )
                return arr[()]
            if kind in ("list", "tuple"):
                items = [
                    self.decode(v, f"{path}[{i}]") for i, v in enumerate(node["items"])
                ]
                return items if kind == "list" else tuple(items)
            if kind == "dict":
                out = {}
                for pair in node["items"]:
                    k = self.decode(pair[0], f"{path} (a key)")
                    out[k] = self.decode(pair[1], f"{path}[{k!r}]")
                return out
            if kind == "space":
                return self._decode_space(node, path)
            if kind == "object":
                return self._decode_object(node, path)
            if kind == "generator":
                name = node["bit_generator"]
                if name not in _BIT_GENERATORS:
                    raise self._fail(path, f"names an unknown bit generator {name!r}.")
                bit = getattr(np.random, name)()
                state = self.decode(node["state"], f"{path}.state")
                try:
                    bit.state = state
                except ValueError as e:
                    raise self._fail(
                        path, f"has an invalid {name} state ({e})."
                    ) from None
                return np.random.Generator(bit)
            if kind == "warning":
                cats = _warning_categories()
                if node["category"] not in cats:
                    raise self._fail(
                        path, f"names an unknown warning category {node['category']!r}."
                    )
                return cats[node["category"]](str(node["message"]))
            if kind in ("index", "series", "dataframe"):
                return self._decode_pandas(node, path)
        except (KeyError, TypeError, IndexError) as e:
            raise self._fail(
                path, f"has a malformed {kind} description ({e!r})."
            ) from None
        raise self._fail(path, f"has an unknown value type {kind!r}.")

    def _decode_object(self, node: dict[str, Any], path: str) -> Any:
        name = node["class"]
        codec = _registry().get(name) if isinstance(name, str) else None
        if codec is None:
            raise self._fail(
                path,
                f"names class {name!r}, which is not one the model format stores "
                "(it is not imported).",
            )
        fields = node["fields"]
        known = set(fields) | set(codec.optional) if isinstance(fields, dict) else None
        if (
            known is None
            or set(fields) - set(codec.fields)
            or known != set(codec.fields)
        ):
            raise self._fail(
                path,
                f"must have the fields {list(codec.fields)} of {name}; got "
                f"{sorted(fields) if isinstance(fields, dict) else fields!r}.",
            )
        kw = {
            f: self.decode(fields[f], f"{path}.{f}")
            for f in codec.fields
            if f in fields
        }
        try:
            return codec.build(kw)
        except (ValueError, TypeError, AttributeError) as e:
            raise self._fail(path, f"cannot be rebuilt as a {name}: {e}") from None

    def _decode_space(self, node: dict[str, Any], path: str) -> Any:
        from snorkel_structured.spaces.finite import Discrete, FiniteMetricSpace
        from snorkel_structured.spaces.graphs import GraphSpace
        from snorkel_structured.spaces.manifolds import (
            Euclidean,
            Hyperbolic,
            ProductManifold,
            Sphere,
        )
        from snorkel_structured.spaces.permutations import Permutations
        from snorkel_structured.spaces.rankings import Rankings

        kind = node["kind"]
        try:
            if kind == "Rankings":
                return Rankings(node["n_items"])
            if kind == "Discrete":
                return Discrete(node["cardinality"])
            if kind == "Permutations":
                return Permutations(node["n_items"], metric=node["metric"])
            if kind in ("FiniteMetricSpace", "GraphSpace"):
                items = self.decode(node["items"], f"{path}.items")
                D = self.decode(node["distances"], f"{path}.distance_matrix")
                if not isinstance(items, tuple) or not isinstance(D, np.ndarray):
                    raise TypeError("items must be a tuple and distances an array")
                if kind == "FiniteMetricSpace":
                    return FiniteMetricSpace(items, D)
                # A GraphSpace is its items and shortest-path distances (the graph
                # itself is not kept): rebuild it through the base constructor.
                space = GraphSpace.__new__(GraphSpace)
                FiniteMetricSpace.__init__(space, items, D)
                return space
            if kind in ("Euclidean", "Sphere", "Hyperbolic"):
                cls = {
                    "Euclidean": Euclidean,
                    "Sphere": Sphere,
                    "Hyperbolic": Hyperbolic,
                }
                return cls[kind](node["dim"])
            if kind == "ProductManifold":
                return ProductManifold(
                    [
                        self._decode_space(f, f"{path}.factors[{i}]")
                        for i, f in enumerate(node["factors"])
                    ]
                )
        except (ValueError, TypeError) as e:
            raise self._fail(path, f"describes an invalid {kind} ({e}).") from None
        raise self._fail(path, f"names an unknown kind of space {kind!r}.")

    def _decode_pandas(self, node: dict[str, Any], path: str) -> Any:
        import pandas as pd

        kind = node["type"]
        if kind == "index":
            return pd.Index(
                self.decode(node["values"], path), name=self.decode(node["name"], path)
            )
        if kind == "series":
            return pd.Series(
                self.decode(node["values"], path),
                index=self._decode_pandas(node["index"], f"{path}.index"),
                name=self.decode(node["name"], f"{path}.name"),
            )
        columns = self.decode(node["columns"], f"{path}.columns")
        data = [
            self._decode_pandas(c, f"{path}[{i}]") for i, c in enumerate(node["data"])
        ]
        index = self._decode_pandas(node["index"], f"{path}.index")
        if len(columns) != len(data):
            raise TypeError("columns and data differ in length")
        frame = pd.DataFrame({i: s.to_numpy() for i, s in enumerate(data)}, index=index)
        frame.columns = pd.Index(columns)
        return frame
