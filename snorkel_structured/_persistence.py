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

The header's values are JSON nodes (see :mod:`snorkel_structured._persistence_codec`):
plain JSON for None, booleans, integers and strings, typed objects for floats, arrays
(keys into the archive), containers, label spaces (rebuilt from their description and
checked equal at save), the library's own result classes (an explicit allowlist, never
imported by name from the file), NumPy Generators, warnings and pandas objects.
Anything else makes ``save`` raise ``ValueError`` naming the attribute: nothing is
pickled.

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

import inspect
import io
import json
import math
import os
import pickle
import re
import reprlib
import zipfile
from collections.abc import Sequence
from typing import Any

import numpy as np

import snorkel_structured._version as _version
from snorkel_structured._persistence_codec import _Decoder, _Encoder, _qualname

__all__ = ["FORMAT_VERSION", "PersistenceMixin"]

FORMAT_NAME = "snorkel_structured-model"
# 1 was the pickle written by ``save`` before; 2 is the .npz archive with a JSON header.
FORMAT_VERSION = 2
_PICKLE_FORMAT = 1
_HEADER_KEY = "__header__"
_ZIP_MAGIC = b"PK\x03\x04"


def _library_version() -> str:
    # read at call time (not bound at import), so that a patched version is seen
    return _version.__version__


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


# -- reading files -------------------------------------------------------------------------
def _read_npz(source: str) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The header and arrays of a model archive; ValueError for anything else."""
    try:
        # Open the file here, not in np.load: when the zip directory is unreadable
        # (a truncated file), np.load has already handed its own file handle to
        # NpzFile, whose constructor fails before anything can close it, so the
        # handle leaked (ResourceWarning). Our ``with`` closes it on every path.
        with open(source, "rb") as f, np.load(f, allow_pickle=False) as npz:
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


# set attribute by attribute: Repr takes keyword arguments only from Python 3.12
_SHORT = reprlib.Repr()
_SHORT.maxstring = _SHORT.maxother = 40
_SHORT.maxtuple = _SHORT.maxlist = 6


def _short(value: Any) -> str:
    """``repr(value)``, cut short: items can be long tuples or strings."""
    return _SHORT.repr(value)


def _space_difference(theirs: Any, mine: Any) -> str:
    """What differs between two unequal spaces that print the same (one clause).

    Finite spaces are compared item by item, then distance by distance, and the
    first difference is named: never the whole items or distance matrix, which can
    have millions of entries.
    """
    if type(theirs) is not type(mine):
        return (
            f"the file's space is a {_qualname(type(theirs))}, this model's a "
            f"{_qualname(type(mine))}"
        )
    if not hasattr(theirs, "items") or not hasattr(theirs, "distance_matrix"):
        return "the two spaces are not equal, though they print the same"
    items_a, items_b = tuple(theirs.items), tuple(mine.items)
    if len(items_a) != len(items_b):
        return f"the file's space has {len(items_a)} items, this model's {len(items_b)}"
    if items_a != items_b:
        i = next(
            k for k, (a, b) in enumerate(zip(items_a, items_b, strict=True)) if a != b
        )
        how = "in another order" if set(items_a) == set(items_b) else "differ"
        return (
            f"the items {how}: item {i} is {_short(items_a[i])} in the file and "
            f"{_short(items_b[i])} here"
        )
    D_a = np.asarray(theirs.distance_matrix)
    D_b = np.asarray(mine.distance_matrix)
    differ = ~((D_a == D_b) | (np.isnan(D_a) & np.isnan(D_b)))
    if not differ.any():  # FiniteMetricSpace compares the matrices' bytes
        return (
            "the items are the same and the distances differ only in their bytes "
            f"(dtype {D_a.dtype} in the file, {D_b.dtype} here; or -0.0 against 0.0)"
        )
    i, j = (int(k) for k in np.argwhere(differ)[0])
    # e.g. two graphs on the same nodes with other edges or edge weights
    return (
        f"the items are the same but {int(differ.sum())} of the {D_a.size} distances "
        f"differ, e.g. d({_short(items_a[i])}, {_short(items_a[j])}) is "
        f"{D_a[i, j]:.6g} in the file and {D_b[i, j]:.6g} here"
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
        # b"\x80" is the PROTO opcode that starts every pickle since protocol 2
        elif start[:1] == b"\x80":
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
        if space == mine:
            return
        name = type(self).__name__
        if repr(space) != repr(mine):
            raise ValueError(
                f"{path!r} holds a {name} on {space!r}, but this model's "
                f"space is {mine!r}. Load it into a model built on {space!r}."
            )
        # Equal reprs (e.g. two GraphSpace(n_labels=4) on different graphs): the
        # message above would contradict itself, so say what differs instead.
        raise ValueError(
            f"{path!r} holds a {name} on a different {space!r} than this model's: "
            f"{_space_difference(space, mine)}. Load it into a model built on the "
            "space the file was saved with."
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
        for key in header["state"]:
            # Plain instance attributes only: a file must not shadow a method or
            # property (e.g. ``predict``) or set ``__class__``/``__dict__``.
            if (
                not key.isidentifier()
                or key.startswith("__")
                or key in names
                or hasattr(cls, key)
            ):
                raise ValueError(
                    f"{path!r} has a damaged header: {key!r} cannot be an attribute of "
                    f"a fitted {cls.__name__}."
                )
        state = {k: dec.decode(v, k) for k, v in header["state"].items()}
        if bool(header.get("fitted")) != _is_fitted(state):
            raise ValueError(
                f"{path!r} has a damaged header: it says fitted={header.get('fitted')!r} "
                f"but holds attributes {sorted(state)}."
            )
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
