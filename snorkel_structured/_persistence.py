"""Safe persistence for the estimators: ``save(path)`` and ``model.load(path)``.

Snorkel's ``save``/``load`` pickle ``__dict__`` and update it back unchecked, and
unpickling a file runs whatever code the file names. Here a model file is a NumPy
``.npz`` archive (a zip of ``.npy`` arrays, read with ``allow_pickle=False``):

- ``__header__``: a uint8 array holding UTF-8 JSON with ``format``
  (``"snorkel_structured-model"``), ``format_version`` (``FORMAT_VERSION``),
  ``library_version``, ``class`` (module and qualified name of the estimator),
  ``space`` (the label space, see below), ``params`` (``get_params(deep=False)``
  without ``space``), ``fitted`` (bool), ``state`` (every other attribute of the
  instance, fitted or private) and ``attributes`` (name -> kind of each state entry,
  for people reading the file);
- ``a0``, ``a1``, ...: the numeric arrays the header refers to.

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
(category and message), and pandas ``index``/``series``/``dataframe`` (arrays and
labels). A value of any other kind makes ``save`` raise ``ValueError`` naming the
attribute: nothing is pickled.

``load`` rebuilds everything from these nodes, checks the format and library versions
(newer ones are refused), that the file holds this class and this instance's label
space, and then calls the class's ``_validate_state`` hook (presence, shapes and
finiteness of the fitted attributes). Every problem with a file is a ``ValueError``
that names the file.

Files written by ``save`` of earlier versions are pickles; ``load(path, trust=True)``
still reads them (see its warning), and ``pickle.dumps`` of a model (as Dask and
``copy`` use) keeps working, with a stamp checked in ``__setstate__``.
"""

from __future__ import annotations

import dataclasses
import inspect
import io
import json
import math
import os
import pickle
import re
import warnings
import zipfile
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

__all__ = ["FORMAT_VERSION", "PersistenceMixin"]

FORMAT_NAME = "snorkel_structured-model"
# 1 was the pickle written by ``save`` before; 2 is the .npz archive with a JSON header.
FORMAT_VERSION = 2
_PICKLE_FORMAT = 1
_HEADER_KEY = "__header__"
_ZIP_MAGIC = b"PK\x03\x04"


def _library_version() -> str:
    from snorkel_structured import __version__

    return __version__


def _version_tuple(version: Any) -> tuple[int, ...] | None:
    """The release numbers of a version string ("0.1.0rc1" -> (0, 1, 0)); None if none."""
    if not isinstance(version, str):
        return None
    match = re.match(r"^\s*v?(\d+(?:\.\d+)*)", version)
    if match is None:
        return None
    parts = [int(p) for p in match.group(1).split(".")]
    while len(parts) > 1 and parts[-1] == 0:  # 1.0 == 1.0.0
        parts.pop()
    return tuple(parts)


def _newer_than_library(version: Any) -> bool | None:
    """Whether ``version`` is newer than this library (None if it cannot be read)."""
    theirs, ours = _version_tuple(version), _version_tuple(_library_version())
    if theirs is None or ours is None:
        return None
    return theirs > ours


def _qualname(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _param_names(cls: type) -> list[str]:
    sig = inspect.signature(cls.__init__)  # type: ignore[misc]
    return [
        p.name
        for p in sig.parameters.values()
        if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]


def _is_fitted(attrs: dict[str, Any]) -> bool:
    return any(k.endswith("_") and not k.startswith("__") for k in attrs)


def _kind(value: Any) -> str:
    """A short description of a value for the header's ``attributes``."""
    if isinstance(value, np.ndarray):
        return f"ndarray {value.dtype} {value.shape}"
    return type(value).__name__


# -- the allowlist of our own classes that may appear in a fitted state -------------------
@dataclasses.dataclass(frozen=True)
class _Codec:
    """How to take an allowed object apart (``fields``) and build it back."""

    cls: type
    fields: tuple[str, ...]
    build: Callable[[dict[str, Any]], Any]


def _registry() -> dict[str, _Codec]:
    """Our classes by qualified name (imported here: the estimators import this module)."""
    from snorkel_structured.estimators._manifold_stats import (
        LabeledManifoldStats,
        ManifoldStats,
    )
    from snorkel_structured.estimators._stats import VoteStats
    from snorkel_structured.estimators.robust_manifold import OutlierBackground
    from snorkel_structured.label_model._posterior import _SupportPosterior
    from snorkel_structured.noise.manifold import RiemannianGaussian, WrappedNormal

    codecs: list[_Codec] = []
    for cls in (VoteStats, ManifoldStats, LabeledManifoldStats, OutlierBackground):
        names = tuple(f.name for f in dataclasses.fields(cls) if f.init)
        codecs.append(_Codec(cls, names, lambda kw, cls=cls: cls(**kw)))
    codecs.append(
        _Codec(
            _SupportPosterior,
            ("table", "log_prior", "support", "r"),
            lambda kw: _SupportPosterior(**kw),
        )
    )
    for cls in (WrappedNormal, RiemannianGaussian):
        codecs.append(_Codec(cls, ("space",), lambda kw, cls=cls: cls(kw["space"])))
    return {_qualname(c.cls): c for c in codecs}


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


# -- encoding ------------------------------------------------------------------------------
class _Encoder:
    """Values -> JSON nodes, collecting arrays for the archive."""

    def __init__(self) -> None:
        self.arrays: dict[str, np.ndarray] = {}
        self.registry = _registry()

    def _store(self, arr: np.ndarray, path: str) -> str:
        if arr.dtype.hasobject:
            raise ValueError(
                f"{path} is an array of dtype {arr.dtype} (Python objects), which cannot "
                "be saved without pickle; convert it to a numeric or string array."
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

        kind = type(space)
        if kind is Discrete:
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
                "items": self.encode(tuple(space.items), f"{path}.items"),
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
                bit.state = self.decode(node["state"], f"{path}.state")
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
        if not isinstance(fields, dict) or set(fields) != set(codec.fields):
            raise self._fail(
                path,
                f"must have the fields {list(codec.fields)} of {name}; got "
                f"{sorted(fields) if isinstance(fields, dict) else fields!r}.",
            )
        kw = {f: self.decode(fields[f], f"{path}.{f}") for f in codec.fields}
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

        kind = node["kind"]
        try:
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


# -- reading files -------------------------------------------------------------------------
def _read_npz(source: str) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The header and arrays of a model archive; ValueError for anything else."""
    try:
        with np.load(source, allow_pickle=False) as npz:
            arrays = {k: npz[k] for k in npz.files}
    except (ValueError, OSError, EOFError, KeyError, zipfile.BadZipFile) as e:
        raise ValueError(
            f"{source!r} is not a readable model file: the archive is damaged or "
            f"truncated ({type(e).__name__}: {e})."
        ) from None
    raw = arrays.pop(_HEADER_KEY, None)
    if raw is None:
        raise ValueError(
            f"{source!r} is a NumPy archive but not a snorkel_structured model file (it "
            f"has no {_HEADER_KEY!r} entry); it was not written by model.save."
        )
    try:
        header = json.loads(np.asarray(raw, dtype=np.uint8).tobytes().decode("utf-8"))
    except (ValueError, TypeError, UnicodeDecodeError) as e:
        raise ValueError(
            f"{source!r} has a damaged header (not UTF-8 JSON: {e})."
        ) from None
    if not isinstance(header, dict) or header.get("format") != FORMAT_NAME:
        raise ValueError(
            f"{source!r} is not a snorkel_structured model file (its header does not "
            f"say format {FORMAT_NAME!r})."
        )
    return header, arrays


def _check_versions(header: dict[str, Any], source: str) -> None:
    fmt = header.get("format_version")
    if not isinstance(fmt, int) or isinstance(fmt, bool):
        raise ValueError(f"{source!r} has no readable format_version in its header.")
    lib = header.get("library_version")
    if fmt > FORMAT_VERSION:
        raise ValueError(
            f"{source!r} was written in model format {fmt} (by snorkel_structured "
            f"{lib}); this snorkel_structured {_library_version()} reads format "
            f"{FORMAT_VERSION} and older. Upgrade snorkel_structured to load it."
        )
    if fmt < FORMAT_VERSION:
        raise ValueError(
            f"{source!r} claims model format {fmt}, but format {fmt} archives do not "
            "exist (format 1 files are pickles); the file is damaged."
        )
    newer = _newer_than_library(lib)
    if newer is None:
        raise ValueError(
            f"{source!r} has an unreadable library_version {lib!r} in its header."
        )
    if newer:
        raise ValueError(
            f"{source!r} was saved by snorkel_structured {lib}, newer than this "
            f"version ({_library_version()}); its state may mean something this "
            "version does not know. Upgrade snorkel_structured to load it."
        )


# -- state checks for the _validate_state hooks ----------------------------------------------
def state_attr(
    obj: Any, name: str, types: type | tuple[type, ...] | None = None
) -> Any:
    """Fitted attribute ``name`` of ``obj``; ValueError if it is missing or mistyped."""
    if name not in vars(obj):
        raise ValueError(f"the fitted attribute {name} is missing.")
    value = vars(obj)[name]
    if types is not None and not isinstance(value, types):
        want = (
            types.__name__
            if isinstance(types, type)
            else " or ".join(t.__name__ for t in types)
        )
        raise ValueError(
            f"the fitted attribute {name} must be a {want}; got {type(value).__name__}."
        )
    return value


def state_int(obj: Any, name: str, *, low: int = 0) -> int:
    """An integer fitted attribute (Python or NumPy) that is at least ``low``."""
    value = state_attr(obj, name)
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise ValueError(
            f"the fitted attribute {name} must be an int; got {type(value).__name__}."
        )
    if value < low:
        raise ValueError(f"the fitted attribute {name} must be >= {low}; got {value}.")
    return int(value)


def state_float(obj: Any, name: str, *, finite: bool = True) -> float:
    """A real fitted attribute (finite unless ``finite=False``)."""
    value = state_attr(obj, name)
    if isinstance(value, (bool, np.bool_)) or not isinstance(
        value, (int, float, np.integer, np.floating)
    ):
        raise ValueError(
            f"the fitted attribute {name} must be a float; got {type(value).__name__}."
        )
    if finite and not math.isfinite(float(value)):
        raise ValueError(f"the fitted attribute {name} must be finite; got {value}.")
    return float(value)


def check_state_array(
    value: Any,
    name: str,
    shape: Sequence[int | None],
    *,
    kind: str = "f",
    finite: str | None = "all",
    low: float | None = None,
    high: float | None = None,
) -> np.ndarray:
    """Check one array of a fitted state.

    Parameters
    ----------
    value : Any
        The value found.
    name : str
        Its name in the messages (e.g. ``"theta_"`` or ``"stats_.counts"``).
    shape : sequence of int or None
        Expected shape; None matches any length on that axis.
    kind : str, default="f"
        Allowed dtype kinds: ``"f"`` real (integers accepted), ``"i"`` integer, ``"b"``
        boolean.
    finite : {"all", "no_nan", "not_pos_inf"} or None, default="all"
        "all": every entry finite; "no_nan": infinities allowed; "not_pos_inf": NaN
        and +inf refused, -inf allowed (log-probabilities); None: no check.
    low, high : float, optional
        Bounds on the (non-NaN) entries.

    Returns
    -------
    arr : ndarray

    Raises
    ------
    ValueError
        Naming ``name`` and the problem.
    """
    if not isinstance(value, np.ndarray):
        raise ValueError(
            f"the fitted attribute {name} must be an array; got {type(value).__name__}."
        )
    allowed = {"f": "fiu", "i": "iu", "b": "b"}[kind]
    if value.dtype.kind not in allowed:
        raise ValueError(
            f"the fitted attribute {name} must have a numeric dtype of kind {kind!r}; "
            f"got {value.dtype}."
        )
    if value.ndim != len(shape) or any(
        s is not None and s != v for s, v in zip(shape, value.shape, strict=True)
    ):
        want = "(" + ", ".join("any" if s is None else str(s) for s in shape) + ")"
        raise ValueError(
            f"the fitted attribute {name} must have shape {want}; got {value.shape}."
        )
    if value.dtype.kind == "f" and finite is not None:
        bad = {
            "all": ~np.isfinite(value),
            "no_nan": np.isnan(value),
            "not_pos_inf": np.isnan(value) | np.isposinf(value),
        }[finite]
        if bad.any():
            i = tuple(int(j) for j in np.argwhere(bad)[0])
            raise ValueError(
                f"the fitted attribute {name} holds {value[i]} at index {i}; it must be "
                + ("finite." if finite == "all" else "a number.")
            )
    if value.size and (low is not None or high is not None):
        vals = value[~np.isnan(value)] if value.dtype.kind == "f" else value
        if low is not None and vals.size and vals.min() < low:
            raise ValueError(
                f"the fitted attribute {name} must be >= {low}; its minimum is "
                f"{vals.min()}."
            )
        if high is not None and vals.size and vals.max() > high:
            raise ValueError(
                f"the fitted attribute {name} must be <= {high}; its maximum is "
                f"{vals.max()}."
            )
    return value


# -- the mixin -----------------------------------------------------------------------------
class PersistenceMixin:
    """``save(path)`` and ``model.load(path)`` in a safe, versioned format.

    See the module docstring for the file format. Classes using it implement
    ``_validate_state`` (called by ``load`` on fitted models) and take their label
    space as the constructor parameter ``space``.
    """

    # -- in-memory pickling (Dask workers, copy): a stamp checked on the way back --------
    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_snorkel_structured_format"] = (
            _PICKLE_FORMAT,
            type(self).__name__,
            _library_version(),
        )
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        stamp = state.get("_snorkel_structured_format")
        if (
            not isinstance(stamp, tuple)
            or len(stamp) != 3
            or stamp[0] != _PICKLE_FORMAT
            or stamp[1] != type(self).__name__
        ):
            raise ValueError(
                f"Cannot restore a {type(self).__name__} from this state (stamp "
                f"{stamp!r}); it was not saved by this class of snorkel_structured."
            )
        if _newer_than_library(stamp[2]) is not False:
            raise ValueError(
                f"Cannot restore a {type(self).__name__} pickled by snorkel_structured "
                f"{stamp[2]!r}: it is newer than this version ({_library_version()}) "
                "or unreadable. Upgrade snorkel_structured."
            )
        self.__dict__.clear()
        for key, value in state.items():
            if key != "_snorkel_structured_format":
                setattr(self, key, value)

    # -- files ---------------------------------------------------------------------------
    def _validate_state(self) -> None:
        """Check a loaded fitted state; raise ValueError naming the attribute.

        Subclasses check presence, shapes (against the space and ``n_lfs_``) and
        finiteness of every fitted attribute their methods read.
        """

    def save(self, destination: str | os.PathLike[str]) -> None:
        """Save the parameters and fitted state to ``destination``.

        The file is a NumPy ``.npz`` archive of the fitted arrays with a JSON header
        (class, label space, parameters, library and format versions, fitted
        attributes); nothing is pickled. An unfitted model saves its parameters.
        The name is used as given (no ``.npz`` is appended).

        Parameters
        ----------
        destination : str or path-like
            The file to write (overwritten).

        Raises
        ------
        ValueError
            If a parameter or fitted attribute is of a kind the format does not store
            (the message names it); the file is then not touched.
        """
        params = self.get_params(deep=False)  # type: ignore[attr-defined]
        names = set(params)
        attrs = {k: v for k, v in vars(self).items() if k not in names}
        enc = _Encoder()
        header = {
            "format": FORMAT_NAME,
            "format_version": FORMAT_VERSION,
            "library_version": _library_version(),
            "class": _qualname(type(self)),
            "space": enc.encode(params.get("space"), "the parameter space"),
            "params": {
                k: enc.encode(v, f"the parameter {k}")
                for k, v in params.items()
                if k != "space"
            },
            "fitted": _is_fitted(attrs),
            "state": {k: enc.encode(v, k) for k, v in attrs.items()},
            "attributes": {k: _kind(v) for k, v in attrs.items()},
        }
        blob = json.dumps(header, allow_nan=False).encode("utf-8")
        arrays = dict(enc.arrays)
        arrays[_HEADER_KEY] = np.frombuffer(blob, dtype=np.uint8)
        buffer = io.BytesIO()
        np.savez(buffer, **arrays)  # type: ignore[arg-type]
        with open(destination, "wb") as f:  # a file object: no ".npz" is appended
            f.write(buffer.getvalue())

    def load(self, source: str | os.PathLike[str], *, trust: bool = False) -> Any:
        """Load a model saved by ``save`` into this instance; returns ``self``.

        As in Snorkel, ``model.load(path)`` fills the model it is called on. The file
        must hold this class and a label space equal to this model's ``space``; the
        other constructor parameters (``estimator``, ``seed``, ...) and the fitted
        state are replaced by the file's. On any error this instance is unchanged.

        Parameters
        ----------
        source : str or path-like
            A file written by :meth:`save`.
        trust : bool, default=False
            Also read pickle files, the format ``save`` wrote before version 2 of the
            model format. **Warning:** unpickling runs code named by the file, so a
            pickle from an untrusted source can do anything your account can (e.g.
            create or delete files). Only pass ``trust=True`` for files you made
            yourself, and then re-save them with :meth:`save` to get the safe format.

        Returns
        -------
        self

        Raises
        ------
        FileNotFoundError
            If ``source`` does not exist.
        ValueError
            Naming the file, if it is empty, truncated, not a model file, a pickle
            (without ``trust=True``), written by a newer format or library version,
            holds another class or another label space, or its state is damaged
            (missing attributes, wrong shapes, non-finite values).
        """
        path = os.fspath(source)
        with open(path, "rb") as f:
            start = f.read(4)
        if not start:
            raise ValueError(f"{path!r} is empty; it is not a model file.")
        if start == _ZIP_MAGIC:
            new = self._from_archive(path)
        elif trust:
            new = self._from_pickle(path)
        elif (
            start[:1] == b"\x80"
        ):  # the PROTO opcode that starts pickles since protocol 2
            raise ValueError(
                f"{path!r} looks like a pickle file (the format save wrote in older "
                "versions of snorkel_structured). Loading a pickle runs code named by "
                "the file, so it is refused by default. If you made this file yourself, "
                "load it with model.load(path, trust=True) and re-save it with "
                "model.save(path) in the current, safe format."
            )
        else:
            raise ValueError(
                f"{path!r} is not a snorkel_structured model file (it starts with "
                f"{start!r}: neither a model archive nor a pickle)."
            )
        self.__dict__.clear()
        for key, value in vars(new).items():
            setattr(self, key, value)
        return self

    def _check_space(self, path: str, space: Any) -> None:
        mine = getattr(self, "space", None)
        if space != mine:
            raise ValueError(
                f"{path!r} holds a {type(self).__name__} on {space!r}, but this model's "
                f"space is {mine!r}. Load it into a model built on {space!r}."
            )

    def _check_state(self, new: Any, path: str) -> None:
        """The class's state checks (``_validate_state``) on a loaded fitted instance."""
        if _is_fitted(vars(new)):
            try:
                new._validate_state()
            except ValueError as e:
                raise ValueError(
                    f"{path!r} holds a damaged {type(self).__name__}: {e}"
                ) from None

    def _from_archive(self, path: str) -> Any:
        header, arrays = _read_npz(path)
        _check_versions(header, path)
        cls = type(self)
        if header.get("class") != _qualname(cls):
            raise ValueError(
                f"{path!r} holds a {header.get('class')}, not a {_qualname(cls)}; load "
                "it into a model of that class."
            )
        dec = _Decoder(arrays, path)
        for key in ("params", "state"):
            if not isinstance(header.get(key), dict):
                raise ValueError(f"{path!r} has a damaged header (no {key!r} table).")
        space = dec.decode(header.get("space"), "the space")
        self._check_space(path, space)
        names = _param_names(cls)
        unknown = sorted(set(header["params"]) - set(names))
        if unknown:
            raise ValueError(
                f"{path!r} sets parameters {unknown} that {cls.__name__} does not take."
            )
        params = {
            k: dec.decode(v, f"the parameter {k}") for k, v in header["params"].items()
        }
        state = {k: dec.decode(v, k) for k, v in header["state"].items()}
        if bool(header.get("fitted")) != _is_fitted(state):
            raise ValueError(
                f"{path!r} has a damaged header: it says fitted={header.get('fitted')!r} "
                f"but holds attributes {sorted(state)}."
            )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # constructors only assign
            new = cls(getattr(self, "space", space), **params)  # type: ignore[call-arg]
        for key, value in state.items():
            setattr(new, key, value)
        self._check_state(new, path)
        return new

    def _from_pickle(self, path: str) -> Any:
        with open(path, "rb") as f:
            try:
                obj = pickle.load(f)  # noqa: S301 - only with trust=True (documented)
            except Exception as e:  # anything a damaged pickle raises, named
                raise ValueError(
                    f"{path!r} is neither a model archive nor a readable pickle of a "
                    f"{type(self).__name__} ({type(e).__name__}: {e})."
                ) from None
        if type(obj) is not type(self):
            raise ValueError(
                f"{path!r} holds a {type(obj).__name__}, not a {type(self).__name__}."
            )
        self._check_space(path, getattr(obj, "space", None))
        self._check_state(obj, path)
        return obj
