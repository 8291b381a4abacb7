"""EntityPolicy: permutation equivariance/invariance, masking, one set of weights for every size."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch as th
from gymnasium import spaces
from stable_baselines3 import PPO
from stable_baselines3.common.logger import Logger

from schedgym.train.policies import EntityPolicy, entity_space_sizes

F, C = 5, 3


def _space(n: int) -> spaces.Dict:
    return spaces.Dict({"entities": spaces.Box(0, 1, (n * F,), np.float32),
                        "mask": spaces.Box(0, 1, (n,), np.float32),
                        "context": spaces.Box(0, 1, (C,), np.float32)})


def _policy(n: int, layout: str = "entity", n_act: int | None = None,
            seed: int = 0) -> EntityPolicy:
    th.manual_seed(seed)
    act = spaces.Box(-1, 1, (n if n_act is None else n_act,), np.float32)
    return EntityPolicy(_space(n), act, lambda _: 3e-4, action_layout=layout,
                        net_arch=[16, 16])


def _obs(n: int, batch: int = 4, seed: int = 1) -> dict[str, th.Tensor]:
    rng = np.random.default_rng(seed)
    mask = (rng.uniform(size=(batch, n)) < 0.6).astype(np.float32)
    mask[:, 0] = 1.0
    mask[-1] = 0.0  # a row with no entity masked in
    rows = rng.uniform(size=(batch, n, F)).astype(np.float32)
    return {"entities": th.as_tensor(rows.reshape(batch, n * F)),  # the contract's 1-D layout
            "mask": th.as_tensor(mask),
            "context": th.as_tensor(rng.uniform(size=(batch, C)).astype(np.float32))}


def _permuted(obs: dict[str, th.Tensor], perm: np.ndarray) -> dict[str, th.Tensor]:
    """The same observations with the entities (``F``-wide blocks of ``entities``) reordered."""
    B, n = obs["mask"].shape
    rows = obs["entities"].reshape(B, n, F)[:, perm].reshape(B, n * F)
    return {"entities": rows, "mask": obs["mask"][:, perm], "context": obs["context"]}


def test_permuting_entities_permutes_actions_and_keeps_the_value():
    pol = _policy(9)
    obs = _obs(9)
    perm = np.random.default_rng(2).permutation(9)
    with th.no_grad():
        mu, v, _ = pol.heads(obs)
        mu_p, v_p, _ = pol.heads(_permuted(obs, perm))
        th.testing.assert_close(mu_p, mu[:, perm], rtol=1e-5, atol=1e-6)
        th.testing.assert_close(v_p, v, rtol=1e-5, atol=1e-6)
        actions = th.as_tensor(np.random.default_rng(3).uniform(-1, 1, (4, 9)), dtype=th.float32)
        v1, lp1, ent1 = pol.evaluate_actions(obs, actions)
        v2, lp2, ent2 = pol.evaluate_actions(_permuted(obs, perm), actions[:, perm])
        th.testing.assert_close(lp1, lp2, rtol=1e-5, atol=1e-5)
        th.testing.assert_close(ent1, ent2, rtol=1e-5, atol=1e-5)
    assert not th.allclose(mu[0], mu[0, perm])  # the check above can fail


def test_global_layout_is_invariant():
    pol = _policy(9, layout="global", n_act=3)
    obs = _obs(9)
    perm = np.random.default_rng(4).permutation(9)
    with th.no_grad():
        mu, v, _ = pol.heads(obs)
        mu_p, v_p, _ = pol.heads(_permuted(obs, perm))
    assert mu.shape == (4, 3)
    th.testing.assert_close(mu_p, mu, rtol=1e-5, atol=1e-6)
    th.testing.assert_close(v_p, v, rtol=1e-5, atol=1e-6)


def test_masked_out_entities_change_nothing_else():
    pol = _policy(6)
    obs = _obs(6, batch=1)
    obs["mask"][:] = th.tensor([[1, 0, 1, 0, 1, 1]], dtype=th.float32)
    other = {k: v.clone() for k, v in obs.items()}
    other["entities"][0, F:2 * F] = 1.0 - other["entities"][0, F:2 * F]  # masked-out row 1
    with th.no_grad():
        mu, v, _ = pol.heads(obs)
        mu2, v2, _ = pol.heads(other)
        keep = [0, 2, 3, 4, 5]
        th.testing.assert_close(mu2[:, keep], mu[:, keep])
        th.testing.assert_close(v2, v)
        # the log-probability counts only the masked-in entries
        a = th.zeros((1, 6))
        lp = pol.evaluate_actions(obs, a)[1]
        b = a.clone()
        b[0, 3] = 0.9  # masked out: no effect
        assert th.equal(pol.evaluate_actions(obs, b)[1], lp)
        b[0, 2] = 0.9  # masked in
        assert not th.equal(pol.evaluate_actions(obs, b)[1], lp)


def test_parameter_count_does_not_depend_on_n():
    counts = {n: sum(p.numel() for p in _policy(n).parameters()) for n in (1, 7, 300)}
    assert len(set(counts.values())) == 1
    small, big = _policy(7, seed=0), _policy(300, seed=1)
    big.load_state_dict(small.state_dict())  # same shapes, so the weights move across sizes
    assert all(th.equal(a, b) for a, b in zip(small.parameters(), big.parameters(), strict=True))
    g1, g2 = _policy(7, "global", 3), _policy(300, "global", 3)
    assert sum(p.numel() for p in g1.parameters()) == sum(p.numel() for p in g2.parameters())


def test_bad_spaces_and_options_raise():
    act = spaces.Box(-1, 1, (4,), np.float32)
    with pytest.raises(ValueError, match="obs_mode='entities'"):
        EntityPolicy(spaces.Dict({"x": spaces.Box(0, 1, (4,))}), act, lambda _: 1e-3)
    with pytest.raises(ValueError, match="action_layout='entity' is invalid"):
        EntityPolicy(_space(5), act, lambda _: 1e-3, action_layout="entity")
    with pytest.raises(ValueError, match="action_layout='rows' is invalid"):
        EntityPolicy(_space(4), act, lambda _: 1e-3, action_layout="rows")
    with pytest.raises(ValueError, match="Box"):
        EntityPolicy(_space(4), spaces.MultiBinary(4), lambda _: 1e-3)
    assert entity_space_sizes(_space(4)) == (4, F, C)
    mask, ctx = spaces.Box(0, 1, (4,), np.float32), spaces.Box(0, 1, (C,), np.float32)
    for bad in ((4, F), (4 * F + 1,), (3,)):  # 2-D rows, not a multiple of N, F = 0
        space = spaces.Dict({"entities": spaces.Box(0, 1, bad, np.float32), "mask": mask,
                             "context": ctx})
        with pytest.raises(ValueError, match=r"entities=\(N \* F,\)"):
            entity_space_sizes(space)


def test_action_mean_init_starts_every_action_mean_there():
    """``action_mean_init``: the untrained action mean sits at the value (both layouts; the
    masked-out entries stay 0), is a constructor parameter (so saved in the zip), and a value
    outside the action space or not a number is refused by name."""
    obs = _obs(9)
    for layout, n_act in (("entity", None), ("global", 3)):
        th.manual_seed(0)
        act = spaces.Box(-1, 1, (9 if n_act is None else n_act,), np.float32)
        pol = EntityPolicy(_space(9), act, lambda _: 3e-4, action_layout=layout,
                           net_arch=[16, 16], action_mean_init=0.3)
        with th.no_grad():
            mu, _, mask = pol.heads(obs)
        on = mu[mask > 0] if layout == "entity" else mu
        assert th.all((on - 0.3).abs() < 0.05), on
        if layout == "entity":
            assert th.all(mu[mask == 0] == 0)
        assert pol._get_constructor_parameters()["action_mean_init"] == 0.3
    with th.no_grad():
        plain = _policy(9).heads(obs)[0]
    assert th.all(plain.abs() < 0.05)  # the default keeps SB3's zero-bias init
    act = spaces.Box(-1, 1, (9,), np.float32)
    for bad in (1.5, -2, "0.1", True, float("nan")):
        with pytest.raises(ValueError, match=r"action_mean_init=.* is invalid: must be a "
                                             r"number in \[-1, 1\]"):
            EntityPolicy(_space(9), act, lambda _: 3e-4, action_mean_init=bad)


def test_same_weights_play_two_sizes_of_fluctuating_speed(tmp_path):
    """A PPO model saved at one size loads with another size's spaces and acts there."""
    kw = {"obs_mode": "entities", "action_mode": "scores", "horizon": 8, "compute_oracle": False}
    small = gym.make("schedgym/FluctuatingSpeed-v0", n_types=3, n_instances=5, **kw)
    model = PPO(EntityPolicy, small, n_steps=16, batch_size=16, n_epochs=1, device="cpu",
                seed=0, policy_kwargs={"action_layout": "entity"})
    # a logger with no outputs: SB3's default one makes an empty /tmp/SB3-<date> folder per run
    model.set_logger(Logger(folder=None, output_formats=[]))
    model.learn(16)
    path = tmp_path / "m.zip"
    model.save(path)
    big = gym.make("schedgym/FluctuatingSpeed-v0", n_types=6, n_instances=9, **kw)
    loaded = PPO.load(path, device="cpu", custom_objects={
        "observation_space": big.observation_space, "action_space": big.action_space})
    n_small = sum(p.numel() for p in model.policy.parameters())
    assert sum(p.numel() for p in loaded.policy.parameters()) == n_small
    for a, b in zip(model.policy.parameters(), loaded.policy.parameters(), strict=True):
        assert th.equal(a, b)
    obs, _ = big.reset(seed=0)
    action, _ = loaded.predict(obs, deterministic=True)
    assert action.shape == (54,)
    assert big.step(action)[0]["entities"].shape == (54 * 12,)


def test_heads_equal_the_plain_computation_on_every_row():
    """The masked-in rows only, with the action head's first layer split: the same numbers as
    the encoder and heads applied to every row and masked afterwards."""
    pol = _policy(8)
    obs = _obs(8, batch=5)
    with th.no_grad():
        mu, v, mask = pol.heads(obs)
        ent, ctx = obs["entities"].reshape(5, 8, F), obs["context"]
        h = pol.encoder(th.cat([ent, ctx[:, None].expand(5, 8, C)], dim=-1))
        m = mask[..., None] > 0
        mean = (h * m).sum(1) / m.sum(1).clamp_min(1)
        top = th.where(m, h, th.full_like(h, -1e9)).amax(1)
        top = th.where(m.any(1), top, th.zeros_like(top))
        g = th.cat([mean, top, ctx], dim=-1)
        th.testing.assert_close(v, pol.value_net(g), rtol=1e-5, atol=1e-6)
        ref = pol.action_net(th.cat([h, g[:, None].expand(5, 8, g.shape[-1])], -1)).squeeze(-1)
        th.testing.assert_close(mu, ref * mask, rtol=1e-5, atol=1e-6)
    assert (mask == 0).any() and (mu[mask == 0] == 0).all()


def test_the_agents_tell_an_entity_policy_by_its_name_without_importing_it():
    """agents.learned checks a saved model without importing train (nor torch): the policy
    class's qualified name, along its MRO, says whether it is the shared-weights policy."""
    from stable_baselines3.common.policies import MultiInputActorCriticPolicy

    from schedgym.agents.learned import ENTITY_POLICY, is_entity_policy
    from schedgym.core.entities import entity_space
    from schedgym.core.entities import entity_space_sizes as core_sizes

    class Tuned(EntityPolicy):
        pass

    assert ENTITY_POLICY == f"{EntityPolicy.__module__}.{EntityPolicy.__qualname__}"
    assert is_entity_policy(EntityPolicy) and is_entity_policy(Tuned)
    assert not is_entity_policy(MultiInputActorCriticPolicy) and not is_entity_policy(None)
    assert entity_space_sizes is core_sizes and core_sizes(entity_space(7, F, C)) == (7, F, C)
