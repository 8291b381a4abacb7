"""``schedgym reproduce``: experiment YAMLs load and validate; a tiny run writes its report."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from schedgym.train.experiment_report import metric_value, run_experiment, write_report
from schedgym.train.experiments import CONFIG_DIR, find_experiment, load_experiment


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


def test_sweep_overrides_labels_mapping_values_and_result_metrics(tmp_path: Path):
    base = {"name": "tiny2", "paper": "test", "env_id": "schedgym/GainOverhead-v0",
            "scenario": None, "overrides": {"n_types": 3, "n_instances": 4, "horizon": 15},
            "agents": ["ogasched", "fairness"], "reference": "ogasched", "seeds": "0-1",
            "metric": "decision_time"}
    cfg = {**base, "sweeps": [
        # two sweeps over one parameter under different fixed settings, told apart by label
        {"parameter": "arrival_prob", "label": "short", "overrides": {"horizon": 7},
         "values": [0.5]},
        {"parameter": "arrival_prob", "label": "long", "overrides": {"horizon": 9},
         "values": [0.5]},
        # a mapping value sets several parameters at once (and beats the sweep's overrides)
        {"parameter": "(n_types, horizon)", "overrides": {"horizon": 9},
         "values": [{"n_types": 2, "horizon": 5}]}]}
    rows, runs = run_experiment(cfg, [0, 1], {}, workers=1, show_progress=False)
    steps = {key: {r.steps for r in res} for key, res in runs.items()}
    assert steps == {"short=0.5": {7}, "long=0.5": {9},
                     "(n_types, horizon)={'n_types': 2, 'horizon': 5}": {5}}
    assert [r["sweep"] for r in rows] == ["short", "short", "long", "long",
                                          "(n_types, horizon)", "(n_types, horizon)"]
    # decision_time is read from the episode result (mean seconds per predict call)
    og = runs["short=0.5"][0]
    assert rows[0]["decision_time"] == pytest.approx(
        np.mean([r.decision_time for r in runs["short=0.5"] if r.agent == "ogasched"]))
    assert rows[0]["ms_per_decision"] == pytest.approx(1e3 * rows[0]["decision_time"])
    assert og.decision_time > 0
    # the command line's overrides apply everywhere but the swept value still wins
    rows2, runs2 = run_experiment(cfg, [0], {"horizon": 6}, workers=1, show_progress=False)
    assert {k: {r.steps for r in v} for k, v in runs2.items()} == {
        "short=0.5": {6}, "long=0.5": {6}, "(n_types, horizon)={'n_types': 2, 'horizon': 5}": {5}}
    write_report(cfg, rows, runs, tmp_path, [0, 1], "schedgym reproduce tiny2")
    text = (tmp_path / "report.md").read_text()
    assert "## short" in text and "## long" in text and "Fixed in this sweep: `horizon=7`" in text
    assert "| n_types=2, horizon=5 | fairness |" in text


def test_duplicate_sweep_labels_and_unknown_metrics_are_errors(tmp_path):
    bad = tmp_path / "bad.yml"
    bad.write_text("name: x\nenv_id: schedgym/GainOverhead-v0\nagents: [drf]\nmetric: reward\n"
                   "sweeps:\n  - {parameter: horizon, values: [10]}\n"
                   "  - {parameter: horizon, values: [20]}\n")
    with pytest.raises(ValueError, match="distinct 'label'"):
        load_experiment(bad)
    from schedgym.train.runner import EpisodeResult
    res = EpisodeResult("a", 0, 1, {"reward": 1.0}, np.ones(1), 0.5, 2.0)
    assert metric_value(res, "reward") == 1.0 and metric_value(res, "wall_time") == 2.0
    with pytest.raises(KeyError, match="rewrd"):
        metric_value(res, "rewrd")


def test_bad_set_values_fail_with_one_line_before_any_episode(tmp_path, capsys):
    """``--set duration_mean=abc`` exited 0, ignored the value and recorded it."""
    from .sweep_cli import main as cli

    out = tmp_path / "r"
    rc = cli(["reproduce", "onsocmax-duration", "--set", "duration_mean=abc", "--out", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1
    assert "duration_mean" in err[0] and "'abc'" in err[0] and "sweeps" in err[0]
    rc = cli(["reproduce", "onsocmax-duration", "--set", "workload_mean=abc", "--out", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "workload_mean" in err[0]
    assert not out.exists()


def test_reproduce_runs_through_the_store_over_instances_and_resumes(tmp_path, capsys):
    import yaml

    from schedgym.train.store import RunStore, read_records

    from .sweep_cli import main as cli

    cfg = {"name": "tiny3", "paper": "test", "env_id": "schedgym/GainOverhead-v0",
           "overrides": {"n_types": 3, "n_instances": 3, "horizon": 10},
           "agents": ["ogasched", "fairness"], "seeds": "0-1", "instance_seeds": "3-4",
           "metric": "avg_reward", "sweeps": [{"parameter": "arrival_prob",
                                               "values": [0.5, 0.9],
                                               "paper": {"ogasched": [2.0, 4.0],
                                                         "fairness": [1.0, 5.0]}}]}
    path = tmp_path / "tiny3.yml"
    path.write_text(yaml.safe_dump(cfg))
    out = tmp_path / "run"
    assert cli(["reproduce", str(path), "--out", str(out), "--workers", "1", "--quiet"]) == 0
    recs = [r for _, r in read_records(out)]
    assert len(recs) == 2 * 2 * 2 * 2 and {r["key"][2] for r in recs} == {3, 4}
    text = (out / "report.md").read_text()
    assert "instance seeds 3-4 (2)" in text and "| over instances |" in text
    # drop half the records: --resume runs only those, and the report is unchanged
    lines = (out / "episodes.jsonl").read_text().splitlines()
    (out / "episodes.jsonl").write_text("\n".join(lines[:7]) + "\n")
    capsys.readouterr()
    assert cli(["reproduce", "--resume", str(out), "--workers", "1", "--quiet"]) == 0
    assert len(RunStore.open(out, lock=False).records()) == 16
    rows = (out / "rows.csv").read_text().splitlines()
    assert len(rows) == 1 + 4
    assert cli(["report", str(out)]) == 0
    assert "## arrival_prob" in capsys.readouterr().out
    # --out: the same report elsewhere, the run folder untouched
    mtimes = {f.name: f.stat().st_mtime_ns for f in out.iterdir()}
    assert cli(["report", str(out), "--out", str(tmp_path / "rep")]) == 0
    assert (tmp_path / "rep" / "rows.csv").read_text() == (out / "rows.csv").read_text()
    assert (tmp_path / "rep" / "plot.png").is_file()
    assert {f.name: f.stat().st_mtime_ns for f in out.iterdir()} == mtimes


def test_benchmark_gap_metric_is_the_regret_per_episode(tmp_path):
    from schedgym import offline
    from schedgym.train.runner import build_agent, make_env, run_episode

    cfg = {"name": "tinyregret", "paper": "test", "env_id": "schedgym/GainOverhead-v0",
           "scenario": None, "overrides": {"n_types": 3, "n_instances": 3, "horizon": 10},
           "agents": ["ogasched"], "reference": "ogasched", "seeds": "0",
           "instance_seeds": "0", "benchmarks": True, "metric": "hindsight_optimum_gap",
           "sweeps": [{"parameter": "horizon", "values": [6]}]}
    rows, runs = run_experiment(cfg, [0], {}, workers=1, show_progress=False)
    env = make_env(cfg["env_id"], None, 0, {"n_types": 3, "n_instances": 3, "horizon": 6})
    res = run_episode(env, build_agent("ogasched", env), 0)
    env.reset(seed=0)
    want = offline.episode_benchmarks(env)["hindsight_optimum"] - res.metrics["reward"]
    assert rows[0]["hindsight_optimum_gap"] == pytest.approx(want, rel=1e-9)


_GOOD = ("name: x\nenv_id: schedgym/GainOverhead-v0\nagents: [drf]\nmetric: reward\n"
         "overrides: {horizon: 5}\n")


@pytest.mark.parametrize("text,match", [
    ("!!python/object/apply:os.system ['echo pwned']\n", "could not determine a constructor"),
    (_GOOD.replace("name: x", "name: !!python/name:os.system"), "could not determine"),
    (_GOOD.replace("name: x", "name: [a, b]"), r"name=\['a', 'b'\] is invalid"),
    (_GOOD.replace("name: x", "name: ../../escape"), "plain folder name"),
    (_GOOD.replace("env_id: schedgym/GainOverhead-v0", "env_id: 5"), "env_id=5 is invalid"),
    (_GOOD.replace("env_id: schedgym/GainOverhead-v0", "env_id: GainOverhed"), "did you mean"),
    (_GOOD.replace("agents: [drf]", "agents: drf"), "agents='drf' is invalid"),
    (_GOOD.replace("agents: [drf]", "agents: [drf, 3]"), "agents=.* is invalid"),
    (_GOOD.replace("metric: reward", "metric: [reward]"), "metric=.* is invalid"),
    (_GOOD + "seeds: [0, 1]\n", "seeds=.* is invalid"),
    (_GOOD + "seeds: 4-1\n", "seeds='4-1' is invalid"),
    (_GOOD.replace("overrides: {horizon: 5}", "overrides: [horizon]"), "overrides=.* invalid"),
    (_GOOD + "sweeps: {parameter: horizon}\n", "sweeps=.* is invalid"),
    (_GOOD + "sweeps:\n  - {parameter: horizon, values: 5}\n", r"sweeps\[0\].values=5"),
    (_GOOD + "sweeps:\n  - [horizon]\n", r"sweeps\[0\]=\['horizon'\] is invalid"),
    (_GOOD + "benchmarks: yes please\n", "benchmarks='yes please' is invalid"),
    (_GOOD + "paper_improvement_pct: {drf: high}\n", "paper_improvement_pct.drf='high'"),
    ("a: &a [x, x, x]\nb: &b [*a, *a, *a]\nc: [*b, *b, *b]\n", r"alias \(\*a\) is not allowed"),
    ("name: [unclosed\n", "line 2"),
])
def test_bad_experiment_files_are_one_clear_error(tmp_path, text, match):
    """Tags, wrong types and alias bombs gave tracebacks or MemoryError, and
    ``name: [a, b]`` failed only after every episode had run."""
    bad = tmp_path / "bad.yml"
    bad.write_text(text)
    with pytest.raises(ValueError, match=match):
        load_experiment(bad)


def test_experiment_files_must_be_small_regular_files(tmp_path):
    from schedgym.train.safe_yaml import MAX_BYTES

    big = tmp_path / "big.yml"
    big.write_text(_GOOD + "#" * MAX_BYTES + "\n")
    with pytest.raises(ValueError, match="byte limit"):
        load_experiment(big)
    link = tmp_path / "zero.yml"
    link.symlink_to("/dev/zero")
    with pytest.raises(ValueError, match="not a regular file"):
        load_experiment(link)
    with pytest.raises(ValueError, match="does not exist"):
        load_experiment(tmp_path / "missing.yml")


def test_a_bad_experiment_fails_at_the_command_line_before_any_episode(tmp_path, capsys):
    from .sweep_cli import main as cli

    bad = tmp_path / "bad.yml"
    bad.write_text(_GOOD.replace("name: x", "name: [a, b]"))
    out = tmp_path / "r"
    rc = cli(["reproduce", str(bad), "--out", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "name=['a', 'b'] is invalid" in err[0]
    assert not out.exists()


def test_help_and_out_option_name_the_same_run_folder():
    """``reproduce -h`` said results/reproduce/<name>/, --out another pattern."""
    import argparse

    from schedgym.train import reproduce

    parser = argparse.ArgumentParser()
    reproduce.add_parser(parser.add_subparsers())
    sub = parser._subparsers._group_actions[0].choices["reproduce"]  # type: ignore[union-attr]
    out_help = next(a.help for a in sub._actions if "--out" in a.option_strings)
    folder = "results/reproduce/NAME-<overrides>-<hash>"
    assert folder in " ".join(sub.description.split()) and folder in out_help
