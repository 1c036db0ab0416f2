"""How the losses of :mod:`snorkel_structured.torch` turn per-row losses into one.

Both the Q^-1 label loss and the RankNet pair loss take ``reduction`` (over rows) and
``clip`` (each row's loss clamped below, or None for the unbiased loss); they check
and apply them here. Imported only by the torch-side modules.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

__all__ = ["REDUCTIONS", "check_float_tensor", "check_reduction", "reduce_rows"]

REDUCTIONS = ("mean", "sum", "none")


def check_float_tensor(x: Any, name: str, shape: str) -> None:
    """Raise ValueError unless ``x`` is a floating-point Tensor: the losses need a
    float graph (log_softmax has no integer kernel, and integer inputs would truncate
    the weights they multiply). ``shape`` describes the expected one."""
    if not isinstance(x, torch.Tensor) or not x.is_floating_point():
        of = "" if not isinstance(x, torch.Tensor) else f" of {x.dtype}"
        raise ValueError(
            f"{name} must be a floating-point Tensor of shape {shape}; got "
            f"{type(x).__name__}{of}."
        )


def check_reduction(reduction: Any, clip: Any) -> None:
    """Raise ValueError for an unknown ``reduction`` or a ``clip`` that is not a finite float."""
    if reduction not in REDUCTIONS:
        raise ValueError(f"reduction must be one of {REDUCTIONS}; got {reduction!r}.")
    if clip is not None and (
        isinstance(clip, bool)
        or not isinstance(clip, (int, float))
        or not np.isfinite(clip)
    ):
        raise ValueError(
            f"clip must be None (unbiased) or a finite float (e.g. 0.0); got {clip!r}."
        )


def reduce_rows(row: torch.Tensor, reduction: str, clip: float | None) -> torch.Tensor:
    """Each row's loss clamped below at ``clip`` (if given), then reduced over rows.

    The mean of no rows is 0, not NaN as in ``torch.nn.functional``: an empty batch
    (e.g. the last one of a filtered split) then adds nothing to the objective and a
    zero gradient, instead of a NaN that poisons the parameters at the next step.
    """
    if clip is not None:
        row = torch.clamp(row, min=float(clip))
    if reduction == "mean":
        if row.numel() == 0:
            return row.sum()  # 0, still attached to the graph (its gradient is 0)
        return row.mean()
    if reduction == "sum":
        return row.sum()
    return row
