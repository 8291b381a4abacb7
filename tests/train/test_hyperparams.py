"""configs/*.yml load, every key is understood, and a typo is an error."""

from __future__ import annotations

import gymnasium as gym
import pytest
import yaml

import schedgym
from schedgym.envs.gain_overhead import ENV_ID as GO
from schedgym.train import hyperparams as hp


@pytest.mark.parametrize("algo", sorted(hp.ALGOS))
def test_every_shipped_file_loads_and_validates(algo):
    data = hp.load_file(algo)
    assert "default" in data  # envs added later train with no change
    for name, entry in data.items():
        kw, settings = hp.split_entry(algo, entry)
        assert settings["n_timesteps"] >= 1 and settings["n_envs"] >= 1
        cls = hp.algo_class(algo)
        # the remaining keys are exactly constructor arguments of the SB3 class
        import inspect

        params = inspect.signature(cls.__init__).parameters
        assert set(kw) <= set(params), (name, set(kw) - set(params))


def test_every_env_has_a_config_for_every_supported_algo(env_id):
    env = gym.make(env_id)
    for algo in hp.supported_algos(env.action_space):
        entry = hp.load_config(algo, env_id)
        assert entry["policy"]
    env.close()


def test_supported_algos_follow_the_action_space():
    from gymnasium import spaces

    assert hp.supported_algos(spaces.Box(-1, 1, (3,))) == ("ppo", "a2c", "sac", "td3")
    assert hp.supported_algos(spaces.MultiBinary(4)) == ("ppo", "a2c")


def _write(tmp_path, algo, entry):
    p = tmp_path / f"{algo}.yml"
    p.write_text(yaml.safe_dump({GO: entry}))
    return p


BASE = {"policy": "MultiInputPolicy", "n_timesteps": 100}


@pytest.mark.parametrize("bad, word", [
    ({"n_step": 64}, "n_step"),                                    # typo of n_steps
    ({"policy_kwargs": "dict(net_arc=[64])"}, "net_arc"),          # typo inside policy_kwargs
    ({"normalize": "dict(norm_rewards=True)"}, "norm_rewards"),    # typo inside normalize
    ({"policy": "MultiInputPolicyy"}, "MultiInputPolicyy"),
    ({"policy": "schedgym.train.policies.NoSuchPolicy"}, "NoSuchPolicy"),
    ({"learning_rate": "linear_3e-4"}, "learning_rate"),
    ({"n_timesteps": 0}, "n_timesteps"),
    ({"seed": 3}, "seed"),                                         # set by the trainer
    ({"policy_kwargs": "dict(net_arch=[64]"}, "policy_kwargs"),    # syntax error
])
def test_a_typo_is_an_error_naming_it(tmp_path, bad, word):
    path = _write(tmp_path, "ppo", {**BASE, **bad})
    with pytest.raises(ValueError, match=word):
        hp.load_config("ppo", GO, path)


def test_off_policy_keys_only_for_off_policy(tmp_path):
    entry = {**BASE, "noise_type": "normal", "noise_std": 0.1}
    with pytest.raises(ValueError, match="noise_(type|std)"):
        hp.load_config("ppo", GO, _write(tmp_path, "ppo", entry))
    assert hp.load_config("td3", GO, _write(tmp_path, "td3", entry))


def test_a_typo_in_another_env_entry_is_still_an_error(tmp_path):
    p = tmp_path / "ppo.yml"
    p.write_text(yaml.safe_dump({GO: BASE,
                                 "schedgym/Other-v0": {**BASE, "gama": 0.9}}))
    with pytest.raises(ValueError, match="gama"):
        hp.load_config("ppo", GO, p)


def test_missing_entry_without_default(tmp_path):
    p = _write(tmp_path, "ppo", BASE)
    with pytest.raises(ValueError, match="no entry"):
        hp.load_config("ppo", "schedgym/Nope-v0", p)


def test_schedules_and_strings_are_converted():
    kw, st = hp.split_entry("ppo", {**BASE, "learning_rate": "lin_1e-3", "clip_range": 0.2,
                                    "normalize": "dict(norm_obs=False, norm_reward=True)",
                                    "policy_kwargs": "dict(net_arch=[8], activation_fn=nn.ReLU)"})
    assert kw["learning_rate"](1.0) == pytest.approx(1e-3)
    assert kw["learning_rate"](0.5) == pytest.approx(5e-4)
    assert st["normalize"] == {"norm_obs": False, "norm_reward": True}
    import torch

    assert kw["policy_kwargs"] == {"net_arch": [8], "activation_fn": torch.nn.ReLU}
    assert hp.normalize_kwargs(True) == {} and hp.normalize_kwargs(False) is None


def test_wrapper_keys_are_rejected_by_schedgym_train_with_a_clear_message():
    with pytest.raises(ValueError, match="rl_zoo3"):
        hp.split_entry("ppo", {**BASE, "frame_stack": 4})


def test_unknown_algo():
    with pytest.raises(ValueError, match="algo"):
        hp.load_file("dqnn")


def test_env_ids_drive_the_tests():
    assert len(schedgym.ENV_IDS) >= 1


def test_action_mode_entry_is_preferred(tmp_path):
    import yaml

    p = tmp_path / "ppo.yml"
    env_id = GO
    p.write_text(yaml.safe_dump({env_id: {**BASE, "n_steps": 64},
                                 hp.mode_key(env_id, "fractions"): {**BASE, "n_steps": 32},
                                 "default": {**BASE, "n_steps": 16}}))
    assert hp.load_config("ppo", env_id, p, "fractions")["n_steps"] == 32
    assert hp.load_config("ppo", env_id, p, "prices")["n_steps"] == 64  # no entry of its own
    assert hp.load_config("ppo", env_id, p)["n_steps"] == 64
    assert hp.load_config("ppo", "schedgym/Other-v0", p, "fractions")["n_steps"] == 16


@pytest.mark.parametrize("text,match", [
    ("default: !!python/object/apply:os.system ['echo pwned']\n", "could not determine"),
    ("a: &a {n_steps: 8}\ndefault: *a\n", r"alias \(\*a\) is not allowed"),
    ("default: [\n", "line 2"),
])
def test_hyperparameter_files_are_safe_alias_free_yaml(tmp_path, text, match):
    """A hyperparameter file is data: no tags that build objects, no alias bombs."""
    path = tmp_path / "hp.yml"
    path.write_text(text)
    with pytest.raises(ValueError, match=f"config='{path}' is invalid: .*{match}"):
        hp.load_file("ppo", path)


def test_hyperparameter_file_that_is_not_a_regular_file_is_refused(tmp_path):
    link = tmp_path / "hp.yml"
    link.symlink_to("/dev/zero")
    with pytest.raises(ValueError, match="not a regular file"):
        hp.load_file("ppo", link)
