"""The agent spec ``name[k=v]`` / ``ALGO:path.zip[k=v]``: one parser, a frozen spec whose text
comes back unchanged, the same one-line errors as ever, and learned options declared in one
table."""

from __future__ import annotations

import dataclasses

import gymnasium as gym
import pytest
from hypothesis import given
from hypothesis import strategies as st

from schedgym.agents import make
from schedgym.agents import spec as spec_mod
from schedgym.agents.spec import (
    SB3_ALGOS,
    AgentSpec,
    LearnedOption,
    is_learned,
    parse_value,
    split_specs,
)
from schedgym.envs.gain_overhead import ENV_ID as GO


def test_a_classical_spec_reads_its_name_and_options():
    spec = AgentSpec.parse(" ogasched[timing=lookahead, eta0=5,decay=0.5,x=true,y=none,r=1:2] ")
    assert spec.name == "ogasched" and spec.key == "ogasched" and not spec.is_learned
    assert spec.algo is None and spec.path is None
    assert spec.kwargs == {"timing": "lookahead", "eta0": 5, "decay": 0.5, "x": True, "y": None,
                           "r": (1, 2)}
    assert spec.options[0] == ("timing", "lookahead")  # in the order written
    assert str(spec) == spec.label == ("ogasched[timing=lookahead, eta0=5,decay=0.5,x=true,"
                                       "y=none,r=1:2]")
    assert AgentSpec.parse("OgaSched").key == "ogasched" and AgentSpec.parse("drf").kwargs == {}


def test_a_learned_spec_reads_its_algo_path_and_options():
    spec = AgentSpec.parse("PPO:runs/Go-v0/ppo_s0/model.zip[deterministic=false]")
    assert spec.is_learned and spec.algo == "ppo" and spec.path == "runs/Go-v0/ppo_s0/model.zip"
    assert spec.name == "PPO:runs/Go-v0/ppo_s0/model.zip"
    assert spec.kwargs == {"deterministic": False}
    assert spec.learned_options() == {"deterministic": False, "trusted": False}
    assert AgentSpec.parse("sac:a.zip").learned_options() == {"deterministic": None,
                                                              "trusted": False}


@pytest.mark.parametrize("text, expected", [
    ("ppo:x.zip", True), ("SAC:a/b.zip", True), ("td3:C:/m.zip", True), ("a2c:m.zip[x=1]", True),
    ("ogasched[timing=oco]", False), ("random", False),
    ("ogasched[x=a:b]", False), ("ppo[x=1]", False),
])
def test_what_is_learned(text, expected):
    assert is_learned(text) is expected and AgentSpec.parse(text).is_learned is expected


def test_the_text_is_the_identity_and_comes_back_unchanged():
    for text in ("ogasched", "ogasched[timing=lookahead,eta0=5]", "fixed-price[price=0.5]",
                 "ppo:a/b.zip[deterministic=false]", "drf[]"):
        spec = AgentSpec.parse(text)
        assert str(spec) == text and AgentSpec.parse(str(spec)) == spec
    assert AgentSpec.parse("x") is AgentSpec.parse("x")  # parsed once per text
    with pytest.raises(dataclasses.FrozenInstanceError):
        AgentSpec.parse("x").name = "y"  # type: ignore[misc]


def test_a_spec_built_in_code_has_the_canonical_text():
    assert str(AgentSpec.learned("ppo", "runs/m.zip")) == "ppo:runs/m.zip"
    spec = AgentSpec.learned("ppo", "runs/m.zip", deterministic=False)
    assert str(spec) == "ppo:runs/m.zip[deterministic=false]"
    assert AgentSpec.parse(str(spec)) == spec


_values = st.one_of(st.integers(-10**6, 10**6), st.booleans(), st.none(),
                    st.floats(allow_nan=False, allow_infinity=False),
                    st.from_regex(r"[a-z][a-z_\-]{0,8}", fullmatch=True).filter(
                        lambda s: parse_value(s) == s))  # not "true", "none", "inf", ...


@given(name=st.sampled_from(["ogasched", "fixed-price", "ppo:runs/a/model.zip"]),
       options=st.dictionaries(st.from_regex(r"[a-z][a-z_]{0,6}", fullmatch=True), _values,
                               max_size=4))
def test_canonical_text_round_trips(name, options):
    spec = AgentSpec(name, tuple(options.items()))
    back = AgentSpec.parse(str(spec))
    assert back == spec and back.kwargs == options
    assert all(parse_value(spec_mod.format_value(v)) == v for v in options.values())


@pytest.mark.parametrize("text, message", [
    ("ogasched[x", r"^agent='ogasched\[x' is invalid: options must be written "
                   r"name\[key=value,...\]$"),
    ("ogasched[a]", r"^agent='ogasched\[a\]' is invalid: option 'a' is not key=value$"),
    ("ppo:m.zip[a=1,b]", r"^agent='ppo:m.zip\[a=1,b\]' is invalid: option 'b' is not "
                         r"key=value$"),
])
def test_a_malformed_spec_is_one_line(text, message):
    with pytest.raises(ValueError, match=message):
        AgentSpec.parse(text)


def test_bad_learned_options_are_one_line_before_any_model_is_loaded(tmp_path):
    missing = tmp_path / "no-such-model.zip"  # never opened: the options fail first
    with pytest.raises(ValueError, match=r"^learned agent 'ppo:.*no-such-model.zip' has no option "
                                         r"foo: its options \(with defaults\) are "
                                         r"deterministic=the recorded play, trusted=False$"):
        make(AgentSpec.parse(f"ppo:{missing}[foo=1]"), None)
    with pytest.raises(ValueError, match=r"^learned agent 'ppo:.*': deterministic=3 is invalid: "
                                         r"must be true or false$"):
        make(f"ppo:{missing}", None, deterministic=3)
    with pytest.raises(ValueError, match=r"model file .* does not exist"):
        make(f"ppo:{missing}", None, deterministic=False)


def test_a_learned_option_is_one_entry_of_the_table(monkeypatch):
    table = dict(spec_mod.LEARNED_OPTIONS)
    table["greedy"] = LearnedOption(False, "true or false", lambda v: isinstance(v, bool))
    monkeypatch.setattr(spec_mod, "LEARNED_OPTIONS", table)
    assert AgentSpec.parse("ppo:m.zip").learned_options() == {"deterministic": None,
                                                               "trusted": False,
                                                               "greedy": False}
    assert AgentSpec.parse("ppo:m.zip[greedy=true]").learned_options()["greedy"] is True
    with pytest.raises(ValueError, match=r"greedy='yes' is invalid: must be true or false"):
        AgentSpec.parse("ppo:m.zip[greedy=yes]").learned_options()
    with pytest.raises(ValueError, match=r"are deterministic=the recorded play, trusted=False, "
                                         r"greedy=False$"):
        AgentSpec.parse("ppo:m.zip[x=1]").learned_options()


@pytest.mark.parametrize("text", ["ppo:m.zip[deterministic=false,deterministic=true]",
                                  "ogasched[eta0=1, eta0=2]"])
def test_an_option_given_twice_is_refused(text):
    """A repeated key would silently keep the later value: refused in one line naming it."""
    with pytest.raises(ValueError, match=r"is invalid: option '(deterministic|eta0)' is given "
                                         r"twice; give each option once$"):
        AgentSpec.parse(text)


def test_make_takes_a_spec_or_a_name_with_keyword_options():
    env = gym.make(GO, n_types=3, n_instances=3, horizon=5)
    a = make(AgentSpec.parse("ogasched[timing=lookahead]"), env)
    b = make("ogasched", env, timing="lookahead")
    assert type(a) is type(b) and a.timing == b.timing == "lookahead"
    with pytest.raises(ValueError, match=r"^agent='ogasched\[timing=oco\]' is invalid: must be "
                                         "one of"):
        make("ogasched[timing=oco]", env)  # a name, not a spec: options are keyword arguments


def test_the_short_label_keeps_a_models_folder_and_file():
    assert AgentSpec.parse("ppo:a/b/run/model.zip[deterministic=false]").short_label() == \
        "ppo:…/run/model.zip[deterministic=false]"
    assert AgentSpec.parse("ppo:run/model.zip").short_label() == "ppo:run/model.zip"
    assert AgentSpec.parse("ogasched[timing=oco]").short_label() == "ogasched[timing=oco]"


def test_an_agent_list_splits_at_top_level_commas_only():
    assert split_specs("a, b[x=1,y=2] ,c") == ["a", "b[x=1,y=2]", "c"]
    with pytest.raises(ValueError, match=r"^agents=' , ' is invalid: give at least one agent"):
        split_specs(" , ")


def test_the_learned_prefixes_are_the_trainable_algorithms():
    from schedgym.train.hyperparams import ALGOS

    assert set(SB3_ALGOS) == set(ALGOS)


@pytest.mark.parametrize("text", ["foo:model.zip", "DQN:runs/x/model.zip[deterministic=true]"])
def test_an_unknown_algorithm_is_one_line(text):
    """``foo:model.zip`` is a learned agent of an unknown algorithm, not an unknown classical
    name: the message says so in one line."""
    with pytest.raises(ValueError, match=r"^agent='(foo|DQN):.*model.zip' is invalid: '(foo|DQN)' "
                                         r"is not a learning algorithm; a learned agent is "
                                         r"ALGO:.*model.zip with ALGO one of ppo, a2c, sac, "
                                         r"td3$"):
        AgentSpec.parse(text)
    with pytest.raises(ValueError, match="is not a learning algorithm"):
        is_learned(text)
