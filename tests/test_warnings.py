"""Warnings recorded per thread, without the process-wide warnings state (issue 14, 15)."""

import threading
import warnings

import numpy as np
import pytest

import snorkel_structured as ss
from snorkel_structured import _warnings
from snorkel_structured.exceptions import ConvergenceWarning, IdentifiabilityWarning


def test_captured_takes_its_categories_and_lets_others_through():
    with _warnings.captured(IdentifiabilityWarning) as caught:
        _warnings.warn("taken", IdentifiabilityWarning)
        with pytest.warns(ConvergenceWarning, match="passes"):
            _warnings.warn("passes", ConvergenceWarning)
    assert [(w.message, w.category) for w in caught] == [
        ("taken", IdentifiabilityWarning)
    ]
    # outside the block the warning reaches warnings.warn again
    with pytest.warns(IdentifiabilityWarning, match="again"):
        _warnings.warn("again", IdentifiabilityWarning)


def test_innermost_capture_wins():
    with _warnings.captured() as outer:
        with _warnings.captured(ConvergenceWarning) as inner:
            _warnings.warn("c", ConvergenceWarning)
            _warnings.warn("i", IdentifiabilityWarning)
    assert [w.message for w in inner] == ["c"]
    assert [w.message for w in outer] == ["i"]


def test_captures_do_not_cross_threads_or_touch_global_state():
    filters, show = list(warnings.filters), warnings.showwarning
    barrier = threading.Barrier(2)
    got: dict[str, list[str]] = {}
    leaked: list[str] = []

    def capturing() -> None:
        with _warnings.captured() as caught:
            barrier.wait()  # the other thread warns while this block is open
            barrier.wait()
            _warnings.warn("mine", UserWarning)
        got["capturing"] = [w.message for w in caught]

    def plain() -> None:
        barrier.wait()
        with warnings.catch_warnings(record=True) as rec:  # pytest's own recorder
            warnings.simplefilter("always")
            _warnings.warn("other thread", UserWarning)
        leaked.extend(str(w.message) for w in rec)
        barrier.wait()

    threads = [threading.Thread(target=capturing), threading.Thread(target=plain)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got["capturing"] == ["mine"]
    assert leaked == ["other thread"]
    assert warnings.filters == filters and warnings.showwarning is show


def test_two_threads_fitting_at_once_keep_their_own_fit_warnings():
    from snorkel_structured.synthetic import make_ranking_data

    data = make_ranking_data(500, seed=0)
    clean = data.L
    # a copy of the truth as a fourth LF: the model sees it as never wrong and warns
    copied = np.column_stack([data.L, data.Y])
    expected = {
        name: ss.StructuredLabelModel(data.space, seed=0).fit(L).fit_warnings_
        for name, L in (("clean", clean), ("copied", copied))
    }
    assert expected["clean"] == [] and len(expected["copied"]) == 1
    filters, show = list(warnings.filters), warnings.showwarning
    got: dict[str, list[list[str]]] = {"clean": [], "copied": []}
    barrier = threading.Barrier(2)

    def fit_many(name: str, L: np.ndarray) -> None:
        barrier.wait()
        for _ in range(6):
            lm = ss.StructuredLabelModel(data.space, seed=0).fit(L)
            got[name].append(lm.fit_warnings_)

    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")
        threads = [
            threading.Thread(target=fit_many, args=("clean", clean)),
            threading.Thread(target=fit_many, args=("copied", copied)),
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    for name in got:
        assert got[name] == [expected[name]] * 6, name
    # every fit of the copied LF still showed its warning to the user, once
    ours = [w for w in shown if issubclass(w.category, IdentifiabilityWarning)]
    assert len(ours) == 6
    assert warnings.filters == filters and warnings.showwarning is show
