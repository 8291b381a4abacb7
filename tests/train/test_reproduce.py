"""``schedgym reproduce``: experiment YAMLs load and validate; a tiny run writes its report."""

from __future__ import annotations

from pathlib import Path

import pytest

from train.reproduce import (
    CONFIG_DIR,
    find_experiment,
    load_experiment,
    run_experiment,
    write_report,
)


@pytest.mark.parametrize("path", sorted(CONFIG_DIR.glob("*.yml")), ids=lambda p: p.stem)
def test_every_shipped_experiment_loads(path):
    cfg = load_experiment(path)
    assert cfg["name"] == path.stem
    assert cfg["reference"] in cfg["agents"]


def test_typos_and_bad_paper_tables_are_errors(tmp_path):
    bad = tmp_path / "bad.yml"
    bad.write_text("name: x\nenv_id: schedgym/GainOverhead-v0\nagents: [drf]\nmetric: reward\n"
                   "seedz: 0-2\n")
    with pytest.raises(ValueError, match="unknown key 'seedz'"):
        load_experiment(bad)
    bad.write_text("name: x\nenv_id: schedgym/GainOverhead-v0\nagents: [drf]\nmetric: reward\n"
                   "sweeps:\n  - parameter: horizon\n    values: [10, 20]\n"
                   "    paper: {drf: [1.0]}\n")
    with pytest.raises(ValueError, match="expected 2"):
        load_experiment(bad)
    with pytest.raises(ValueError, match="experiment='nope'"):
        find_experiment("nope")


def test_tiny_sweep_writes_report_with_paper_columns(tmp_path: Path):
    cfg = {"name": "tiny", "paper": "test", "env_id": "schedgym/GainOverhead-v0",
           "scenario": None, "overrides": {"n_types": 3, "n_instances": 4, "horizon": 15},
           "agents": ["ogasched", "fairness"], "reference": "ogasched", "seeds": "0-1",
           "metric": "avg_reward",
           "sweeps": [{"parameter": "arrival_prob", "values": [0.5, 0.9],
                       "paper": {"ogasched": [2.0, 4.0], "fairness": [1.0, 5.0]}}]}
    rows, runs = run_experiment(cfg, [0, 1], {}, workers=1, show_progress=False)
    assert len(rows) == 4 and set(runs) == {"arrival_prob=0.5", "arrival_prob=0.9"}
    fair = [r for r in rows if r["agent"] == "fairness"]
    assert fair[0]["paper_ref_improvement_pct"] == pytest.approx(100.0)
    assert fair[1]["paper_ref_improvement_pct"] == pytest.approx(-20.0)
    # ours: the improvement is computed per seed from the same episodes
    res = runs["arrival_prob=0.5"]
    q = {(r.agent, r.seed): r.metrics["avg_reward"] for r in res}
    want = sum((q[("ogasched", s)] / q[("fairness", s)] - 1) * 100 for s in (0, 1)) / 2
    assert fair[0]["ref_improvement_pct"] == pytest.approx(want)
    write_report(cfg, rows, runs, tmp_path, [0, 1], "schedgym reproduce tiny")
    text = (tmp_path / "report.md").read_text()
    assert "| 0.5 | fairness |" in text and "100.00" in text
    assert (tmp_path / "plot.png").stat().st_size > 0 and (tmp_path / "rows.csv").is_file()
