"""The result store of compare/reproduce runs: folders never shared or silently reused, every
finished episode on disk at once, failures recorded, tables rebuilt from the store."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from schedgym.envs.gain_overhead import ENV_ID as GO
from schedgym.train import backend
from schedgym.train.runspec import RunSpec
from schedgym.train.store import RECORDS, RunStore, read_records, run_folder_name

from .sweep_cli import main as cli

SMALL = ["--set", "n_types=3", "--set", "n_instances=3", "--set", "horizon=12"]
HELPER = str(Path(__file__).with_name("sweep_cli.py"))


def _meta_json():
    """The smallest ``meta.json`` a run folder may have (its required keys only)."""
    return {"command": "compare", "env_id": GO, "agents": ["a"], "seeds": [0, 1, 2],
            "instance_seeds": [0], "settings": [{"name": "", "overrides": {}}]}


def _meta():
    return RunSpec.from_json(_meta_json())


def _rec(seed, status="ok", reward=1.0, agent="a"):
    """A record of ``_meta()``'s run (its env configuration, all fields of its status)."""
    rec = {"key": ["", agent, 0, seed], "status": status, "env_id": GO, "scenario": None,
           "overrides": {}, "env_kwargs": {}}
    if status == "ok":
        rec.update(metrics={"reward": reward}, steps=1, decision_ms=0.1, wall_s=0.1)
    else:
        rec["error"] = "boom"
    return rec


def test_folder_name_reflects_env_scenario_overrides_and_hash():
    lin = run_folder_name(GO, None, {"utility": "linear"}, {"x": 1})
    mix = run_folder_name(GO, None, {"utility": "mixed"}, {"x": 1})
    assert lin.startswith("GainOverhead-v0-paper-default-utility=linear-")
    assert mix.startswith("GainOverhead-v0-paper-default-utility=mixed-") and lin != mix
    assert run_folder_name(GO, None, {}, {"x": 1}) != run_folder_name(GO, None, {}, {"x": 2})


def test_existing_folder_is_refused_unless_resume_or_overwrite(tmp_path):
    store = RunStore.create(tmp_path / "run", _meta())
    store.close()
    with pytest.raises(ValueError, match="exists; finish it with --resume"):
        RunStore.create(tmp_path / "run", _meta())
    RunStore.open(tmp_path / "run").close()
    again = RunStore.create(tmp_path / "run", _meta(), overwrite=True)
    assert again.records() == []
    # a folder held by a live process is never overwritten or resumed by another
    with pytest.raises(ValueError, match="in use by another schedgym process"):
        (tmp_path / "run" / ".lock").write_text("1")  # pid 1 is alive
        RunStore.open(tmp_path / "run")
    again.close()
    # --overwrite never deletes a folder that is not a run folder
    other = tmp_path / "data"
    other.mkdir()
    (other / "precious.txt").write_text("keep")
    with pytest.raises(ValueError, match="not a schedgym run folder"):
        RunStore.create(other, _meta(), overwrite=True)
    assert (other / "precious.txt").read_text() == "keep"


def test_records_round_trip_latest_wins_and_torn_lines_are_skipped(tmp_path):
    store = RunStore.create(tmp_path / "run", _meta())
    store.add(_rec(0, "error"))
    store.add(_rec(1, reward=1.0), curve=np.array([0.5, 1.0]))
    assert store.done() == {("", "a", 0, 1)}
    store.add(_rec(0, reward=2.0), curve=np.array([2.0]))
    with open(tmp_path / "run" / RECORDS, "a") as fh:
        fh.write('{"key": ["", "a", 0, 2], "sta')  # killed in the middle of a write
    store.close()
    again = RunStore.open(tmp_path / "run", lock=False)
    assert again.done() == {("", "a", 0, 0), ("", "a", 0, 1)}
    rec = {tuple(r["key"]): r for r in again.records()}[("", "a", 0, 0)]
    np.testing.assert_array_equal(again.curve(rec), [2.0])
    assert len(list(read_records(tmp_path / "run"))) == 3


def test_unwritable_out_fails_before_any_episode_with_one_line(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    rc = cli(["compare", GO, "--agents", "random", "--seeds", "0", *SMALL, "--out",
              str(blocker / "run"), "--quiet"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1
    assert "is not writable" in err[0] and str(blocker / "run") in err[0]


def test_duplicate_agent_specs_are_an_error(tmp_path, capsys):
    rc = cli(["compare", GO, "--agents", "drf,drf", "--seeds", "0", *SMALL, "--out",
              str(tmp_path / "r"), "--quiet"])
    assert rc == 2 and "'drf' is given twice" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()


def test_failing_episode_is_recorded_and_the_others_continue(tmp_path, monkeypatch, capsys):
    real = backend._episode

    def flaky(task):
        if task.agent == "fairness" and task.seed == 1:
            raise RuntimeError("injected failure")
        return real(task)

    monkeypatch.setattr(backend, "_episode", flaky)
    out = tmp_path / "run"
    rc = cli(["compare", GO, "--agents", "drf,fairness", "--seeds", "0-1", *SMALL, "--out",
              str(out), "--workers", "1", "--quiet", "--no-plots"])
    err = capsys.readouterr().err
    assert rc == 1
    assert "1 of 6 tasks failed" in err and "fairness instance_seed=0 seed=1" in err
    recs = {tuple(r["key"]): r for _, r in read_records(out)}
    assert recs[("", "fairness", 0, 1)]["status"] == "error"
    assert "injected failure" in recs[("", "fairness", 0, 1)]["error"]
    assert sum(r["status"] == "ok" for r in recs.values()) == 5
    # --resume retries only the failed episode; then the run is complete
    monkeypatch.setattr(backend, "_episode", real)
    assert cli(["compare", "--resume", str(out), "--workers", "1", "--quiet",
                "--no-plots"]) == 0
    recs = {tuple(r["key"]): r for _, r in read_records(out)}
    assert all(r["status"] == "ok" for r in recs.values()) and len(recs) == 6
    assert len((out / RECORDS).read_text().splitlines()) == 7


def test_report_rebuilds_the_table_and_files_from_the_store(tmp_path, capsys):
    out = tmp_path / "run"
    assert cli(["compare", GO, "--agents", "drf,random", "--seeds", "0-1", *SMALL, "--out",
                str(out), "--workers", "1", "--quiet", "--no-plots"]) == 0
    first = (out / "summary.csv").read_text()
    for f in ("summary.csv", "summary.json", "episodes.csv", "curves.npz"):
        (out / f).unlink()
    capsys.readouterr()
    assert cli(["report", str(out), "--no-plots"]) == 0
    assert "drf" in capsys.readouterr().out
    assert (out / "summary.csv").read_text() == first
    meta = json.loads((out / "meta.json").read_text())
    assert meta["agents"] == ["drf", "random"] and meta["seeds"] == [0, 1]


def test_report_out_writes_elsewhere_and_never_overwrites_a_foreign_folder(tmp_path, capsys):
    run = tmp_path / "run"
    assert cli(["compare", GO, "--agents", "drf,random", "--seeds", "0-1", *SMALL, "--out",
                str(run), "--workers", "1", "--quiet", "--no-plots"]) == 0
    before = {f.name: f.read_bytes() for f in run.iterdir() if f.is_file()}
    out = tmp_path / "rep" / "a"
    for _ in range(2):  # a second report into the same folder rewrites it
        assert cli(["report", str(run), "--no-plots", "--out", str(out)]) == 0
    assert (out / "summary.csv").read_bytes() == before["summary.csv"]
    assert {"episodes.csv", "summary.json", "curves.npz"} <= {f.name for f in out.iterdir()}
    assert {f.name: f.read_bytes() for f in run.iterdir() if f.is_file()} == before
    # another run's report folder, a user's folder, the run folder itself: refused, one line
    capsys.readouterr()
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep")
    for bad, why in ((mine, "not an earlier report of"), (run, "the run folder itself"),
                     (mine / "notes.txt", "is a file")):
        assert cli(["report", str(run), "--no-plots", "--out", str(bad)]) == 2
        err = capsys.readouterr().err
        assert f"out={str(bad)!r} is invalid: " in err and why in err, err
    assert (mine / "notes.txt").read_text() == "keep" and sorted(mine.iterdir()) == [
        mine / "notes.txt"]


def test_two_concurrent_runs_with_the_same_arguments_never_share_a_folder(tmp_path):
    out = tmp_path / "same"
    cmd = [sys.executable, HELPER, "compare", GO, "--agents", "drf", "--seeds", "0-1", *SMALL,
           "--out", str(out), "--workers", "1", "--quiet", "--no-plots", "--no-benchmarks"]
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              cwd=Path(__file__).parents[2]) for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    rcs = sorted(p.returncode for p in procs)
    assert rcs == [0, 2], outs
    loser = [o for p, o in zip(procs, outs, strict=True) if p.returncode == 2][0]
    assert "run folder exists" in loser[1] or "in use by another" in loser[1]
    keys = [tuple(r["key"]) for _, r in read_records(out)]
    assert sorted(keys) == [("", "drf", 0, 0), ("", "drf", 0, 1)]  # one run's records only


def test_resume_keeps_the_runs_own_configuration(tmp_path, capsys):
    out = tmp_path / "run"
    RunStore.create(out, _meta()).close()
    rc = cli(["compare", "--resume", str(out), "--agents", "drf", "--set", "horizon=3"])
    err = capsys.readouterr().err
    assert rc == 2 and "--agents, --set cannot be given with --resume" in err
