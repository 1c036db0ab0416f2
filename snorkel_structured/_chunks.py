"""Statistics from data that is not one in-memory array: iterators of chunks and Dask.

Every estimator here consumes additive statistics, so a large input is reduced as
``sum(to_stats(part) for part in parts)``. For a Dask collection the per-partition
statistics are computed where the partitions live (on the workers of an active
``dask.distributed`` client, or Dask's default scheduler) and only the small statistics
travel back to be added on the client.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import numpy as np

T = TypeVar("T")

__all__ = ["is_dask_collection", "map_partitions_to_array", "reduce_stats"]


def is_dask_collection(x: Any) -> bool:
    """Whether ``x`` is a Dask array or DataFrame (without importing Dask needlessly)."""
    module = type(x).__module__
    if not module.startswith("dask"):
        return False
    from dask.base import is_dask_collection as _is

    return bool(_is(x))


def _partitions(x: Any) -> list[Any]:
    """Delayed numpy blocks of a Dask array or DataFrame, split along rows only."""
    import dask.array as da
    import dask.dataframe as dd

    if isinstance(x, dd.DataFrame):
        return list(x.to_delayed())
    if isinstance(x, da.Array):
        if x.ndim < 2:
            raise ValueError(f"expected a 2-D or 3-D Dask array; got ndim={x.ndim}.")
        whole = {axis: -1 for axis in range(1, x.ndim)}
        x = x.rechunk(whole)  # each block holds complete rows
        return list(x.to_delayed().ravel())
    raise TypeError(f"unsupported Dask collection {type(x).__name__}.")


def _as_numpy(part: Any) -> np.ndarray:
    return part.to_numpy() if hasattr(part, "to_numpy") else np.asarray(part)


def _row_counts(x: Any) -> list[int]:
    """Rows per partition of a Dask array or DataFrame, in the order of
    :func:`_partitions`."""
    import dask.array as da

    if isinstance(x, da.Array):
        if any(np.isnan(size) for size in x.chunks[0]):
            x = x.compute_chunk_sizes()
        return [int(size) for size in x.chunks[0]]
    return [int(size) for size in x.map_partitions(len).compute()]


def reduce_stats(
    data: Any, to_stats: Callable[..., T], first_row: int | None = None
) -> T:
    """``sum(to_stats(chunk))`` over a Dask collection or an iterable of array chunks.

    Parameters
    ----------
    data : dask.array.Array, dask.dataframe.DataFrame, or iterable of array-like
        Rows split into chunks (a Dask array may also be chunked across columns; it is
        rechunked to whole rows).
    to_stats : callable
        Maps one numpy chunk to an additive statistics object.
    first_row : int, optional
        When given, ``to_stats(chunk, first_row=i)`` also gets the index of the chunk's
        first row among all the rows, counted from ``first_row`` (statistics whose
        random draws follow the rows, not the split). The sums then add the chunks in
        row order.

    Returns
    -------
    The sum of the chunks' statistics.
    """

    def call(chunk: np.ndarray, start: int) -> T:
        if first_row is None:
            return to_stats(chunk)
        return to_stats(chunk, first_row=start)

    if is_dask_collection(data):
        import dask

        def convert(part: Any, start: int) -> T:
            return call(_as_numpy(part), start)

        blocks = _partitions(data)
        starts = [0] * len(blocks)
        if first_row is not None:
            starts = list(first_row + np.cumsum([0, *_row_counts(data)[:-1]]))
        parts = [
            dask.delayed(convert)(p, int(start))
            for p, start in zip(blocks, starts, strict=True)
        ]
        if not parts:
            raise ValueError("the Dask collection has no partitions.")
        while len(parts) > 1:  # tree reduction: statistics are added on the workers
            parts = [
                dask.delayed(_add)(*parts[i : i + 2])
                if i + 1 < len(parts)
                else parts[i]
                for i in range(0, len(parts), 2)
            ]
        return dask.compute(parts[0])[0]
    total: Any = None
    start = 0 if first_row is None else first_row
    for chunk in _iter_chunks(data):
        arr = _as_numpy(chunk)
        stats = call(arr, start)
        start += arr.shape[0] if arr.ndim else 0
        total = stats if total is None else total + stats
    if total is None:
        raise ValueError("no chunks to fit on: the iterable was empty.")
    return total


def _add(a: T, b: T) -> T:
    return a + b  # type: ignore[operator]


def _iter_chunks(data: Iterable[Any]) -> Iterable[Any]:
    if isinstance(data, np.ndarray) or hasattr(data, "to_numpy"):
        raise TypeError("expected an iterable of chunks, not a single array.")
    return iter(data)


def map_partitions_to_array(
    data: Any,
    fn: Callable[[np.ndarray], np.ndarray],
    trailing_shape: tuple[int, ...],
    dtype: Any,
) -> Any:
    """Apply a row-wise ``fn`` partition by partition, lazily: a Dask array of results.

    ``fn`` maps an (n_part, ...) numpy block to (n_part, *trailing_shape). The result is a
    Dask array chunked like the input rows; call ``.compute()`` to materialize.
    """
    import dask.array as da
    import dask.dataframe as dd

    if isinstance(data, dd.DataFrame):
        data = data.to_dask_array(lengths=True)
    if not isinstance(data, da.Array):
        raise TypeError(
            f"expected a Dask array or DataFrame; got {type(data).__name__}."
        )
    whole = {axis: -1 for axis in range(1, data.ndim)}
    data = data.rechunk(whole)
    chunks = (data.chunks[0], *((s,) for s in trailing_shape))
    drop = tuple(range(1, data.ndim)) if data.ndim > 1 + len(trailing_shape) else ()
    new_axis = (
        tuple(range(data.ndim, 1 + len(trailing_shape)))
        if data.ndim < 1 + len(trailing_shape)
        else ()
    )
    return data.map_blocks(
        lambda block: fn(np.asarray(block)),
        chunks=chunks,
        dtype=dtype,
        drop_axis=drop or None,
        new_axis=new_axis or None,
        meta=np.empty((0, *trailing_shape), dtype=dtype),
    )
