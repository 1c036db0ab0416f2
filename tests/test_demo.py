import re

from snorkel_structured import demo


def test_demo_recovers_each_lf_and_beats_the_best_lf(capsys):
    assert demo.main() == 0
    out = capsys.readouterr().out
    rows = re.findall(r"^\s+(\d)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)$", out, re.M)
    assert len(rows) == 3
    for _, truth, estimate, error in rows:
        assert abs(abs(float(truth) - float(estimate)) - float(error)) < 1e-3
        assert float(error) < 0.02  # 1e5 rows: the mle is within 0.02 of E[d^2]
    acc, best = map(
        float,
        re.search(r"exact ranking\): ([\d.]+); best single LF: ([\d.]+)", out).groups(),
    )
    assert acc > best + 0.3
