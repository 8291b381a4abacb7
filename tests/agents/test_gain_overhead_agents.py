"""OgaSched and the four baselines on GainOverhead-v0: SB3 protocol, feasibility at every step,
arrival masking, determinism, batching, and OgaSched's regret bound."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.evaluation import evaluate_policy

from schedgym import agents
from schedgym.envs.gain_overhead import dynamics
from tests.envs.gain_overhead.conftest import ENV_ID, SMALL

CLASSICAL = ["ogasched", "drf", "fairness", "binpacking", "spreading", "random"]
#: Baselines serve only job types with an arrival in the slot (spec ogasched §5).
MASKING = {"drf", "fairness", "binpacking", "spreading"}
VARIANTS = [
    ("ogasched", {"timing": "lookahead"}),
    ("ogasched", {"lr_schedule": "theory_const"}),
    ("ogasched", {"lr_schedule": "theory_adaptive"}),
    ("ogasched", {"projection": "paper"}),
    ("drf", {"demand": "total"}),
    ("fairness", {"denominator": "all"}),
    ("binpacking", {"score": "fraction"}),
]


class FeasibilityCheck(gym.Wrapper):
    """Asserts after every step that the applied allocation is in Y (and masked if asked)."""

    def __init__(self, env, masked: bool, max_move: float | None = None):
        super().__init__(env)
        self.masked = masked
        self.max_move = max_move
        self.steps = 0

    def step(self, action):
        obs, r, term, trunc, info = self.env.step(action)
        inst = self.env.unwrapped.instance
        y = info["allocation"]
        assert dynamics.is_feasible(inst, y), dynamics.feasibility_violation(inst, y)
        assert np.isfinite(r)
        if self.masked:
            idle = info["slot_arrivals"][inst.edge_type] == 0
            assert np.all(y[idle] == 0), "allocation to a job type without an arrival"
        if self.max_move is not None:
            # float32 action encoding moves a feasible allocation by rounding only
            assert info["projection_distance"] <= self.max_move * inst.edge_caps.max()
        self.steps += 1
        return obs, r, term, trunc, info


@pytest.mark.parametrize("utility", ["linear", "mixed"])
@pytest.mark.parametrize("name", CLASSICAL)
def test_every_agent_through_evaluate_policy_is_feasible_every_step(name, utility):
    env = FeasibilityCheck(
        gym.make(ENV_ID, utility=utility, **SMALL), masked=name in MASKING,
        max_move=None if name == "random" else 1e-5,
    )
    agent = agents.make(name, env.unwrapped)
    mean, _ = evaluate_policy(agent, env, n_eval_episodes=2, warn=False)
    assert np.isfinite(mean)
    assert env.steps == 2 * SMALL["horizon"]


@pytest.mark.parametrize("name, kw", VARIANTS)
def test_agent_variants_are_feasible(name, kw):
    masked = name in MASKING or kw.get("timing") == "lookahead"
    # the paper's projection can be infeasible: the env then projects, so no bound on the move
    max_move = None if kw.get("projection") == "paper" else 1e-5
    env = FeasibilityCheck(gym.make(ENV_ID, **SMALL), masked=masked, max_move=max_move)
    agent = agents.make(name, env.unwrapped, **kw)
    evaluate_policy(agent, env, n_eval_episodes=1, warn=False)
    assert env.steps == SMALL["horizon"]


@pytest.mark.parametrize("name", [n for n in CLASSICAL if n != "random"])
def test_batched_predict_matches_single_envs(name):
    """A DummyVecEnv batch gives the same actions as separate single-env runs (the random agent
    draws from one stream per env index by design, so it is excluded)."""
    n = 3
    venv = make_vec_env(ENV_ID, n_envs=n, seed=7, env_kwargs=SMALL)
    agent = agents.make(name, venv.envs[0].unwrapped)
    obs = venv.reset()
    starts = np.ones(n, dtype=bool)
    batch_actions = []
    for _ in range(5):
        act, _ = agent.predict(obs, episode_start=starts)
        assert act.shape == (n, *venv.action_space.shape)
        batch_actions.append(act)
        obs, _, dones, _ = venv.step(act)
        starts = dones
    for i in range(n):
        env = gym.make(ENV_ID, **SMALL)
        single = agents.make(name, env)
        o, _ = env.reset(seed=7 + i)
        start = True
        for t in range(5):
            a, _ = single.predict(o, episode_start=np.array([start]))
            start = False
            np.testing.assert_array_equal(a, batch_actions[t][i])
            o, *_ = env.step(a)


@pytest.mark.parametrize("name", CLASSICAL)
def test_same_seed_same_actions_and_episode_start_resets(name):
    def run(agent, env):
        o, _ = env.reset(seed=3)
        acts, start = [], True
        for _ in range(8):
            a, _ = agent.predict(o, episode_start=np.array([start]))
            start = False
            acts.append(a)
            o, *_ = env.step(a)
        return np.array(acts)

    env = gym.make(ENV_ID, **SMALL)
    agent = agents.make(name, env)
    first = run(agent, env)
    again = run(agent, env)  # same agent object, new episode: state reset by episode_start
    fresh = run(agents.make(name, env), env)
    if name == "random":  # a new episode draws new actions; a new agent repeats the first run
        np.testing.assert_array_equal(first, fresh)
    else:
        np.testing.assert_array_equal(first, again)
        np.testing.assert_array_equal(first, fresh)


def test_different_agents_with_the_same_seed_see_the_same_arrivals():
    seen = {}
    for name in CLASSICAL:
        env = gym.make(ENV_ID, **SMALL)
        agent = agents.make(name, env)
        o, _ = env.reset(seed=21)
        xs, done, start = [], False, True
        while not done:
            a, _ = agent.predict(o, episode_start=np.array([start]))
            start = False
            o, _, term, trunc, info = env.step(a)
            xs.append(info["slot_arrivals"])
            done = term or trunc
        seen[name] = np.array(xs)
    ref = seen["ogasched"]
    for name, xs in seen.items():
        np.testing.assert_array_equal(xs, ref, err_msg=name)


def test_ogasched_oco_ignores_current_arrivals_and_takes_the_gradient_step():
    env = gym.make(ENV_ID, **SMALL).unwrapped
    inst = env.instance
    agent = agents.make("ogasched", env, eta0=3.0, decay=0.5)
    obs, _ = env.reset(seed=0)
    a1, _ = agent.predict(obs, episode_start=np.array([True]))
    np.testing.assert_array_equal(a1, env.encode_action(np.zeros((inst.n_edges,
                                                                    inst.n_resources))))
    # expected y(2) = Pi(y(1) + eta_1 grad q(x(1), y(1))) with eta_1 = eta0
    x1 = obs["arrivals"].astype(np.float64)
    y2 = dynamics.project(inst, 3.0 * dynamics.supergradient(inst, x1, np.zeros_like(
        inst.edge_caps)))
    obs2, *_ = env.step(a1)
    flipped = dict(obs2, arrivals=1.0 - obs2["arrivals"])  # y(2) must not depend on x(2)
    a2, _ = agent.predict(flipped)
    np.testing.assert_array_equal(a2, env.encode_action(y2))
    # next step size is eta0 * decay
    x2 = flipped["arrivals"].astype(np.float64)
    y3 = dynamics.project(inst, y2 + 1.5 * dynamics.supergradient(inst, x2, y2))
    a3, _ = agent.predict(obs2)
    np.testing.assert_array_equal(a3, env.encode_action(y3))


def test_ogasched_constant_theory_step_regret_below_theorem_bound():
    from schedgym.envs.gain_overhead.offline import hindsight_optimum

    T = 300
    for utility in ("linear", "log"):
        env = gym.make(ENV_ID, **{**SMALL, "horizon": T, "utility": utility,
                                  "contention": 1.0}).unwrapped
        agent = agents.make("ogasched", env, lr_schedule="theory_const")
        obs, _ = env.reset(seed=1)
        total, start, done = 0.0, True, False
        while not done:
            a, _ = agent.predict(obs, episode_start=np.array([start]))
            start = False
            obs, r, term, trunc, _ = env.step(a)
            total += r
            done = term or trunc
        _, q_star = hindsight_optimum(env.instance, env.arrivals.sum(axis=0))
        regret = q_star - total
        bound = env.instance.regret_bound(T)
        assert regret <= bound, (utility, regret, bound)
        assert q_star >= total - 1e-6 * abs(total) or regret < 0


def test_hindsight_optimum_beats_every_fixed_heuristic_allocation():
    """y* is the best *fixed* allocation: no baseline's allocation, frozen, does better."""
    from schedgym.agents.baselines.gain_overhead import fairness_allocation
    from schedgym.envs.gain_overhead.offline import hindsight_optimum

    env = gym.make(ENV_ID, **SMALL).unwrapped
    env.reset(seed=2)
    counts = env.arrivals.sum(axis=0)
    y_star, q_star = hindsight_optimum(env.instance, counts)
    for y in (fairness_allocation(env.instance, np.ones(env.instance.n_types)),
              np.zeros_like(y_star)):
        assert dynamics.reward(env.instance, counts, y) <= q_star + 1e-6 * abs(q_star)


def test_baseline_hand_example():
    """Two types sharing one instance: Fairness splits by request, DRF serves the lower
    dominant share first, BinPacking / Spreading use one instance per (type, resource)."""
    from schedgym.envs.gain_overhead import GainOverheadInstance

    inst = GainOverheadInstance(
        edges=np.array([[0, 0], [0, 1], [1, 1]]),
        requests=np.array([[4.0], [6.0]]),
        capacities=np.array([[3.0], [5.0]]),
        alpha=np.ones((2, 1)),
        beta=np.array([0.1]),
        utility=np.full((2, 1), "linear"),
        resource_names=("cpu",),
    )
    env = gym.make(ENV_ID, instance=inst, horizon=3).unwrapped
    x = np.array([1.0, 1.0])
    y = agents.make("fairness", env).allocation(x)
    # instance 0: only type 0 -> min(4/4*3, 4) = 3; instance 1: shares 4/10*5=2, 6/10*5=3
    np.testing.assert_allclose(y[:, 0], [3.0, 2.0, 3.0])
    # DRF: shares s0 = 4/8 = 0.5, s1 = 6/5 = 1.2 -> type 0 first: 3 on r0, 4 on r1; type 1: 1
    np.testing.assert_allclose(agents.make("drf", env).allocation(x)[:, 0], [3.0, 4.0, 1.0])
    # DRF total demand: type 0 capped at 4 in total: 3 on r0, 1 on r1; type 1 gets 4
    np.testing.assert_allclose(agents.make("drf", env, demand="total").allocation(x)[:, 0],
                               [3.0, 1.0, 4.0])
    # BinPacking: type 0 (a=4): only r1 (5 left) fits -> r1 gives 4; type 1 (a=6) reaches only
    # r1, which has 1 left and does not fit -> the most remaining among R_1 = {r1} gives 1
    np.testing.assert_allclose(agents.make("binpacking", env).allocation(x)[:, 0],
                               [0.0, 4.0, 1.0])
    # Spreading: type 0 -> most remaining is r1 (5): min(4, 5) = 4; type 1 -> r1 only: 1
    np.testing.assert_allclose(agents.make("spreading", env).allocation(x)[:, 0],
                               [0.0, 4.0, 1.0])
    # only type 1 arrived: everything to it, bounded by its cap and the capacity
    np.testing.assert_allclose(agents.make("fairness", env).allocation(np.array([0.0, 1.0])
                                                                         )[:, 0], [0, 0, 5.0])


@pytest.mark.parametrize("kw, match", [({"timing": "future"}, "timing"),
                                       ({"projection": "approx"}, "projection"),
                                       ({"lr_schedule": "cosine"}, "lr_schedule"),
                                       ({"eta0": -1.0}, "eta0"), ({"decay": 0.0}, "decay"),
                                       ({"nonsense": 1}, "nonsense")])
def test_ogasched_bad_hyperparameters(kw, match):
    env = gym.make(ENV_ID, **SMALL)
    with pytest.raises((ValueError, TypeError), match=match):
        agents.make("ogasched", env, **kw)


def test_agents_make_errors():
    env = gym.make(ENV_ID, **SMALL)
    with pytest.raises(ValueError, match="agent='nope'"):
        agents.make("nope", env)
    with pytest.raises(ValueError, match="does not exist"):
        agents.make("ppo:/no/such/model.zip", env)


# ------------------------------------------- compiled kernels against plain-Python references
def _ref_one_node(inst, x, rule):
    """BinPacking / Spreading straight from spec §5.3-5.4, one (type, resource) at a time."""
    y = np.zeros((inst.n_edges, inst.n_resources))
    U = inst.capacities.astype(float).copy()
    for l in range(inst.n_types):
        if x[l] <= 0:
            continue
        es = [e for e in range(inst.n_edges) if inst.edge_type[e] == l]
        for k in range(inst.n_resources):
            a = inst.requests[l, k]
            if a <= 0:
                continue
            rem = [U[inst.edge_instance[e], k] for e in es]
            most = max(range(len(es)), key=lambda i: (rem[i], -i))
            if rule == "spread":
                i, give = (most, min(a, rem[most])) if rem[most] > 1e-12 else (None, 0.0)
            else:
                caps = [inst.capacities[inst.edge_instance[e], k] for e in es]
                keys = rem if rule == "remaining" else [u / c if c > 0 else np.inf
                                                        for u, c in zip(rem, caps, strict=True)]
                fits = [i for i in range(len(es)) if rem[i] >= a]
                i, give = (min(fits, key=lambda i: (keys[i], i)), a) if fits else (most, rem[most])
            if i is not None and give > 0:
                y[es[i], k] += give
                U[inst.edge_instance[es[i]], k] -= give
    return y


def _ref_drf(inst, x, total):
    y = np.zeros((inst.n_edges, inst.n_resources))
    U = inst.capacities.astype(float).copy()
    reach = np.array([[sum(inst.capacities[r, k] for r in range(inst.n_instances)
                           if inst.mask[l, r]) for k in range(inst.n_resources)]
                      for l in range(inst.n_types)])
    share = [max((inst.requests[l, k] / reach[l, k]) if reach[l, k] > 0 else
                 (np.inf if inst.requests[l, k] > 0 else 0.0) for k in range(inst.n_resources))
             for l in range(inst.n_types)]
    for l in sorted((l for l in range(inst.n_types) if x[l] > 0), key=lambda l: (share[l], l)):
        left = inst.requests[l].astype(float).copy()
        for e in (e for e in range(inst.n_edges) if inst.edge_type[e] == l):
            r = inst.edge_instance[e]
            give = np.minimum(inst.requests[l], U[r])
            if total:
                give = np.minimum(give, left)
                left -= give
            y[e], U[r] = give, U[r] - give
    return y


def _ref_fairness(inst, x, all_types):
    y = np.zeros((inst.n_edges, inst.n_resources))
    for e in range(inst.n_edges):
        l, r = inst.edges[e]
        if x[l] <= 0:
            continue
        peers = [f for f in range(inst.n_edges) if inst.edge_instance[f] == r
                 and (all_types or x[inst.edge_type[f]] > 0)]
        for k in range(inst.n_resources):
            S = sum(inst.requests[inst.edge_type[f], k] for f in peers)
            share = inst.requests[l, k] / S * inst.capacities[r, k] if S > 0 else 0.0
            y[e, k] = min(share, inst.requests[l, k])
    return y


@pytest.mark.parametrize("seed", range(4))
def test_baseline_kernels_equal_plain_python_rules(seed):
    from schedgym.agents.baselines import gain_overhead as base

    env = gym.make(ENV_ID, **SMALL, instance_seed=seed, contention=3.0 + 4 * seed).unwrapped
    inst = env.instance
    rng = np.random.default_rng(seed)
    for _ in range(5):
        x = (rng.random(inst.n_types) < 0.6).astype(float)
        for got, want in [
            (base.binpacking_allocation(inst, x), _ref_one_node(inst, x, "remaining")),
            (base.binpacking_allocation(inst, x, "fraction"), _ref_one_node(inst, x, "fraction")),
            (base.spreading_allocation(inst, x), _ref_one_node(inst, x, "spread")),
            (base.drf_allocation(inst, x), _ref_drf(inst, x, False)),
            (base.drf_allocation(inst, x, "total"), _ref_drf(inst, x, True)),
            (base.fairness_allocation(inst, x), _ref_fairness(inst, x, False)),
            (base.fairness_allocation(inst, x, "all"), _ref_fairness(inst, x, True)),
        ]:
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("utility", ["linear", "mixed"])
def test_ascent_step_is_projected_supergradient_step(utility):
    env = gym.make(ENV_ID, **SMALL, utility=utility).unwrapped
    inst = env.instance
    rng = np.random.default_rng(0)
    for eta in (0.01, 1.0, 25.0):
        y = dynamics.project(inst, rng.uniform(0, 1, inst.edge_caps.shape) * inst.edge_caps)
        x = (rng.random(inst.n_types) < 0.7).astype(float)
        want = dynamics.project(inst, y + eta * dynamics.supergradient(inst, x, y))
        np.testing.assert_array_equal(dynamics.ascent_step(inst, x, y, eta), want)
        assert dynamics.is_feasible(inst, want)


def _oco_play(protocol: str, seed: int, **kw):
    """OgaSched ``oco``'s applied allocations and rewards over one episode under ``protocol``."""
    env = gym.make(ENV_ID, **SMALL, arrivals=protocol)
    agent = agents.make("ogasched", env, **kw)
    obs, _ = env.reset(seed=seed)
    ys, rewards, done, start = [], [], False, True
    while not done:
        action, _ = agent.predict(obs, episode_start=start, deterministic=True)
        obs, r, term, trunc, info = env.step(action)
        ys.append(info["allocation"].copy())
        rewards.append(r)
        done, start = term or trunc, False
    return np.array(ys), np.array(rewards)


@pytest.mark.parametrize("kw", [{}, {"lr_schedule": "theory_adaptive"}], ids=["exp", "adaptive"])
@pytest.mark.parametrize("seed", [0, 3])
def test_ogasched_oco_plays_the_same_sequence_in_both_protocols(seed, kw):
    y_rev, r_rev = _oco_play("revealed", seed, **kw)
    y_hid, r_hid = _oco_play("hidden", seed, **kw)
    assert np.abs(y_rev).sum() > 0  # it does learn something to compare
    np.testing.assert_array_equal(y_hid, y_rev)
    np.testing.assert_array_equal(r_hid, r_rev)


@pytest.mark.parametrize("name", [*CLASSICAL, "fixed-price", "myopic-opt"])
def test_every_agent_plays_the_whole_cluster(name):
    """Every node of the shipped trace (1,523 instances, 10,822 channels): a few slots of each
    agent in the mode it plays in, its allocation in Y at every step (the classical agents'
    own allocation up to float32 rounding, before the projection). The whole episode's
    figures are in docs/gain-overhead.md (benchmarks/go_whole_cluster.py)."""
    from schedgym.agents.registry import play_kwargs

    env = FeasibilityCheck(
        gym.make(ENV_ID, scenario="alibaba-gpu-2023", n_instances="all", split="test",
                 horizon=3, **play_kwargs(name, ENV_ID)),
        masked=name in MASKING, max_move=None if name in ("random", "fixed-price") else 1e-5)
    assert env.unwrapped.instance.n_instances == 1523
    agent = agents.make(name, env)
    obs, _ = env.reset(seed=1)
    done = False
    while not done:
        obs, _, term, trunc, _ = env.step(agent.predict(obs)[0])
        done = term or trunc
    assert env.steps == 3
