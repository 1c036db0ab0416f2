import subprocess
import sys

import pandas as pd
import pytest

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
