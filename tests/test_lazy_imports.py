"""Import-time behaviour: the public names load on first use, and stay the same objects.

``import snorkel_structured``, ``--help`` and ``--version`` must not import PyTorch
(through Snorkel's label model) or scikit-learn; each check runs in a fresh interpreter,
since this test process has imported everything already.
"""

import importlib
import pickle
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import sklearn.exceptions
from snorkel.labeling.model.base_labeler import BaseLabeler

import snorkel_structured as ss
from snorkel_structured import label_model

ROOT = Path(__file__).resolve().parents[1]


def _loaded_after(code: str) -> dict:
    """Run ``code`` in a fresh interpreter; which heavy packages did it import?"""
    probe = (
        f"{code}\nimport sys, json\n"
        "print(json.dumps({m: m in sys.modules for m in "
        "('torch', 'sklearn', 'snorkel', 'pandas', 'scipy', 'matplotlib')}))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    import json

    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_import_loads_no_heavy_dependency():
    loaded = _loaded_after("import snorkel_structured")
    assert not any(loaded.values()), loaded


@pytest.mark.parametrize("flag", ["--help", "--version"])
def test_cli_help_and_version_do_not_import_torch(flag):
    code = (
        "from snorkel_structured.experiments.cli import main\n"
        f"try:\n    main([{flag!r}])\nexcept SystemExit as e:\n    assert e.code == 0\n"
    )
    loaded = _loaded_after(code)
    assert not loaded["torch"] and not loaded["sklearn"] and not loaded["pandas"]


def test_manifold_label_model_does_not_import_torch():
    loaded = _loaded_after("import snorkel_structured as ss; ss.ManifoldLabelModel")
    assert not loaded["torch"]


def test_structured_label_model_fits_without_torch_and_subclasses_base_labeler():
    # Snorkel's LabelModel, imported after ours, subclasses the same BaseLabeler.
    code = (
        "import numpy as np, sys\n"
        "import snorkel_structured as ss\n"
        "space = ss.Permutations(3)\n"
        "rng = np.random.default_rng(0)\n"
        "L = rng.integers(0, space.n_labels, size=(200, 3))\n"
        "lm = ss.StructuredLabelModel(space, seed=0).fit(L)\n"
        "assert lm.predict(L).shape == (200,)\n"
        "assert 'torch' not in sys.modules\n"
        "from snorkel.labeling.model import LabelModel\n"
        "from snorkel.labeling.model.base_labeler import BaseLabeler\n"
        "assert issubclass(ss.StructuredLabelModel, BaseLabeler)\n"
        "assert issubclass(LabelModel, BaseLabeler)\n"
    )
    assert _loaded_after(code)["torch"]  # only once Snorkel's LabelModel is imported
    # ... and in this process, where Snorkel's model package came first:
    assert issubclass(ss.StructuredLabelModel, BaseLabeler)
    assert label_model.StructuredLabelModel is ss.StructuredLabelModel


@pytest.mark.parametrize("name", ss.__all__)
def test_every_public_name_is_the_object_its_module_defines(name):
    value = getattr(ss, name)
    if name == "__version__":
        return
    module_name = ss._LAZY[name]
    module = importlib.import_module(module_name)
    expected = (
        module if module_name.rsplit(".", 1)[-1] == name else getattr(module, name)
    )
    assert value is expected
    assert name in dir(ss)


def test_subpackages_remain_attributes():
    # ss.spaces.PERMUTATION_METRICS and the like worked when __init__ was eager.
    assert ss.spaces.PERMUTATION_METRICS
    assert (
        ss.noise.log_posterior
        is importlib.import_module("snorkel_structured.noise.finite").log_posterior
    )
    with pytest.raises(AttributeError, match="no attribute 'nonexistent'"):
        ss.nonexistent  # noqa: B018
    with pytest.raises(AttributeError, match="no attribute 'nonexistent'"):
        label_model.nonexistent  # noqa: B018


def test_not_fitted_error_is_sklearns_and_caught_as_such():
    from snorkel_structured.exceptions import NotFittedError

    assert NotFittedError is ss.NotFittedError
    assert issubclass(NotFittedError, sklearn.exceptions.NotFittedError)
    space = ss.Permutations(3)
    with pytest.raises(sklearn.exceptions.NotFittedError):
        ss.StructuredLabelModel(space).predict([[0, 1, 2]])
    err = pickle.loads(pickle.dumps(NotFittedError("not fitted")))
    assert type(err) is NotFittedError and str(err) == "not fitted"


def test_exceptions_module_defers_sklearn():
    loaded = _loaded_after(
        "from snorkel_structured.exceptions import IdentifiabilityWarning"
    )
    assert not loaded["sklearn"]


def test_version_matches_the_package_metadata():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert ss.__version__ == project["version"]
    proc = subprocess.run(
        [sys.executable, "-m", "snorkel_structured", "--version"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0
    assert proc.stdout.strip() == f"snorkel-structured {project['version']}"
