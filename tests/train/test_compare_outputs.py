"""schedgym compare's additions: plots beside the CSV, --tensorboard, --record, learned agents."""

from __future__ import annotations

import io
import sys

import numpy as np
import pytest

from schedgym.agents.spec import is_learned
from schedgym.train.plots import (
    FrameSampler,
    _stack,
    band,
    best_classical,
    curves_from_npz,
    plot_curves,
)
from schedgym.train.tensorboard import documented_tags, read_scalars

from .conftest import small_overrides
from .sweep_cli import main as cli


def _sets(env_id):
    out = []
    for k, v in small_overrides(env_id).items():
        out += ["--set", f"{k}={v}"]
    return out


def test_compare_writes_plots_tensorboard_and_record(tmp_path, env_id):
    import gymnasium as gym

    from schedgym.train.tensorboard import metric_spec

    out = tmp_path / "cmp"
    rc = cli(["compare", env_id, "--agents", "random,random[seed=3]", "--seeds", "100-101",
              *_sets(env_id), "--out", str(out), "--workers", "1", "--quiet",
              "--no-benchmarks", "--tensorboard", str(tmp_path / "runs"), "--record",
              "--record-frames", "4", "--log-every", "5"])
    assert rc == 0
    for f in ("episodes.csv", "summary.csv", "summary.json", "curves.npz", "compare.png",
              "compare.svg"):
        assert (out / f).is_file(), f
    assert (out / "compare.svg").read_text().lstrip().startswith(("<?xml", "<svg"))
    env = gym.make(env_id, **small_overrides(env_id))
    tags = set(documented_tags(metric_spec(env)))
    env.close()
    name = env_id.split("/")[-1]
    for run in ("random", "random-seed=3"):
        sc = read_scalars(tmp_path / "runs" / name / run)
        assert set(sc) == tags
    pngs = sorted((out / "record").glob("*.png"))
    gifs = sorted((out / "record").glob("*.gif"))
    assert len(pngs) == 2 and len(gifs) == 2
    from PIL import Image

    with Image.open(gifs[0]) as im:
        assert getattr(im, "n_frames", 1) >= 2


def test_no_plots_keeps_the_table_and_csv(tmp_path):
    env_id = "schedgym/GainOverhead-v0"
    out = tmp_path / "cmp"
    assert cli(["compare", env_id, "--agents", "random", "--seeds", "1", *_sets(env_id),
                "--out", str(out), "--workers", "1", "--quiet", "--no-plots"]) == 0
    assert (out / "summary.csv").is_file() and not (out / "compare.png").exists()


def test_learned_agent_next_to_classical(tmp_path):
    from schedgym.train.training import train

    env_id = "schedgym/GainOverhead-v0"
    res = train("a2c", env_id, timesteps=64, overrides=small_overrides(env_id),
                out=tmp_path / "runs", eval_freq=0, checkpoint_freq=0)
    out = tmp_path / "cmp"
    spec = f"a2c:{res.model_path}"
    assert cli(["compare", env_id, "--agents", f"random,{spec}", "--seeds", "100-101",
                *_sets(env_id), "--out", str(out), "--workers", "1", "--quiet"]) == 0
    curves = curves_from_npz(out / "curves.npz")
    assert set(curves) == {"random", spec}
    assert best_classical(curves) == "random"  # the learned agent is never the reference


def test_stack_pads_with_the_final_value():
    y = _stack([np.array([1.0, 2.0, 3.0]), np.array([5.0])])
    np.testing.assert_array_equal(y, [[1, 2, 3], [5, 5, 5]])


def test_band_is_the_student_t_interval():
    from scipy import stats

    x = np.array([[1.0, 0.0], [3.0, 0.0], [5.0, 0.0]])
    m, h = band(x)
    np.testing.assert_allclose(m, [3.0, 0.0])
    np.testing.assert_allclose(h, [stats.t.ppf(0.975, 2) * 2.0 / np.sqrt(3), 0.0])
    m1, h1 = band(x[:1])
    np.testing.assert_allclose(h1, 0.0)


def test_best_classical_ignores_learned_agents(tmp_path):
    curves = {"a": {0: np.array([1.0, 2.0])}, "b": {0: np.array([1.0, 3.0])},
              "ppo:x.zip": {0: np.array([1.0, 9.0])}}
    assert best_classical(curves) == "b"
    assert is_learned("ppo:x.zip") and is_learned("SAC:a/b.zip")
    assert not is_learned("ogasched[timing=oco]") and not is_learned("random")
    paths = plot_curves(curves, tmp_path, "t")
    assert [p.suffix for p in paths] == [".png", ".svg"] and all(p.stat().st_size for p in paths)


@pytest.mark.parametrize("length, n", [(1, 8), (7, 8), (100, 8), (2000, 8), (33, 3)])
def test_frame_sampler_keeps_about_n_even_frames(length, n):
    fs = FrameSampler(n)
    for step in range(1, length + 1):
        if fs.wants(step):
            fs.add(step, np.full((2, 2, 3), step % 255, dtype=np.uint8))
    frames = fs.result(last=(length, np.zeros((2, 2, 3), dtype=np.uint8)))
    steps = [s for s, _ in frames]
    assert len(frames) == min(n, length)
    assert steps == sorted(set(steps)) and steps[-1] == length
    assert len(fs.frames) < 2 * n  # memory stays bounded


def test_best_classical_ignores_clairvoyant_benchmark_agents():
    """FluctuatingSpeed's oracle knows the true means: it is a regret reference, not a rival."""
    from schedgym import agents

    assert agents.is_benchmark("oracle") and not agents.is_benchmark("esdp")
    assert agents.is_benchmark("oracle[foo=1]")
    curves = {"oracle": {0: np.array([5.0, 10.0])}, "esdp": {0: np.array([1.0, 3.0])},
              "hauf": {0: np.array([1.0, 2.0])}}
    assert best_classical(curves) == "esdp"


def test_fluctuating_speed_oracle_gap_is_oracle_minus_reward(tmp_path):
    """The gap column is the realised oracle return minus the reward, per episode;
    ``oracle_value`` is the oracle's *expected* value (theta^T x*), so their difference with the
    reward differs (the 1,293 vs 1,310 seen) and the legend says so."""
    import json

    from schedgym.envs.fluctuating_speed import ENV_ID as FS

    out = tmp_path / "fs"
    assert cli(["compare", FS, "--agents", "hauf,lcf", "--seeds", "0-1", *_sets(FS),
                "--out", str(out), "--workers", "1", "--quiet", "--no-plots"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    bench = summary["benchmarks"]
    with open(out / "episodes.csv") as fh:
        import csv

        eps = list(csv.DictReader(fh))
    for row in summary["summary"]:
        mine = [e for e in eps if e["agent"] == row["agent"]]
        gaps = [bench[f"{e['instance_seed']}|{e['seed']}"]["oracle"] - float(e["reward"])
                for e in mine]
        assert row["oracle_gap"] == pytest.approx(np.mean(gaps), rel=1e-12)
        assert row["ceiling_gap"] == pytest.approx(row["oracle_gap"], rel=1e-12)
        assert row["oracle_gap"] == pytest.approx(row["realised_regret"], rel=1e-9)
        assert row["ratio_to_ceiling"] == pytest.approx(np.mean(
            [float(e["reward"]) / bench[f"{e['instance_seed']}|{e['seed']}"]["oracle"]
             for e in mine]), rel=1e-12)
    assert summary["legend"]["ceiling"] == "oracle"
    assert "EXPECTED" in summary["legend"]["metrics"]["oracle_value"]


def test_table_fits_the_terminal_and_says_which_way_ratios_run(capsys):
    from schedgym.train.runner import EpisodeResult
    from schedgym.train.summary import print_table, summarise

    res = [EpisodeResult(a, s, 3, {"reward": r + s, "avg_reward": (r + s) / 3, "gain": 1.0},
                         np.cumsum([1.0, 1.0, r + s - 2]), 1e-3, 0.1, instance_seed=i)
           for a, r in (("ogasched[timing=lookahead,eta0=5]", 100.0), ("drf", 90.0),
                        ("myopic-opt", 120.0)) for i in (1000, 1001) for s in (0, 1)]
    rows, legend = summarise(res, {})
    assert legend["reference"] == "ogasched[timing=lookahead,eta0=5]"  # the ceiling is not it
    assert legend["ceiling"] == "myopic-opt"
    drf = rows[1]
    want = np.mean([(90.0 + s) / (100.0 + s) for s in (0, 1)])
    assert drf["ratio_to_ref"] == pytest.approx(want)
    assert drf["ratio_to_ceiling"] == pytest.approx(np.mean([(90 + s) / (120 + s)
                                                             for s in (0, 1)]))
    assert drf["ratio_to_ref_min"] == pytest.approx(want)  # identical instances here
    print_table(rows, legend, "schedgym/GainOverhead-v0, scenario mixed-test", width=80)
    text = capsys.readouterr().out
    lines = text.splitlines()
    assert max(len(line) for line in lines[:-1]) <= 80
    assert "scenario mixed-test" in text
    assert "agent/myopic-opt" in text.replace("\n", "") or "agent/myopic-o" in text
    assert "Ratios are agent / reference" in lines[-1]
    assert "over 4 episodes (2 instance seeds x seeds)" in lines[-1]


def test_compare_over_several_instance_seeds(tmp_path):
    import json

    env_id = "schedgym/GainOverhead-v0"
    out = tmp_path / "inst"
    assert cli(["compare", env_id, "--agents", "drf,random", "--seeds", "0-1",
                "--instance-seeds", "1000-1002", *_sets(env_id), "--out", str(out),
                "--workers", "1", "--quiet", "--no-plots", "--no-benchmarks"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    rnd = summary["summary"][1]
    assert rnd["episodes"] == 6 and rnd["instances"] == 3
    assert rnd["ratio_to_ref_min"] <= rnd["ratio_to_ref"] <= rnd["ratio_to_ref_max"]
    with open(out / "episodes.csv") as fh:
        import csv

        keys = {(r["agent"], r["instance_seed"], r["seed"]) for r in csv.DictReader(fh)}
    assert len(keys) == 12 and {k[1] for k in keys} == {"1000", "1001", "1002"}
    # distinct instances are distinct worlds: drf's return differs across instance seeds
    assert len({round(r, 6) for r in _returns(out, "drf")}) > 3


def _returns(out, agent):
    import csv

    with open(out / "episodes.csv") as fh:
        return [float(r["reward"]) for r in csv.DictReader(fh) if r["agent"] == agent]


def test_learned_agent_plays_in_the_mode_of_its_run_json(tmp_path):
    """A learned agent's run.json tells compare which mode kwargs to build its env with; the
    world (scenario, overrides, seeds) stays the run's."""
    import json

    from schedgym.agents.record import learned_env_kwargs
    from schedgym.train.head_to_head import compare_spec
    from schedgym.train.sweep import plan

    model = tmp_path / "run" / "model.zip"
    model.parent.mkdir()
    (model.parent / "run.json").write_text(json.dumps({"env_kwargs": {
        "action_mode": "fractions", "instance_features": True, "horizon": 99,
        "instance_seed": 7, "scenario": "large-scale"}}))
    spec = f"ppo:{model}"
    assert learned_env_kwargs(spec) == {"action_mode": "fractions", "instance_features": True}
    assert learned_env_kwargs("drf") == {}
    meta = compare_spec("schedgym/GainOverhead-v0", ["drf", spec], [0, 1],
                        overrides={"horizon": 12})
    tasks = {(t.agent, t.seed): t for t in plan(meta)}
    assert tasks[(spec, 1)].env_kwargs == {"action_mode": "fractions",
                                           "instance_features": True}
    assert tasks[("drf", 1)].env_kwargs == {}
    assert tasks[(spec, 1)].overrides == tasks[("drf", 1)].overrides == {"horizon": 12}


def test_model_trained_in_a_mode_is_played_in_it_next_to_classical(tmp_path):
    """A learned agent acts in its training mode (read from run.json), classical agents
    in the default mode, on the same seeds."""
    import json

    from schedgym.train.training import train

    env_id = "schedgym/GainOverhead-v0"
    res = train("a2c", env_id, timesteps=32, overrides={**small_overrides(env_id),
                                                        "action_mode": "fractions"},
                out=tmp_path / "runs", eval_freq=0, checkpoint_freq=0)
    spec = f"a2c:{res.model_path}"
    out = tmp_path / "cmp"
    assert cli(["compare", env_id, "--agents", f"drf,{spec}", "--seeds", "100-101",
                *_sets(env_id), "--out", str(out), "--workers", "1", "--quiet",
                "--no-plots"]) == 0
    recs = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]
    kw = {r["key"][1]: r["env_kwargs"] for r in recs}
    assert kw[spec] == {"action_mode": "fractions"} and kw["drf"] == {}
    assert {r["key"][3] for r in recs} == {100, 101}


def test_tensorboard_never_deletes_an_existing_event_file(tmp_path):
    """``compare --tensorboard`` used to delete the event files of the agent's folder
    (e.g. written by train --beside); it now writes beside them."""
    env_id = "schedgym/GainOverhead-v0"
    old = tmp_path / "runs" / "GainOverhead-v0" / "drf"
    old.mkdir(parents=True)
    keep = old / "events.out.tfevents.123.host.1"
    keep.write_bytes(b"not ours")
    assert cli(["compare", env_id, "--agents", "drf", "--seeds", "0", *_sets(env_id),
                "--out", str(tmp_path / "cmp"), "--workers", "1", "--quiet", "--no-plots",
                "--no-benchmarks", "--tensorboard", str(tmp_path / "runs")]) == 0
    assert keep.read_bytes() == b"not ours"
    new = tmp_path / "runs" / "GainOverhead-v0" / "drf-2"
    assert list(new.glob("events.out.tfevents.*"))


def test_a_learned_agents_mode_kwargs_merge_with_the_runs_set(tmp_path):
    """Regression: the compare command that `train --set instance_features=true` prints
    passes the same key through --set and through the model's run.json; the agent's own value
    wins and nothing is passed twice."""
    from schedgym.train.runner import make_env

    env_id = "schedgym/GainOverhead-v0"
    env = make_env(env_id, None, 0, {**small_overrides(env_id), "instance_features": False},
                   action_mode="fractions", instance_features=True)
    obs, _ = env.reset(seed=0)
    assert "instance" in obs and env.unwrapped.action_mode == "fractions"


def test_every_observation_option_of_a_learned_agent_is_played(tmp_path):
    """FluctuatingSpeed's feedback_stats changes the observation a model was trained on: compare
    must build the model's env with it (it failed with KeyError 'feedback_count' before)."""
    import json

    from schedgym.agents.record import learned_env_kwargs

    model = tmp_path / "run" / "model.zip"
    model.parent.mkdir()
    kw = {"action_mode": "scores", "instance_features": True, "feedback_stats": True}
    (model.parent / "run.json").write_text(json.dumps({"env_kwargs": {**kw, "horizon": 50}}))
    assert learned_env_kwargs(f"ppo:{model}") == kw


# ----------------------------------------------------------- compile out of timing
class _SlowFirstAgent:
    """Stands for an agent whose first ``predict`` compiles its kernels (0.3 s), later ones
    instant."""

    def __init__(self, env):
        self.action_space = env.action_space
        self.calls = 0

    def predict(self, obs, episode_start=None, deterministic=True):
        import time

        self.calls += 1
        if self.calls == 1:
            time.sleep(0.3)
        return self.action_space.sample(), None


def test_a_compile_in_the_first_decision_stays_out_of_decision_time():
    """A first run's ms/decision included the compile (OgaSched 17.3 vs 0.13 warm)."""
    import gymnasium as gym

    from schedgym.envs.gain_overhead import ENV_ID as GO
    from schedgym.train.runner import run_episode

    env = gym.make(GO, **small_overrides(GO))
    res = run_episode(env, _SlowFirstAgent(env), seed=0)
    assert res.steps > 2
    assert res.decision_time < 0.05, res.decision_time  # 0.3 s / steps would be above 0.02
    assert res.wall_time >= 0.3


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_compile_notice_is_said_on_a_terminal_only_when_the_warm_up_is_slow(monkeypatch, capsys):
    import time

    from schedgym.train.preflight import compile_notice

    with compile_notice(after_s=0.05):  # captured stderr (not a terminal): never said
        time.sleep(0.3)
    assert capsys.readouterr().err == ""
    term = _Terminal()
    monkeypatch.setattr(sys, "stderr", term)
    with compile_notice(after_s=0.05):
        time.sleep(0.3)
    said = term.getvalue()
    assert "the first use compiles the kernels" in said and "ready after" in said
    term.seek(0)
    term.truncate()
    with compile_notice(after_s=5.0):
        pass
    assert term.getvalue() == ""


def test_compare_warms_every_agent_up_before_the_sweep(monkeypatch):
    from schedgym.envs.gain_overhead import ENV_ID as GO
    from schedgym.train import head_to_head, preflight

    played = []
    monkeypatch.setattr(preflight, "warm_up", lambda env, agent: played.append(type(agent)))
    head_to_head.validate(GO, None, 0, small_overrides(GO), ["random", "drf"], {})
    assert len(played) == 2


def test_the_progress_bar_counts_agents_episodes_only(tmp_path, monkeypatch):
    """compare's bar counted the benchmark tasks as episodes."""
    from schedgym.envs.gain_overhead import ENV_ID as GO
    from schedgym.train import sweep

    bars = []

    class _Bar:
        def __init__(self, total):
            self.total, self.n = total, 0
            bars.append(self)

        def update(self, n=1):
            self.n += n

        def close(self):
            pass

    monkeypatch.setattr(sweep, "_progress", lambda total, show, desc: _Bar(total))
    rc = cli(["compare", GO, "--agents", "random,random[seed=3]", "--seeds", "0-1",
              *_sets(GO), "--out", str(tmp_path / "c"), "--workers", "1", "--no-plots"])
    assert rc == 0
    assert [(b.total, b.n) for b in bars] == [(4, 4)]  # 2 agents x 2 seeds, not + 2 benchmarks


_SLOW_PLOTS = """
import signal, sys, time
signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a terminal
from schedgym.train import plots
from schedgym.train.cli import main

def slow(*args, **kwargs):
    print("PLOTTING", flush=True)
    time.sleep(60)

if __name__ == "__main__":
    plots.plot_curves = slow
    sys.exit(main(sys.argv[1:]))
"""


def test_ctrl_c_while_the_plots_are_written_exits_130(tmp_path):
    """A Ctrl-C while the plots were written must not end in exit status 0."""
    import signal
    import subprocess
    import sys

    from schedgym.envs.gain_overhead import ENV_ID as GO

    script = tmp_path / "slow_plots.py"
    script.write_text(_SLOW_PLOTS)
    proc = subprocess.Popen([sys.executable, str(script), "compare", GO, "--agents", "random",
                             "--seeds", "0", *_sets(GO), "--out", str(tmp_path / "c"),
                             "--workers", "1", "--quiet", "--no-benchmarks"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for line in proc.stdout:
            if line.startswith("PLOTTING"):
                break
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert "interrupted" in err and "Traceback" not in err


def test_every_ratio_runs_agent_over_reference_benchmarks_included():
    """``ratio_to_ref`` was agent / reference but hindsight_optimum_ratio optimum / agent
    (DRF 'beat the optimum' at 0.805); the benchmark is the best FIXED allocation in hindsight."""
    from schedgym.train.runner import EpisodeResult
    from schedgym.train.summary import summarise

    def ep(agent, seed, reward):
        return EpisodeResult(agent, seed, 1, {"reward": reward}, np.array([reward]), 0.0, 0.0)

    results = [ep("drf", 0, 120.0), ep("drf", 1, 120.0), ep("ogasched", 0, 96.0),
               ep("ogasched", 1, 96.0)]
    bench = {(0, 0): {"hindsight_optimum": 100.0}, (0, 1): {"hindsight_optimum": 100.0}}
    rows, legend = summarise(results, bench)
    by = {r["agent"]: r for r in rows}
    assert by["ogasched"]["ratio_to_ref"] == pytest.approx(0.8)  # 96 / 120, agent / reference
    assert by["ogasched"]["hindsight_optimum_ratio"] == pytest.approx(0.96)  # agent / benchmark
    assert by["drf"]["hindsight_optimum_ratio"] == pytest.approx(1.2)  # beats the fixed one
    assert by["drf"]["hindsight_optimum_gap"] == pytest.approx(-20.0)
    cols = legend["columns"]
    assert "best fixed allocation in hindsight" in cols["hindsight_optimum_gap (files)"]
    assert cols["hindsight_optimum_ratio (files)"].startswith("return / hindsight_optimum")


def test_a_piped_table_never_folds_a_header_mid_word(capsys, monkeypatch):
    """A table piped into a file wrapped its headers mid-word (at 100 columns)."""
    from schedgym.train.runner import EpisodeResult
    from schedgym.train.summary import print_table, summarise

    monkeypatch.delenv("COLUMNS", raising=False)
    res = [EpisodeResult(a, s, 3, {"reward": r + s, "avg_reward": (r + s) / 3},
                         np.cumsum([1.0, 1.0, r + s - 2]), 1e-3, 0.1, instance_seed=i)
           for a, r in (("ogasched[timing=lookahead,eta0=5]", 100.0), ("drf", 90.0),
                        ("myopic-opt", 120.0)) for i in (1000, 1001) for s in (0, 1)]
    rows, legend = summarise(res, {})
    print_table(rows, legend, "schedgym/GainOverhead-v0, scenario mixed-test")  # not a tty
    out = capsys.readouterr().out
    header = next(line for line in out.splitlines() if "agent" in line)
    for name in ("avg reward/step", "agent/myopic-opt", "over instances min..max",
                 "ms/decision"):
        assert name in header, header
    assert any("ogasched[timing=lookahead,eta0=5]" in line for line in out.splitlines())


def test_learned_agents_are_labelled_by_run_folder_and_file_in_the_table():
    from schedgym.train.summary import display_names

    a = "ppo:/home/u/runs/FluctuatingSpeed-v0/ppo_s0/model.zip"
    b = "ppo:/home/u/runs/FluctuatingSpeed-v0/ppo_s1/model.zip[deterministic=false]"
    twin = "ppo:/elsewhere/ppo_s0/model.zip"
    names = display_names(["esdp-aa", "hauf[x=1]", a, b, "ppo:m.zip"])
    assert names == {"esdp-aa": "esdp-aa", "hauf[x=1]": "hauf[x=1]",
                     a: "ppo:…/ppo_s0/model.zip",
                     b: "ppo:…/ppo_s1/model.zip[deterministic=false]", "ppo:m.zip": "ppo:m.zip"}
    assert display_names([a, twin]) == {a: a, twin: twin}  # the same short label: both in full


def test_the_compile_notice_never_breaks_into_a_progress_bar(monkeypatch):
    """A first compile while a bar is drawn (a kernel first called mid-run) printed the notice
    after the bar's text on the bar's line; now it is a line of its own above the bar."""
    from tqdm import tqdm

    from schedgym import _compile_notice

    term = _Terminal()
    monkeypatch.setattr(sys, "stderr", term)
    listener = _compile_notice._FirstCompile()

    class _Event:
        data = {"dispatcher": type("D", (), {"py_func": staticmethod(_compile_notice.say)})}

    bar = tqdm(total=10, file=term, desc="steps", mininterval=0)
    bar.update(3)
    listener.on_start(_Event())
    bar.close()
    text = term.getvalue()
    at = text.index(_compile_notice.NOTICE)
    assert at > 0 and text[at - 1] in "\r\n", repr(text[max(at - 40, 0):at + 10])
    assert "steps:  30%" in text[at:], "the bar is drawn again below the notice"
    term.seek(0)
    term.truncate()
    listener.said = False
    listener.on_start(_Event())  # no bar: a plain line
    assert term.getvalue() == _compile_notice.NOTICE + "\n"
    # a worker process, whose parent may draw a bar on the same terminal: the line is cleared
    term.seek(0)
    term.truncate()
    listener.said = False
    import multiprocessing

    monkeypatch.setattr(multiprocessing, "parent_process", lambda: object())
    listener.on_start(_Event())
    assert term.getvalue() == _compile_notice.CLEAR_LINE + _compile_notice.NOTICE + "\n"


def test_the_interrupt_line_counts_episodes_as_the_bar_does(tmp_path):
    """The bar counts agents' episodes; the Ctrl-C line counted tasks (episodes and offline
    benchmarks together), so the two numbers never agreed."""
    from schedgym.envs.gain_overhead import ENV_ID as GO
    from schedgym.train.head_to_head import compare_spec
    from schedgym.train.sweep import SweepOutcome, interrupted_line, plan
    from schedgym.train.tasks import BENCHMARK

    spec = compare_spec(GO, ["drf", "random"], [0, 1, 2])  # 6 episodes, 3 benchmarks

    class _Store:
        path = tmp_path

        def __init__(self, keys):
            self.spec, self.keys = spec, set(keys)

        def done(self):
            return self.keys

    tasks = plan(spec)
    first = [t.key for t in tasks[:4]]  # drf 0, random 0, benchmark 0, drf 1
    line = interrupted_line(_Store(first), SweepOutcome(ran=4, episodes_done=3,
                                                        episodes_todo=6))
    assert line.startswith("interrupted: 3 of 6 episodes finished (1 of 3 offline "
                           "benchmarks), kept in "), line
    # a resumed run: the bar counted what was left; the line says that, then the run's total
    resumed = interrupted_line(_Store([*first, tasks[4].key]),
                               SweepOutcome(ran=1, episodes_done=1, episodes_todo=3))
    assert resumed.startswith("interrupted: 1 of 3 episodes finished (4 of 6 episodes of the "
                              "run, 1 of 3 offline benchmarks)"), resumed
    assert sum(t.agent == BENCHMARK for t in tasks) == 3


def test_plot_legends_keep_the_part_that_tells_the_models_apart():
    from schedgym.train.plots import legend_labels

    a = "ppo:runs/FluctuatingSpeed-v0/s0_entity_12min/best_model.zip"
    b = "ppo:runs/FluctuatingSpeed-v0/s1_entity_12min/best_model.zip"
    c = b + "[deterministic=false]"
    labels, note = legend_labels(["esdp-aa", a, b, c])
    assert labels == {"esdp-aa": "esdp-aa", a: "ppo:s0_entity_12min",
                      b: "ppo:s1_entity_12min", c: "ppo:s1_entity_12min"
                      "[deterministic=false]"}
    assert note == "models: runs/FluctuatingSpeed-v0/*/best_model.zip"
    # the old cut kept 18 characters of each end: both models read the same
    assert a[:18] + "..." + a[-18:] == b[:18] + "..." + b[-18:]
    # one model, its mode and its draws: folder and file, options kept
    one, note = legend_labels([a, a + "[deterministic=false]"])
    assert one[a] == "ppo:…/s0_entity_12min/best_model.zip" and note == ""
    drawn = one[a + "[deterministic=false]"]
    assert len(drawn) == 48 and drawn.endswith("_model.zip[deterministic=false]"), drawn
    # models in different folders of different depths
    labels, _ = legend_labels(["ppo:x/model.zip", "a2c:runs/y/model.zip"])
    assert labels == {"ppo:x/model.zip": "ppo:x", "a2c:runs/y/model.zip": "a2c:runs/y"}


def test_a_ceiling_too_large_to_compute_is_said_not_computed(tmp_path, monkeypatch, capsys):
    """DeadlineWelfare's OPT beyond the LP's size raised P1TooLarge inside the benchmark task:
    every benchmark was a failed task (exit 1). Now the table is printed without the ceiling
    and one line says it was not computed, and why."""
    import json

    from schedgym.envs.deadline_welfare import ENV_ID as DW
    from schedgym.envs.deadline_welfare import offline

    monkeypatch.setattr(offline, "MAX_LP_VARIABLES", 1)  # every episode's P1 is "too large"
    out = tmp_path / "c"
    rc = cli(["compare", DW, "--agents", "max-first,random", "--seeds", "0-1", *_sets(DW),
              "--out", str(out), "--workers", "1", "--quiet", "--no-plots"])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    said = [s for s in captured.out.splitlines() if "not computed" in s]
    assert len(said) == 1, captured.out
    assert said[0].startswith("OPT: not computed (2 of 2 episodes): OPT (P1) of this episode "
                              "is not computed at this size: "), said
    assert "failed" not in captured.err
    legend = json.loads((out / "summary.json").read_text())["legend"]
    assert legend["ceiling"] is None
    assert legend["not_computed"]["OPT"]["episodes"] == 2
    # a resume has nothing left to run: the refusal is a result, not a failure to retry
    assert cli(["compare", "--resume", str(out), "--workers", "1", "--quiet",
                "--no-plots"]) == 0


def test_an_agent_that_declines_the_size_is_not_a_failure(tmp_path, monkeypatch, capsys):
    """The same mechanism for an agent (a ceiling agent such as myopic-opt may refuse a size
    with NotComputed): one line per agent, exit status 0, the others in the table."""
    from schedgym.core.limits import NotComputed
    from schedgym.envs.gain_overhead import ENV_ID as GO
    from schedgym.train import runner

    real = runner.build_agent

    def build(spec, env):  # the episodes' agents (compare's warm-up builds its own)
        if str(spec) == "myopic-opt":
            raise NotComputed("myopic-opt is not computed at 3 types x 3 nodes: test refusal")
        return real(spec, env)

    monkeypatch.setattr(runner, "build_agent", build)
    out = tmp_path / "c"
    rc = cli(["compare", GO, "--agents", "drf,myopic-opt", "--seeds", "0-1", *_sets(GO),
              "--out", str(out), "--workers", "1", "--quiet", "--no-plots", "--no-benchmarks"])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    said = [s for s in captured.out.splitlines() if "not computed" in s]
    assert said == ["myopic-opt: not played (2 of 2 episodes): myopic-opt is not computed at "
                    "3 types x 3 nodes: test refusal"], captured.out
    assert "drf" in captured.out and "failed" not in captured.err
