import dask
import dask.array as da
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

import snorkel_structured as ss
from snorkel_structured._chunks import (
    is_dask_collection,
    map_partitions_to_array,
    reduce_stats,
)
from snorkel_structured.synthetic import make_ranking_data


def stats_of(chunk):
    return ss.VoteStats.from_label_matrix(chunk, 24)


@pytest.fixture(scope="module")
def data():
    return make_ranking_data(3_000, seed=0, abstain=0.2)


def test_iterator_of_chunks_equals_whole(data):
    whole = stats_of(data.L)
    total = reduce_stats(iter(np.array_split(data.L, 5)), stats_of)
    np.testing.assert_array_equal(total.counts, whole.counts)
    with pytest.raises(ValueError, match="empty"):
        reduce_stats(iter([]), stats_of)
    with pytest.raises(TypeError, match="iterable of chunks"):
        reduce_stats(data.L, stats_of)


def test_dask_array_and_dataframe_reduce(data):
    whole = stats_of(data.L)
    arr = da.from_array(data.L, chunks=(700, 2))  # chunked across columns too
    frame = dd.from_pandas(pd.DataFrame(data.L, columns=["a", "b", "c"]), npartitions=4)
    assert (
        is_dask_collection(arr)
        and is_dask_collection(frame)
        and not is_dask_collection(data.L)
    )
    with dask.config.set(scheduler="synchronous"):
        for coll in (arr, frame):
            total = reduce_stats(coll, stats_of)
            np.testing.assert_array_equal(total.patterns, whole.patterns)
            np.testing.assert_array_equal(total.counts, whole.counts)


def test_map_partitions_to_array(data):
    arr = da.from_array(data.L, chunks=(1000, 3))
    out = map_partitions_to_array(
        arr,
        lambda b: (b == -1).sum(axis=1, keepdims=True) * np.ones((1, 2)),
        (2,),
        float,
    )
    with dask.config.set(scheduler="synchronous"):
        got = out.compute()
    np.testing.assert_array_equal(got[:, 0], (data.L == -1).sum(axis=1))
    one_d = map_partitions_to_array(arr, lambda b: b[:, 0], (), np.int64)
    with dask.config.set(scheduler="synchronous"):
        np.testing.assert_array_equal(one_d.compute(), data.L[:, 0])
