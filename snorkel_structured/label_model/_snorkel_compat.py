"""Snorkel ``LabelModel.fit`` compatibility: its refusals and its optimizer options.

``StructuredLabelModel`` is a drop-in for Snorkel's ``LabelModel`` on ``ss.Discrete``
spaces, so ``fit`` refuses what Snorkel refuses, with messages that contain Snorkel's
own phrases (code written against Snorkel, e.g. ``assertRaisesRegex``, keeps matching)
and that also say what to do:

- a class balance with a zero entry or of the wrong length, and a ``Y_dev`` that misses
  a class (``_set_class_balance`` in Snorkel); only for ``Discrete`` spaces, where every
  class is a label of the model. On rankings or trees a prior on a few labels is
  legitimate and is left to ``StructuredLabelModel``'s own checks;
- Snorkel's training options (``n_epochs``, ``lr``, ``l2``, ``optimizer``,
  ``optimizer_config``, ``lr_scheduler``, ``lr_scheduler_config``, ``prec_init``,
  ``log_freq``, ``mu_eps``), checked as Snorkel's ``TrainConfig``, ``_set_optimizer``,
  ``_set_lr_scheduler``, ``_set_warmup_scheduler`` and ``_init_params`` (with the
  checks of the torch optimizers they build) check them, and then ignored: our fit is
  EM on vote-pattern counts and has no epochs, learning rate or initial precisions.

It also provides Snorkel's ``BaseLabeler`` (the base class of ``StructuredLabelModel``)
without importing PyTorch: see :func:`snorkel_base_labeler`.
"""

from __future__ import annotations

import copy
import importlib
import importlib.util
import numbers
import sys
import threading
from collections.abc import Collection, Mapping
from typing import Any

import numpy as np
from snorkel.utils.config_utils import merge_config
from snorkel.utils.lr_schedulers import LRSchedulerConfig
from snorkel.utils.optimizers import OptimizerConfig

from snorkel_structured._validation import check_scalar
from snorkel_structured.spaces.finite import Discrete

__all__ = [
    "SNORKEL_TRAIN_KEYS",
    "snorkel_base_labeler",
    "check_class_balance",
    "check_dev_classes",
    "check_prec_init_shape",
    "check_train_options",
]

_BASE_LABELER = "snorkel.labeling.model.base_labeler"
_LOCK = threading.Lock()


def snorkel_base_labeler() -> type:
    """Snorkel's ``BaseLabeler`` class, loaded without importing PyTorch.

    ``snorkel.labeling.model.base_labeler`` needs only NumPy and ``snorkel.analysis``,
    but importing it the usual way first runs ``snorkel/labeling/model/__init__.py``,
    which imports Snorkel's ``LabelModel`` and with it torch (seconds). None of our
    models uses torch, so the module is executed on its own and registered in
    ``sys.modules`` under its own name; when Snorkel's ``LabelModel`` is imported later,
    it finds the module there and subclasses the very same ``BaseLabeler`` class, so
    ``issubclass(StructuredLabelModel, BaseLabeler)`` holds whichever is imported
    first. If that is not possible (Snorkel's model package already imported, or laid
    out differently), the usual import is used.

    Returns
    -------
    BaseLabeler : type
    """
    with _LOCK:
        module = sys.modules.get(_BASE_LABELER)
        if module is None and "snorkel.labeling.model" not in sys.modules:
            module = _load_alone(_BASE_LABELER)
        if module is None:
            module = importlib.import_module(_BASE_LABELER)
    return module.BaseLabeler


def _load_alone(name: str) -> Any:
    """Execute the module ``name`` without its package's ``__init__``; None if unable."""
    parent, _, leaf = name.rpartition(".")
    grandparent, _, package_dir = parent.rpartition(".")
    try:
        locations = importlib.import_module(
            grandparent
        ).__spec__.submodule_search_locations
        path = f"{list(locations)[0]}/{package_dir}/{leaf}.py"
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            return None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    except (ImportError, OSError, AttributeError, TypeError, IndexError):
        sys.modules.pop(name, None)
        return None
    return module


# Snorkel's TrainConfig fields other than ``seed`` (which our fit uses).
SNORKEL_TRAIN_KEYS = frozenset(
    {
        "n_epochs",
        "lr",
        "l2",
        "optimizer",
        "optimizer_config",
        "lr_scheduler",
        "lr_scheduler_config",
        "prec_init",
        "log_freq",
        "mu_eps",
    }
)
_OPTIMIZERS = ("sgd", "adam", "adamax")
_LR_SCHEDULERS = ("constant", "linear", "exponential", "step")
_IGNORED = (
    "(Snorkel's training options are validated and ignored: this model is fitted by "
    "EM on vote-pattern counts.)"
)


# -- class balance (Snorkel's LabelModel._set_class_balance) -------------------------
def check_class_balance(space: Any, p: np.ndarray) -> None:
    """Snorkel's refusals of ``class_balance`` on a ``Discrete`` space (else nothing).

    Parameters
    ----------
    space : FiniteMetricSpace
    p : ndarray
        The class balance as given (not normalized).

    Raises
    ------
    ValueError
        "class_balance has k entries. Does not match LabelModel cardinality r." or
        "Class balance prior is 0 for class(es) [...]".
    """
    if not isinstance(space, Discrete):
        return
    r = space.cardinality
    if p.ndim != 1 or p.shape[0] != r:
        size = p.shape[0] if p.ndim else p.size
        raise ValueError(
            f"class_balance has {size} entries. Does not match LabelModel cardinality "
            f"{r}. Pass one probability per class of {space!r} (shape ({r},)); got "
            f"shape {p.shape}."
        )
    zero = np.flatnonzero(p == 0)
    if zero.size:
        raise ValueError(
            f"Class balance prior is 0 for class(es) {zero.tolist()}. Every class of "
            f"{space!r} is a label of the model, so each needs a positive prior; give "
            "those classes a small positive weight, or drop them from the label space."
        )


def check_dev_classes(space: Any, y: np.ndarray) -> None:
    """Snorkel's refusal of a ``Y_dev`` that misses a class of a ``Discrete`` space.

    Parameters
    ----------
    space : FiniteMetricSpace
    y : ndarray of int of shape (n_dev,)
        Validated gold label indices.

    Raises
    ------
    ValueError
        "Y_dev has c class(es). Does not match LabelModel cardinality r."
    """
    if not isinstance(space, Discrete):
        return
    r = space.cardinality
    present = np.unique(y)
    if present.size != r:
        missing = np.setdiff1d(np.arange(r), present).tolist()
        raise ValueError(
            f"Y_dev has {present.size} class(es). Does not match LabelModel cardinality "
            f"{r}: classes {missing} never occur in Y_dev, so the class balance it "
            "estimates would be 0 for them. Add dev labels of those classes, or pass "
            "class_balance instead."
        )


# -- training options (Snorkel's TrainConfig and what LabelModel.fit does with it) ----
def _merge(name: str, default: Any, value: Any) -> Any:
    """Snorkel's ``merge_config`` of a nested config given as a dict (or the config)."""
    if value is None:
        return default
    if isinstance(value, type(default)):
        return value
    if not isinstance(value, Mapping):
        raise TypeError(
            f"{name} must be a dict or a snorkel {type(default).__name__}; got "
            f"{type(value).__name__}."
        )
    # merge_config writes merged sub-configs into its argument: hand it a copy.
    try:
        return merge_config(default, copy.deepcopy(dict(value)))
    except (ValueError, AttributeError) as exc:  # "Got unexpected field names: [...]"
        raise ValueError(
            f"{name} has unexpected fields ({exc}); its fields are "
            f"{list(default._fields)}."
        ) from None


def _check_betas(name: str, betas: Any) -> None:
    b = np.asarray(betas, dtype=np.float64)
    if b.shape != (2,):
        raise ValueError(f"{name}.betas must be a pair of floats; got {betas!r}.")
    for i, v in enumerate(b):
        if not 0.0 <= v < 1.0:
            raise ValueError(
                f"Invalid beta parameter at index {i}: {v} ({name}.betas must be in "
                "[0, 1))."
            )


def _check_optimizer(optimizer: Any, config: Any) -> None:
    """``LabelModel._set_optimizer``, with the checks of the torch optimizer it builds."""
    if not isinstance(optimizer, str) or optimizer not in _OPTIMIZERS:
        raise ValueError(
            f"Unrecognized optimizer option '{optimizer}'; use one of {_OPTIMIZERS}. "
            f"{_IGNORED}"
        )
    if optimizer == "sgd":
        momentum = config.sgd_config.momentum
        if not momentum >= 0.0:
            raise ValueError(
                f"Invalid momentum value: {momentum} "
                "(optimizer_config.sgd_config.momentum must be >= 0)."
            )
    elif optimizer == "adam":
        _check_betas("optimizer_config.adam_config", config.adam_config.betas)
    else:
        _check_betas("optimizer_config.adamax_config", config.adamax_config.betas)
        eps = config.adamax_config.eps
        if not eps >= 0.0:
            raise ValueError(
                f"Invalid epsilon value: {eps} "
                "(optimizer_config.adamax_config.eps must be >= 0)."
            )


def _check_lr_scheduler(lr_scheduler: Any, config: Any) -> None:
    """``LabelModel._set_lr_scheduler`` and ``_set_warmup_scheduler``, in their order."""
    if config.warmup_steps:
        if config.warmup_steps < 0:
            raise ValueError(
                "warmup_steps must be greater or equal than 0; got "
                f"lr_scheduler_config warmup_steps={config.warmup_steps!r}."
            )
        if config.warmup_unit != "epochs":
            raise ValueError(
                "LabelModel does not support any warmup_unit other than 'epochs'; got "
                f"warmup_unit={config.warmup_unit!r} (Snorkel's default is 'batches'). "
                "Pass lr_scheduler_config={'warmup_steps': ..., 'warmup_unit': "
                f"'epochs'}}. {_IGNORED}"
            )
    if not isinstance(lr_scheduler, str) or lr_scheduler not in _LR_SCHEDULERS:
        raise ValueError(
            f"Unrecognized lr scheduler option '{lr_scheduler}'; use one of "
            f"{_LR_SCHEDULERS}. {_IGNORED}"
        )


def _check_prec_init_type(prec_init: Any) -> None:
    """``LabelModel._init_params``: a number, a list, an ndarray or a torch.Tensor."""
    kind = type(prec_init)
    is_tensor = kind.__name__ == "Tensor" and kind.__module__.startswith("torch")
    if not (isinstance(prec_init, (numbers.Real, list, np.ndarray)) or is_tensor):
        raise TypeError(
            f"prec_init is of type {kind} which is not supported currently. Pass a "
            "float (one prior precision for every LF), or a list, ndarray or "
            f"torch.Tensor with one per LF. {_IGNORED}"
        )
    if not isinstance(prec_init, numbers.Real) and not is_tensor:
        try:
            np.asarray(prec_init, dtype=np.float64)
        except (TypeError, ValueError):
            raise TypeError(
                f"prec_init must hold numbers, one per LF; got {prec_init!r}."
            ) from None


def check_prec_init_shape(prec_init: Any, n_lfs: int) -> None:
    """Snorkel's "prec_init must have shape m." once the number of LFs is known."""
    if prec_init is None or isinstance(prec_init, numbers.Real):
        return
    shape = tuple(getattr(prec_init, "shape", np.shape(prec_init)))
    if not shape or shape[0] != n_lfs:
        raise ValueError(
            f"prec_init must have shape {n_lfs}. Give one prior precision per labeling "
            f"function (L_train has {n_lfs} columns), or a single float; got shape "
            f"{shape}."
        )


def check_train_options(
    config: Mapping[str, Any], *, progress_bar: Any, own: Collection[str] = ()
) -> dict[str, Any]:
    """Validate Snorkel's ``LabelModel.fit`` options as Snorkel does; return them.

    Parameters
    ----------
    config : mapping
        The ``**kwargs`` of ``fit``.
    progress_bar : bool
        ``fit``'s ``progress_bar`` argument.
    own : collection of str
        Keyword arguments ``fit`` takes besides Snorkel's (e.g. ``seed``).

    Returns
    -------
    options : dict
        Snorkel's options with their defaults filled in (nested configs merged).

    Raises
    ------
    TypeError
        For an unknown keyword, or an option of the wrong type (e.g. "prec_init is of
        type <class 'str'> which is not supported currently.").
    ValueError
        For a value Snorkel refuses ("Unrecognized optimizer option", "Unrecognized lr
        scheduler option", "LabelModel does not support any warmup_unit other than
        'epochs'", a negative ``lr`` or ``l2``, ...).
    """
    unknown = set(config) - SNORKEL_TRAIN_KEYS - set(own)
    if unknown:
        raise TypeError(
            f"fit got unexpected keyword arguments {sorted(unknown)}; it takes "
            f"{sorted(own)} and Snorkel's LabelModel.fit options "
            f"{sorted(SNORKEL_TRAIN_KEYS)}."
        )
    if not isinstance(progress_bar, (bool, np.bool_, numbers.Integral)):
        raise TypeError(
            f"progress_bar must be a bool; got {type(progress_bar).__name__}."
        )
    opts = {
        "n_epochs": 100,
        "lr": 0.01,
        "l2": 0.0,
        "optimizer": "sgd",
        "lr_scheduler": "constant",
        "prec_init": 0.7,
        "log_freq": 10,
        "mu_eps": None,
        **{k: v for k, v in config.items() if k in SNORKEL_TRAIN_KEYS},
    }
    check_scalar(opts["n_epochs"], "n_epochs", kind="int", low=0)
    check_scalar(opts["lr"], "lr", low=0.0)  # torch: "Invalid learning rate"
    check_scalar(opts["l2"], "l2", low=0.0)  # torch: "Invalid weight_decay value"
    check_scalar(opts["log_freq"], "log_freq", kind="int")
    if opts["mu_eps"] is not None:
        check_scalar(opts["mu_eps"], "mu_eps", low=0.0, high=0.5)
    opts["optimizer_config"] = _merge(
        "optimizer_config", OptimizerConfig(), config.get("optimizer_config")
    )
    opts["lr_scheduler_config"] = _merge(
        "lr_scheduler_config", LRSchedulerConfig(), config.get("lr_scheduler_config")
    )
    # Snorkel's order: _init_params (prec_init), _set_optimizer, _set_lr_scheduler.
    _check_prec_init_type(opts["prec_init"])
    _check_optimizer(opts["optimizer"], opts["optimizer_config"])
    _check_lr_scheduler(opts["lr_scheduler"], opts["lr_scheduler_config"])
    return opts
