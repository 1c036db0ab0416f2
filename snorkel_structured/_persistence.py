"""Pickle persistence with a version stamp, for fitted models.

Snorkel's ``save``/``load`` pickle ``__dict__`` and update it back unchecked; here the
pickle carries the class name and library version, and ``load`` refuses anything else.
"""

from __future__ import annotations

import os
import pickle
from typing import Any

_FORMAT = 1


class PersistenceMixin:
    """``save(path)`` and ``load(path)`` (Snorkel's instance-method form)."""

    def __getstate__(self) -> dict[str, Any]:
        from snorkel_structured import __version__

        state = dict(self.__dict__)
        state["_snorkel_structured_format"] = (
            _FORMAT,
            type(self).__name__,
            __version__,
        )
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        stamp = state.get("_snorkel_structured_format")
        if stamp is None or stamp[0] != _FORMAT or stamp[1] != type(self).__name__:
            raise ValueError(
                f"Cannot restore a {type(self).__name__} from this state (stamp {stamp!r}); "
                "it was not saved by this class of snorkel_structured."
            )
        state = {k: v for k, v in state.items() if k != "_snorkel_structured_format"}
        self.__dict__.clear()
        for key, value in state.items():
            setattr(self, key, value)

    def save(self, destination: str | os.PathLike[str]) -> None:
        """Pickle the model (parameters and fitted state) to ``destination``."""
        with open(destination, "wb") as f:
            pickle.dump(self, f)

    def load(self, source: str | os.PathLike[str]) -> Any:
        """Load a model saved by ``save`` into this instance; returns ``self``.

        Raises ``ValueError`` if the file holds another kind of object.
        """
        with open(source, "rb") as f:
            obj = pickle.load(f)
        if type(obj) is not type(self):
            raise ValueError(
                f"{os.fspath(source)!r} holds a {type(obj).__name__}, not a "
                f"{type(self).__name__}."
            )
        self.__setstate__(obj.__getstate__())
        return self
