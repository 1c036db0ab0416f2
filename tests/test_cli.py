import subprocess
import sys
import tempfile
from pathlib import Path

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
    args = cli.build_parser().parse_args(["reproduce", "all", "--seeds", "0-2", "5,7"])
    assert cli._parse_seeds(args.seeds) == [0, 1, 2, 5, 7]
    assert cli._parse_seeds(None) is None
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


@pytest.mark.parametrize(
    ("values", "seeds"),
    [
        (["3"], [3]),
        (["0-2"], [0, 1, 2]),
        (["4-4"], [4]),
        (["0", "1", "2"], [0, 1, 2]),
        (["0,3,5-7"], [0, 3, 5, 6, 7]),
        (["0,"], [0]),  # a stray comma, accepted as before
        ([" 1 - 2 "], [1, 2]),
    ],
)
def test_seed_forms_that_parse(values, seeds):
    for command in (["reproduce", "hyperbolic"], ["benchmark"]):
        args = cli.build_parser().parse_args([*command, "--seeds", *values])
        assert cli._parse_seeds(args.seeds) == seeds


# Each bad value is a usage error (exit 2) naming the option, with no traceback and
# before any run: these ended in int()'s ValueError, or (an empty range) in a pandas
# AttributeError after the runs.
def _usage_error(argv, capsys, monkeypatch) -> str:
    """stderr of the CLI on ``argv``, which must exit 2 (a usage error) without a
    traceback and without starting any run."""
    monkeypatch.setattr(cli, "run_experiment", _must_not_run)
    monkeypatch.setattr(cli, "run_benchmark_command", _must_not_run)
    with pytest.raises(SystemExit) as exit_info:
        cli.main([*argv, "--no-progress"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["reproduce", "hyperbolic", "--seeds", "abc"],
            "argument --seeds: invalid seed 'abc'",
        ),
        (
            ["reproduce", "hyperbolic", "--seeds", "1-2-3"],
            "argument --seeds: invalid seed '1-2-3'",
        ),
        (
            ["reproduce", "hyperbolic", "--seeds", "-1"],
            "seeds are non-negative integers",
        ),
        (["reproduce", "hyperbolic", "--seeds", "0,-1"], "invalid seed '-1'"),
        (["reproduce", "hyperbolic", "--seeds", "3-"], "invalid seed '3-'"),
        (
            ["reproduce", "ranking-recovery", "--seeds", "5-2"],
            "the range '5-2' holds no seeds; write the lower seed first (2-5)",
        ),
        (
            ["reproduce", "hyperbolic", "--seeds", ","],
            "argument --seeds: no seeds in ','",
        ),
        (["benchmark", "--seeds", "x"], "argument --seeds: invalid seed 'x'"),
        (
            ["reproduce", "hyperbolic", "--sizes", "0"],
            "argument --sizes: invalid sample size '0': sizes are positive integers",
        ),
        (["reproduce", "hyperbolic", "--sizes", "-5"], "invalid sample size '-5'"),
        (["reproduce", "hyperbolic", "--sizes", "1e3"], "invalid sample size '1e3'"),
        (
            ["reproduce", "hyperbolic", "--out", "/dev/null/x"],
            "argument --out: cannot create the folder '/dev/null/x'",
        ),
        (
            ["benchmark", "--out", "/dev/null/x"],
            "argument --out: cannot create the folder",
        ),
    ],
)
def test_bad_arguments_are_usage_errors(argv, message, capsys, monkeypatch):
    err = _usage_error(argv, capsys, monkeypatch)
    assert message in err
    if "--seeds" in message:  # says which forms are accepted
        assert "a range (0-9)" in err or "lower seed first" in err


# Seed ranges are capped (a typo such as 0-999999999999 ended in a MemoryError) and
# seeds above 2**32 - 1 refused (Snorkel's LabelModel failed on them inside the run).
@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["reproduce", "hyperbolic", "--seeds", "0-10000"],
            "'0-10000' holds 10001 or more seeds; one --seeds value may hold at most "
            "10,000",
        ),
        (
            ["benchmark", "--seeds", "0-9999,10000"],
            "'0-9999,10000' holds 10001 or more seeds",
        ),
        (
            ["benchmark", "--seeds", "4294967296"],
            "argument --seeds: seed 4294967296 in '4294967296' is too large: seeds go "
            "up to 4294967295 (2**32 - 1",
        ),
        (
            ["reproduce", "hyperbolic", "--seeds", "0", "99999999999999999999999"],
            "seed 99999999999999999999999 in '99999999999999999999999' is too large",
        ),
    ],
)
def test_too_many_or_too_large_seeds_are_usage_errors(
    argv, message, capsys, monkeypatch
):
    assert message in _usage_error(argv, capsys, monkeypatch)


def test_seeds_at_the_limits_parse():
    assert cli._seed_list("0-9999") == list(range(10_000))
    assert cli._seed_list("5,4294967295") == [5, 2**32 - 1]
    assert cli.MAX_SEEDS == 10_000 and cli.MAX_SEED == 2**32 - 1


def _must_not_run(*args, **kwargs):
    raise AssertionError("a run started despite a bad argument")


def test_out_that_is_a_file_is_a_usage_error(tmp_path, capsys):
    a_file = tmp_path / "results.csv"
    a_file.write_text("")
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["reproduce", "hyperbolic", "--out", str(a_file)])
    assert exit_info.value.code == 2
    assert "exists and is not a folder" in capsys.readouterr().err


@pytest.mark.parametrize("command", [["reproduce", "hyperbolic"], ["benchmark"]])
def test_out_that_refuses_files_fails_in_one_line_before_any_run(
    command, tmp_path, capsys, monkeypatch
):
    # What os.access cannot see (root, /proc, a read-only mount): the folder refuses
    # new files. Simulated, since a test run as root can write anywhere.
    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(tempfile, "NamedTemporaryFile", refuse)
    monkeypatch.setattr(cli, "run_experiment", _must_not_run)
    import snorkel_structured.experiments.benchmark as benchmark

    monkeypatch.setattr(benchmark, "run_benchmark", _must_not_run)
    out = tmp_path / "out"
    assert cli.main([*command, "--out", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"error: cannot write into --out {str(out)!r} (Permission denied)" in err


def test_out_default_and_given_are_paths(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    parser = cli.build_parser()
    assert parser.parse_args(["benchmark"]).out == Path("results")
    given = parser.parse_args(["reproduce", "all", "--out", str(tmp_path / "a" / "b")])
    assert given.out == tmp_path / "a" / "b"
    assert not (tmp_path / "a").exists()  # parsing creates nothing


def test_sizes_too_small_to_fit_fail_in_one_line(tmp_path, capsys):
    # 2 rows cannot identify the LFs: the model's own message, one line, exit 1
    # (it had ended in a traceback)
    argv = ["reproduce", "hyperbolic", "--sizes", "2", "--seeds", "0", "--out"]
    assert cli.main([*argv, str(tmp_path), "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert "error: hyperbolic at sizes [2]: Too few overlapping rows" in err
    assert "Traceback" not in err
