"""The ``schedgym`` command line: one clear line for a user's mistake, never a traceback;
``--version``, ``schedgym list``, help texts, the shared env options."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import schedgym
from schedgym.agents import registry
from schedgym.envs.deadline_welfare import ENV_ID as DW
from schedgym.envs.fluctuating_speed import ENV_ID as FS
from schedgym.envs.gain_overhead import ENV_ID as GO
from schedgym.train import hyperparams as hp
from schedgym.train.cli import build_parser, main
from schedgym.train.cli_options import parse_overrides, resolve_env_id


def _error_line(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1, err
    return lines[0]


# ------------------------------------------------------------------- env ids
@pytest.mark.parametrize("text, meant", [("GainOverhead-v0", GO), ("gainoverhead-v0", GO),
                                         ("schedgym/FluctuatingSped-v0", FS),
                                         ("DeadlineWelfare-v0", DW)])
def test_close_env_id_gets_a_did_you_mean(text, meant):
    with pytest.raises(ValueError, match=f"did you mean {re.escape(meant)}\\?"):
        resolve_env_id(text)


def test_module_prefixed_and_exact_ids_resolve():
    assert resolve_env_id(f"schedgym:{GO}") == GO
    for env_id in schedgym.ENV_IDS:
        assert resolve_env_id(env_id) == env_id


@pytest.mark.parametrize("cmd", [["train", "ppo", "GainOverhead-v0"],
                                 ["compare", "GainOverhead-v0", "--agents", "random"]])
def test_unknown_env_id_is_one_line_and_exit_2(capsys, cmd):
    rc = main(cmd)
    assert rc == 2
    line = _error_line(capsys)
    assert line.startswith(f"schedgym {cmd[0]}: error:")
    assert f"did you mean {GO}?" in line


@pytest.mark.parametrize("cmd", [["train", "ppo", GO], ["compare", GO, "--agents", "drf"]])
@pytest.mark.parametrize("value, says", [("0", "0 is invalid: must be >= 1"),
                                         ("-2", "-2 is invalid: must be >= 1"),
                                         ("two", "'two' is not an integer: must be >= 1")])
def test_workers_must_be_a_positive_count(capsys, cmd, value, says):
    with pytest.raises(SystemExit) as exc:
        main([*cmd, "--workers", value])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert f"argument --workers: {says}" in err


def test_set_needs_key_value():
    assert parse_overrides(["horizon=5", "beta_range=0.4:0.6"]) == {"horizon": 5,
                                                                  "beta_range": (0.4, 0.6)}
    with pytest.raises(ValueError, match="--hp 'n_steps' is invalid: must be KEY=VALUE"):
        parse_overrides(["n_steps"], "--hp")


def test_set_time_window_takes_a_pair_in_each_written_form():
    """``--set time_window=`` as ``a:b``, ``(a,b)`` or ``[a,b]`` is one pair on every env, the
    same window; a form that is no pair is one line naming the accepted forms."""
    import gymnasium as gym

    forms = ["0:86400", "(0,86400)", "[0,86400]", "[0, 86400]"]
    assert [parse_overrides([f"time_window={f}"])["time_window"] for f in forms] == \
        [(0, 86400)] * 4
    assert parse_overrides(["time_window=[0.5,7200.25]"])["time_window"] == (0.5, 7200.25)
    for env_id, kw in ((GO, {"horizon": 4}), (FS, {"horizon": 4}), (DW, {})):
        first = []
        for f in ("0:86400", "[0,86400]"):
            env = gym.make(env_id, scenario="alibaba-gpu-2023", n_instances=12, **kw,
                           **parse_overrides([f"time_window={f}"]))
            first.append(env.reset(seed=3)[0])
        assert first[0].keys() == first[1].keys(), env_id
        for key in first[0]:
            np.testing.assert_array_equal(first[0][key], first[1][key])
        with pytest.raises(ValueError, match=r"^time_window='0-86400' is invalid: must be a "
                                             r"pair \(t0, t1\) of trace seconds .*"
                                             r"time_window=0:86400, time_window=\(0,86400\) "
                                             r"or time_window=\[0,86400\]\)$"):
            gym.make(env_id, scenario="alibaba-gpu-2023", n_instances=12, **kw,
                     **parse_overrides(["time_window=0-86400"]))


# --------------------------------------------------------------------- agents
def test_unknown_agent_option_lists_the_options(capsys):
    rc = main(["compare", GO, "--agents", "ogasched[foo=1]", "--seeds", "0", "--quiet",
               "--no-benchmarks", "--set", "horizon=3"])
    assert rc == 2
    line = _error_line(capsys)
    assert "no option foo" in line and "timing='oco'" in line and "eta0" in line


def test_agent_error_offers_only_trainable_algorithms():
    with pytest.raises(ValueError, match="ALGO in ppo, a2c, sac, td3") as err:
        registry.make("nosuch", None)
    assert "dqn" not in str(err.value) and "ddpg" not in str(err.value)
    assert set(registry.SB3_ALGOS) == set(hp.ALGOS)


# ------------------------------------------------------------------- config errors
def test_config_errors_name_the_file_given(tmp_path, capsys):
    bad = tmp_path / "mine.yml"
    bad.write_text("default:\n  policy: MultiInputPolicy\n  n_step: 3\n")
    rc = main(["train", "ppo", GO, "--config", str(bad), "--timesteps", "8"])
    assert rc == 2
    line = _error_line(capsys)
    assert str(bad) in line and "n_step" in line and "configs/ppo.yml" not in line


def test_config_errors_name_the_cli_flag(capsys):
    rc = main(["train", "ppo", GO, "--hp", "n_step=3", "--timesteps", "8"])
    assert rc == 2
    line = _error_line(capsys)
    assert "--hp" in line and "n_step" in line and "configs/ppo.yml" not in line


def test_missing_config_file_is_one_line(tmp_path, capsys):
    rc = main(["train", "ppo", GO, "--config", str(tmp_path / "none.yml")])
    assert rc == 2
    assert "does not exist" in _error_line(capsys)


# ------------------------------------------------------------------ error rule
def test_user_errors_are_one_line_and_bugs_keep_their_traceback(capsys, monkeypatch):
    from schedgym.train import cli

    def user_mistake(args):
        raise FileNotFoundError(2, "No such file or directory", "trace.csv")

    def bug(args):
        raise KeyError("internal")

    parser = build_parser()
    monkeypatch.setattr(cli, "build_parser", lambda: parser)
    parser.set_defaults(func=user_mistake)
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    sub.choices["list"].set_defaults(func=user_mistake)
    assert cli.main(["list"]) == 2
    assert "trace.csv" in _error_line(capsys)
    sub.choices["list"].set_defaults(func=bug)
    with pytest.raises(KeyError, match="internal"):
        cli.main(["list"])


# ---------------------------------------------------------------- version, list
def test_version(capsys):
    with pytest.raises(SystemExit, match="0"):
        main(["--version"])
    assert capsys.readouterr().out.strip() == f"schedgym {schedgym.__version__}"


def test_list_names_agents_scenarios_and_modes(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    for env_id in schedgym.ENV_IDS:
        assert env_id in out
    for agent in ("ogasched", "drf", "esdp", "hauf", "onsocmax", "max-first", "random"):
        assert re.search(rf"agents:.*\b{re.escape(agent)}\b", out)
    assert "paper-default" in out and "alibaba-gpu-2023" in out
    assert out.count("action modes:") == len(schedgym.ENV_IDS)
    assert "ALGO in ppo, a2c, sac, td3" in out


def test_list_one_env(capsys):
    assert main(["list", "FluctuatingSpeed-v0"]) == 2  # namespace-less: did you mean
    assert main(["list", FS]) == 0
    out = capsys.readouterr().out
    assert FS in out and GO not in out


# ---------------------------------------------------------------------- help texts
def _helps(parser: argparse.ArgumentParser) -> dict[str, str]:
    out = {"schedgym": parser.format_help()}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                out[name] = sub.format_help()
    return out


def test_help_texts_have_no_rest_markup():
    for name, text in _helps(build_parser()).items():
        assert not re.search(r"``|:(mod|func|class|meth|data|attr):`", text), name


def test_max_minutes_help_says_wall_clock():
    text = _helps(build_parser())["train"]
    assert "--max-minutes" in text
    flat = " ".join(text.split())
    assert "minutes of wall clock" in flat and "CPU budget" not in flat


def test_console_script_entry_point_runs():
    proc = subprocess.run([sys.executable, "-c", "import sys; from schedgym.train.cli import "
                           "main; sys.exit(main(['--version']))"], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.startswith("schedgym ")


# ------------------------------------------------------------- run folders
@pytest.mark.parametrize("name", ["../../x", "a/b", "..", ".hidden", "", "a\\b"])
def test_train_name_with_a_path_is_refused_before_anything_is_written(tmp_path, capsys, name):
    out = tmp_path / "deep" / "out"
    rc = main(["train", "ppo", GO, "--name", name, "--out", str(out), "--timesteps", "8"])
    assert rc == 2
    assert f"name={name!r} is invalid: must be a plain folder name" in _error_line(capsys)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("cmd", [["train", "ppo", GO, "--timesteps", "8"],
                                 ["compare", GO, "--agents", "random"],
                                 ["reproduce", "ogasched-headline"]])
def test_out_naming_a_file_says_so(tmp_path, capsys, cmd):
    afile = tmp_path / "afile"
    afile.write_text("keep me")
    for out, says in ((afile, "is invalid: it names a file, not a folder"),
                      (afile / "sub", f"is not writable: {str(afile)!r} is a file, not a folder")):
        assert main([*cmd, "--out", str(out)]) == 2
        line = _error_line(capsys)
        assert f"out={str(out)!r} {says}" in line, line
        assert afile.read_text() == "keep me"
    assert main([*cmd, "--out", str(afile), "--overwrite"]) == 2  # never deletes the file
    assert "names a file" in _error_line(capsys) and afile.read_text() == "keep me"


@pytest.mark.parametrize("cmd", [["compare", GO, "--agents", "random", "--set", "horizon=5"],
                                 ["reproduce", "ogasched-headline", "--set", "horizon=5"]])
def test_repeating_a_command_with_the_default_folder_gets_a_new_one(tmp_path, monkeypatch, cmd):
    """Running README's main job a second time exited 2 (the run folder exists)."""
    from schedgym.train import compare, reproduce

    monkeypatch.chdir(tmp_path)
    args = build_parser().parse_args(cmd)
    opener = compare.open_store if cmd[0] == "compare" else reproduce._new_store
    first = opener(args)
    first.close()
    second = opener(args)
    second.close()
    assert second.path.name == first.path.name + "-2"
    assert second.path.parent == first.path.parent
    assert (first.path / "meta.json").is_file() and (second.path / "meta.json").is_file()


@pytest.mark.parametrize("cmd", [["compare", GO, "--agents", "random", "--set", "horizon=5"],
                                 ["reproduce", "ogasched-headline", "--set", "horizon=5"]])
def test_two_identical_commands_at_once_get_two_folders(tmp_path, monkeypatch, cmd):
    """Two identical commands started at the same instant both see the default folder free;
    the one whose mkdir comes second takes the next free name instead of exiting 2."""
    from schedgym.train import cli_options, compare, reproduce

    monkeypatch.chdir(tmp_path)
    args = build_parser().parse_args(cmd)
    opener = compare.open_store if cmd[0] == "compare" else reproduce._new_store
    first = opener(args)
    first.close()
    real = cli_options.free_run_folder
    looks = []

    def stale_look(path):  # the first look happened before the other run's mkdir
        looks.append(path)
        return Path(path) if len(looks) == 1 else real(path)

    monkeypatch.setattr(cli_options, "free_run_folder", stale_look)
    second = opener(args)
    second.close()
    assert len(looks) == 2
    assert second.path.name == first.path.name + "-2"
    assert (second.path / "meta.json").is_file()


# ------------------------------------------------------------- did you mean
@pytest.mark.parametrize("cmd", [["compare", GO, "--agents", "random,ogashed"],
                                 ["train", "ppo", GO, "--beside", "ogashed"]])
def test_misspelt_agent_name_gets_a_did_you_mean(tmp_path, capsys, cmd):
    assert main([*cmd, "--out", str(tmp_path / "o")]) == 2
    line = _error_line(capsys)
    assert "agent='ogashed' is invalid: did you mean 'ogasched'?" in line, line


@pytest.mark.parametrize("cmd", [["compare", GO, "--agents", "random"], ["train", "ppo", GO]])
def test_misspelt_set_key_gets_a_did_you_mean_in_one_clean_line(tmp_path, capsys, cmd):
    assert main([*cmd, "--set", "horizn=5", "--out", str(tmp_path / "o")]) == 2
    line = _error_line(capsys)
    assert "unknown parameter 'horizn'" in line and "did you mean 'horizon'?" in line, line
    assert "was raised from the environment creator" not in line
    assert line.count("horizn") == 1, line  # said once


@pytest.mark.parametrize("source", ["--hp", "--config"])
def test_a_misspelt_hyperparameter_is_said_once(tmp_path, capsys, source):
    if source == "--hp":
        args = ["--hp", "n_step=5"]
    else:
        cfg = tmp_path / "bad.yml"
        cfg.write_text(f"{GO}:\n  policy: MlpPolicy\n  n_step: 5\n")
        args = ["--config", str(cfg)]
    assert main(["train", "ppo", GO, *args, "--out", str(tmp_path / "o")]) == 2
    line = _error_line(capsys)
    assert "unknown parameter 'n_step' (did you mean 'n_steps'?)" in line, line
    assert line.count("n_step'") == 1 and "unexpected keyword" not in line, line


@pytest.mark.parametrize("argv, says", [
    (["train", "pp", GO], "schedgym train: error: argument algo: invalid choice: 'pp'"),
    (["train", "ppo"], "schedgym train: error: the following arguments are required: ENV_ID"),
    (["compare", GO, "--seeds"], "schedgym compare: error: argument --seeds: expected one "),
    (["nosuchcommand"], "schedgym: error: argument COMMAND: invalid choice: 'nosuchcommand'"),
])
def test_a_usage_error_is_one_line_not_the_usage_block(capsys, argv, says):
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2
    line = _error_line(capsys)
    assert line.startswith(says) and line.endswith("--help)"), line


def test_compare_help_says_a_default_folder_moves_on_to_name_2():
    flat = " ".join(_helps(build_parser())["compare"].split())
    assert "moves on to NAME-2, NAME-3" in flat, flat
    assert "an existing one is refused unless" not in flat


def test_seed_lists_are_parsed_and_bounded():
    from schedgym.train.stats import MAX_SEEDS, parse_seeds

    assert parse_seeds("0-2,7, 2") == [0, 1, 2, 7]
    for bad in ("", "a", "-1", "4-1", "1-", "1-2-3"):
        with pytest.raises(ValueError, match="seeds=.* is invalid"):
            parse_seeds(bad)
    with pytest.raises(ValueError, match=f"more than {MAX_SEEDS:,} seeds"):
        parse_seeds("0-99999999999")  # refused before a list of 10^11 seeds is built


@pytest.mark.parametrize("cmd, flag", [
    (["train", "ppo", GO, "--instance-seeds", "5-1"], "--instance-seeds"),
    (["train", "ppo", GO, "--eval-instance-seeds", "5-1"], "--eval-instance-seeds"),
    (["train", "ppo", GO, "--beside-seeds", "5-1"], "--beside-seeds"),
    (["train", "ppo", GO, "--seeds", "5-1"], "--seeds"),
    (["compare", GO, "--agents", "drf", "--instance-seeds", "5-1"], "--instance-seeds"),
    (["compare", GO, "--agents", "drf", "--seeds", "5-1"], "--seeds"),
])
def test_a_reversed_seed_range_names_the_option_and_the_range(capsys, cmd, flag):
    assert main(cmd) == 2
    line = _error_line(capsys)
    assert line == (f"schedgym {cmd[0]}: error: {flag} '5-1' is invalid: the range 5-1 runs "
                    "backwards; write 1-5"), line


# ------------------------------------------------------------ shared options
def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    raise AssertionError("no subcommands")


def _shape(action: argparse.Action) -> tuple:
    return (type(action), action.dest, action.nargs, action.const, action.default, action.type,
            action.metavar)


@pytest.mark.parametrize("flags, names", [
    (("--workers", "--ray"), ("compare", "reproduce", "train")),
    (("--out", "--resume", "--overwrite", "--quiet"), ("compare", "reproduce")),
    (("--set",), ("compare", "reproduce", "train"))])
def test_repeated_options_are_one_definition(flags, names):
    """An option several subcommands take parses the same way in each (one definition in
    cli_options, not a copy per subcommand that can drift)."""
    subs = _subparsers(build_parser())
    for flag in flags:
        shapes = {name: _shape(subs[name]._option_string_actions[flag]) for name in names}
        assert len(set(shapes.values())) == 1, (flag, shapes)
    for name in ("compare", "reproduce", "train"):  # the same words, too
        assert "(default: number of CPUs)" in subs[name]._option_string_actions["--workers"].help


@pytest.mark.parametrize("argv, workers, ray", [
    ([], None, None), (["--workers", "3", "--ray"], 3, ""), (["--ray", "auto"], None, "auto"),
    (["--ray", "10.0.0.1:6379", "--workers", "2"], 2, "10.0.0.1:6379")])
def test_workers_and_ray_parse_alike_everywhere(argv, workers, ray):
    parser = build_parser()
    heads = {"compare": ["compare", GO], "reproduce": ["reproduce", "x"],
             "train": ["train", "ppo", GO]}
    for head in heads.values():
        args = parser.parse_args([*head, *argv])
        assert (args.workers, args.ray) == (workers, ray), head


def test_ray_not_installed_is_one_line(monkeypatch, capsys, tmp_path):
    """Ray is an optional extra: without it, ``--ray`` is one line saying how to get it."""
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` now fails as if absent
    assert main(["train", "ppo", GO, "--seeds", "0-1", "--ray", "--out", str(tmp_path)]) == 2
    line = _error_line(capsys)
    assert "--ray is invalid here: Ray is not installed" in line
    assert "schedgym[ray]" in line
    assert not any(tmp_path.iterdir())  # nothing started
