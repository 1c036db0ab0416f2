import subprocess
import sys

import pandas as pd
import pytest

import snorkel_structured as ss
from snorkel_structured.experiments import cli


@pytest.mark.parametrize("experiment", cli.EXPERIMENTS)
def test_reproduce_tiny_grid_writes_csv_png_and_table(experiment, tmp_path, capsys):
    assert (
        cli.main(
            [
                "reproduce",
                experiment,
                "--sizes",
                "400",
                "--seeds",
                "0-1",
                "--out",
                str(tmp_path),
                "--no-progress",
            ]
        )
        == 0
    )
    table = pd.read_csv(tmp_path / f"{experiment}.csv")
    assert set(table.seed) == {0, 1} and set(table.n) == {400}
    value = "abs_error" if "abs_error" in table else "accuracy"
    assert table[value].notna().all() and (table[value] >= 0).all()
    png = (tmp_path / f"{experiment}.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5_000
    out = capsys.readouterr().out
    assert f"== {experiment}" in out and "Total time" in out
    # the median tables, as files: recomputed from the runs' CSV
    medians = pd.read_csv(tmp_path / f"{experiment}_medians.csv")
    keys = [c for c in ("method", "lf") if c in table]
    expected = table.groupby(keys)[value].median().reset_index()
    got = medians.rename(columns={"n=400": value})[keys + [value]]
    pd.testing.assert_frame_equal(
        got.sort_values(keys).reset_index(drop=True),
        expected.sort_values(keys).reset_index(drop=True),
    )
    markdown = (tmp_path / f"{experiment}_medians.md").read_text()
    assert markdown.startswith("| " + " | ".join(keys) + " | n=400 |")
    assert markdown.count("\n| ") == len(expected)  # one line per row after the header
    assert "seeds 0-1" in markdown
    # each fit's warnings are kept in the CSV (empty when none)
    assert "warning" in table or experiment == "ranking-end-model"


def test_version(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.strip() == f"snorkel-structured {ss.__version__}"


def test_warning_summary_counts_runs_per_method():
    runs = pd.DataFrame(
        {
            "n": [100, 100, 200, 200],
            "seed": [0, 0, 0, 0],
            "method": ["tensor", "mle", "tensor", "mle"],
            "warning": ["W: single component", "", "W: single component", ""],
        }
    )
    assert cli.warning_summary(runs) == {
        "tensor": "warned in 2 of 2 runs: W: single component"
    }


def test_seeds_are_repeatable(tmp_path):
    args = [
        "reproduce",
        "ranking-recovery",
        "--sizes",
        "300",
        "--seeds",
        "3",
        "--no-progress",
    ]
    cli.main([*args, "--out", str(tmp_path / "a")])
    cli.main([*args, "--out", str(tmp_path / "b")])
    a = pd.read_csv(tmp_path / "a" / "ranking-recovery.csv").drop(columns="fit_seconds")
    b = pd.read_csv(tmp_path / "b" / "ranking-recovery.csv").drop(columns="fit_seconds")
    pd.testing.assert_frame_equal(a, b)


def test_parse_seeds_and_help(capsys):
    assert cli._parse_seeds(["0-2", "5,7"]) == [0, 1, 2, 5, 7]
    with pytest.raises(SystemExit):
        cli.main(["reproduce", "--help"])
    text = capsys.readouterr().out
    assert "--quick" in text and "ranking-recovery" in text
    # the module entry point, as a user runs it
    bad = subprocess.run(
        [sys.executable, "-m", "snorkel_structured", "reproduce", "nonsense"],
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2 and "invalid choice" in bad.stderr
