"""greedy-index: the optimistic index per unit of capacity, feasible every slot, learned only from
the observation's feedback."""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest

from schedgym.agents import make, registry
from schedgym.envs.fluctuating_speed import ENV_ID
from schedgym.envs.fluctuating_speed.dynamics import is_feasible
from tests.envs.fluctuating_speed.conftest import tiny_instance


@pytest.mark.parametrize("instance_seed", [0, 7, 31])
def test_feasible_every_slot_and_only_present_ports(instance_seed):
    env = gym.make(ENV_ID, instance_seed=instance_seed, horizon=150, compute_oracle=False,
                   n_types=5, n_instances=20, edge_prob=0.3, capacity_scale=2)
    inst = env.unwrapped.instance
    agent = make("greedy-index", env)
    obs, _ = env.reset(seed=instance_seed)
    total_selected = 0
    for _ in range(150):
        x, _ = agent.predict(obs)
        assert x.dtype == np.int8 and x.shape == (inst.n_edges,)
        assert is_feasible(inst, x)
        present = obs["arrivals"][inst.port_of_edge] > 0.5
        assert not np.any(x.astype(bool) & ~present)
        obs, _, _, _, info = env.step(x)
        assert info["n_repaired"] == 0 and info["n_masked"] == 0
        total_selected += int(x.sum())
    assert total_selected > 150  # it does select


def test_index_by_hand():
    inst = tiny_instance()  # capacities (3, 2); requests columns (1,1) (2,1) (1,1) (1,2)
    env = gym.make(ENV_ID, instance=inst, horizon=6, arrival_prob=1.0, compute_oracle=False)
    agent = make("greedy-index", env, c=0.5, unused_value=4.0)
    share = [1 / 3 + 1 / 2, 2 / 3 + 1 / 2, 1 / 3 + 1 / 2, 1 / 3 + 2 / 2]
    obs, _ = env.reset(seed=0)
    sums, counts = [0.0] * 4, [0] * 4
    for t in range(6):
        x, _ = agent.predict(obs)
        state = agent._states[0]
        for e in range(4):
            if counts[e]:
                want = (sums[e] / counts[e] + 0.5 * math.sqrt(2 * math.log(t + 2) / counts[e]))
            else:
                want = 4.0
            # rel 1e-6: the agent learns from the observation's float32 feedback
            assert agent.index(state, t)[e] == pytest.approx(want / share[e], rel=1e-6)
        # the selection is the decoder's rule over the index: descending, first fit
        idx = agent.index(state, t)
        order = sorted(range(4), key=lambda e: (-idx[e], e))
        rem = [3, 2]
        want_x = [0] * 4
        for e in order:
            a = inst.requests[:, e]
            if all(a[k] <= rem[k] for k in range(2)):
                want_x[e] = 1
                rem = [rem[k] - a[k] for k in range(2)]
        assert x.tolist() == want_x
        obs, _, _, _, info = env.step(x)
        for e in np.flatnonzero(info["selection"]):
            sums[e] += info["slot_feedback"][e]
            counts[e] += 1


def test_registered_with_options_and_refusals():
    assert "greedy-index" in registry.names_for(ENV_ID)
    env = gym.make(ENV_ID, horizon=5)
    assert make("greedy-index", env, c=0.0).c == 0.0
    with pytest.raises(ValueError, match="c"):
        make("greedy-index", env, c=-1.0)
    with pytest.raises(ValueError, match="unused_value"):
        make("greedy-index", env, unused_value=0.0)
    with pytest.raises(ValueError, match="action_mode"):
        make("greedy-index", gym.make(ENV_ID, horizon=5, action_mode="scores"))


def test_an_edge_that_never_fits_is_never_tried():
    inst = tiny_instance()
    big = inst.__class__(edges=inst.edges, requests=np.array([[1, 2, 1, 4], [1, 1, 1, 2]]),
                         capacities=inst.capacities, cost=inst.cost, mean=inst.mean,
                         std=inst.std, n_types=2, n_instances=3, resource_names=("cpu", "gpu"))
    env = gym.make(ENV_ID, instance=big, horizon=10, arrival_prob=1.0, compute_oracle=False)
    agent = make("greedy-index", env)
    obs, _ = env.reset(seed=1)
    for _ in range(10):
        x, _ = agent.predict(obs)
        assert x[3] == 0
        obs = env.step(x)[0]
