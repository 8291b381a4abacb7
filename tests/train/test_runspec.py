"""The typed run description: ``meta.json`` files written by the previous, untyped
code (``data/meta_*.json``, with the tasks it planned from them in ``data/plan_*.json``) read
back to a :class:`RunSpec` that writes the same file, plans the same tasks and names the same
default run folder; a bad field is one line naming the file and the field."""

from __future__ import annotations

import json
import re
from dataclasses import asdict, replace
from pathlib import Path

import pytest

from schedgym.train.cli_options import parse_overrides
from schedgym.train.runspec import RunSpec, RunSpecError, Setting
from schedgym.train.store import META, RunStore, _write_json, read_spec, run_folder_name
from schedgym.train.sweep import plan

from .sweep_cli import main as cli

DATA = Path(__file__).with_name("data")
GO = "schedgym/GainOverhead-v0"


def _old(name: str) -> dict:
    return json.loads((DATA / f"meta_{name}.json").read_text())


@pytest.mark.parametrize("name", ["compare", "reproduce"])
def test_a_meta_json_of_the_previous_code_round_trips_byte_for_byte(tmp_path, name):
    spec = RunSpec.from_json(_old(name))
    assert spec.command == name
    assert list(spec.to_json().items()) == list(_old(name).items())  # same keys, same order
    _write_json(tmp_path / META, spec.to_json())
    assert (tmp_path / META).read_bytes() == (DATA / f"meta_{name}.json").read_bytes()
    assert RunSpec.from_json(json.loads((tmp_path / META).read_text())) == spec


@pytest.mark.parametrize("name", ["compare", "reproduce"])
def test_the_spec_plans_the_tasks_the_previous_code_planned(name):
    tasks = [asdict(t) for t in plan(RunSpec.from_json(_old(name)))]
    want = json.loads((DATA / f"plan_{name}.json").read_text())
    assert json.loads(json.dumps(tasks)) == want
    assert len(want) == (24 if name == "compare" else 100)


def test_the_builders_write_what_the_previous_code_wrote():
    """``compare_spec`` and ``experiment_spec`` with the inputs that made ``data/meta_*.json``
    give those files again, and the same default run folder names (hash of the description)."""
    from schedgym.train.experiments import experiment_spec, find_experiment, load_experiment
    from schedgym.train.head_to_head import compare_spec

    ov = parse_overrides(["horizon=12", "beta_range=0.4:0.6"])
    spec = compare_spec(GO, ["drf", "fixed-price[price=0.1]", "ogasched"], [0, 1, 2],
                        "paper-headline", [3, 4], ov, True, "ogasched", record_steps=True)
    assert json.loads(json.dumps(spec.to_json())) == _old("compare")
    assert run_folder_name(GO, "paper-headline", ov, spec.to_json()) == (
        "GainOverhead-v0-paper-headline-beta_range=_0.4_0.6_-horizon=12-68caf319")
    cfg = load_experiment(find_experiment("ogasched-types"))
    ov = parse_overrides(["horizon=12"])
    spec = experiment_spec(cfg, [0, 1], ov, [0, 5], "schedgym reproduce ogasched-types "
                           "--seeds 0-1 --instance-seeds 0,5 --set horizon=12")
    assert json.loads(json.dumps(spec.to_json())) == _old("reproduce")
    assert run_folder_name(cfg["name"], None, ov, spec.to_json()) == (
        "ogasched-types-paper-default-horizon=12-af49ee49")


def test_a_run_folder_of_the_previous_code_opens_and_reports(tmp_path, capsys):
    run = tmp_path / "run"
    (run / "curves").mkdir(parents=True)
    (run / META).write_bytes((DATA / "meta_compare.json").read_bytes())
    (run / "episodes.jsonl").touch()
    store = RunStore.open(run)
    assert store.spec == RunSpec.from_json(_old("compare"))
    assert store.spec.agent_env_kwargs == {"fixed-price[price=0.1]": {"action_mode": "prices"}}
    store.close()
    assert cli(["report", str(run), "--no-plots"]) == 0
    assert "no finished episode yet" in capsys.readouterr().out


def test_the_smallest_meta_json_gets_the_defaults():
    spec = RunSpec.from_json({"command": "compare", "env_id": GO, "agents": ["a"],
                              "seeds": [0], "instance_seeds": [0],
                              "settings": [{"name": ""}]})
    assert spec.settings == (Setting("", {}),)
    assert (spec.scenario, spec.overrides, spec.benchmarks, spec.reference) == (
        None, {}, False, None)
    assert (spec.record_steps, spec.agent_env_kwargs, spec.experiment) == (False, {}, {})


def _with(name: str, **changes) -> dict:
    return {**_old(name), **changes}


def _setting(which: str, i: int, **changes) -> dict:
    settings = _old(which)["settings"]
    settings[i] = {**settings[i], **changes}
    return _with(which, settings=settings)


@pytest.mark.parametrize("meta, field", [
    (_with("compare", benchmarks="yes"), "'benchmarks'"),
    (_with("compare", record_steps=1), "'record_steps'"),
    (_with("compare", seeds=[0, "1"]), "'seeds'"),
    (_with("compare", instance_seeds=[True]), "'instance_seeds'"),
    (_with("compare", agents=["drf", 3]), "'agents'"),
    (_with("compare", env_id=None), "'env_id'"),
    (_with("compare", scenario=3), "'scenario'"),
    (_with("compare", reference=["drf"]), "'reference'"),
    (_with("compare", overrides=[1]), "'overrides'"),
    (_with("compare", agent_env_kwargs={"drf": "prices"}), "'agent_env_kwargs'"),
    (_with("compare", command="train"), "'command'"),
    (_with("compare", settings={}), "'settings'"),
    (_setting("compare", 0, name=None), "settings[0]"),
    (_setting("reproduce", 1, index="1"), "settings[1]: 'index'"),
    (_setting("reproduce", 0, sweep=None), "settings[0]: 'sweep'"),
    (_with("reproduce", experiment=None), "'experiment'"),
    (_with("reproduce", cmdline=7), "'cmdline'"),
])
def test_a_bad_field_is_one_line_naming_the_file_and_the_field(tmp_path, meta, field):
    with pytest.raises(RunSpecError, match=re.escape(field)):
        RunSpec.from_json(meta)
    (tmp_path / META).write_text(json.dumps(meta))
    with pytest.raises(ValueError) as info:
        read_spec(tmp_path)
    text = str(info.value)
    assert "\n" not in text and str(tmp_path / META) in text and field in text
    assert "is damaged" in text


def test_a_spec_is_frozen():
    spec = RunSpec.from_json(_old("compare"))
    with pytest.raises(AttributeError):
        spec.env_id = "x"  # type: ignore[misc]
    assert replace(spec, seeds=(9,)).seeds == (9,) and spec.seeds == (0, 1, 2)
