"""SB3 policies whose network rescales bounded observations into [0, 1] itself.

``BoundsScaledExtractor`` maps every ``Box`` entry of a Dict observation by its declared bounds,
``(x - low) / (high - low)`` where both bounds are finite (unchanged elsewhere), then flattens and
concatenates like SB3's ``CombinedExtractor``. Because the scaling lives in the policy, a saved
``model.zip`` is self-contained: ``agents.make("ppo:model.zip", env)`` and ``schedgym compare``
feed it raw observations, with no ``vecnormalize.pkl`` to carry around. Use it for envs whose
observations are not already in [0, 1] (DeadlineWelfare-v0), by name in ``configs/*.yml``:
``policy: schedgym.train.policies.BoundsScaledPolicy`` (PPO/A2C), ``BoundsScaledSACPolicy``,
``BoundsScaledTD3Policy``.

``EntityPolicy`` (PPO/A2C) plays the ``obs_mode="entities"`` observations of the entity
contract (:mod:`schedgym.core.entities`: ``Dict(entities=(N * F,), mask=(N,), context=(C,))``,
the ``entities`` vector holding the ``(N, F)`` rows flattened row-major): one network shared by
every entity, so its parameter count does not depend on the instance size ``N`` and one model
plays every size.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.distributions import DiagGaussianDistribution, Distribution
from stable_baselines3.common.policies import ActorCriticPolicy, MultiInputActorCriticPolicy
from stable_baselines3.common.preprocessing import preprocess_obs
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from stable_baselines3.common.type_aliases import PyTorchObs, Schedule
from stable_baselines3.sac.policies import MultiInputPolicy as SACMultiInputPolicy
from stable_baselines3.td3.policies import MultiInputPolicy as TD3MultiInputPolicy
from torch import nn

from schedgym.core.entities import ENTITY_KEYS, entity_space_sizes

__all__ = ["ACTION_LAYOUTS", "ENTITY_KEYS", "BoundsScaledExtractor", "BoundsScaledPolicy",
           "BoundsScaledSACPolicy", "BoundsScaledTD3Policy", "EntityPolicy",
           "MaskedDiagGaussian", "entity_space_sizes"]


class BoundsScaledExtractor(BaseFeaturesExtractor):
    """Flatten + concatenate a Dict of Boxes, each rescaled by its finite bounds to [0, 1]."""

    def __init__(self, observation_space: spaces.Dict) -> None:
        if not isinstance(observation_space, spaces.Dict):
            raise ValueError(f"observation_space={observation_space} is invalid: must be a Dict")
        self.keys = list(observation_space.spaces)
        lows, spans = [], []
        for key in self.keys:
            sub = observation_space.spaces[key]
            n = spaces.flatdim(sub)
            lo = np.zeros(n, dtype=np.float32)
            span = np.ones(n, dtype=np.float32)
            if isinstance(sub, spaces.Box):
                low = np.broadcast_to(sub.low, sub.shape).reshape(-1).astype(np.float64)
                high = np.broadcast_to(sub.high, sub.shape).reshape(-1).astype(np.float64)
                ok = np.isfinite(low) & np.isfinite(high) & (high > low)
                lo[ok] = low[ok]
                span[ok] = (high - low)[ok]
            lows.append(lo)
            spans.append(span)
        super().__init__(observation_space, int(sum(len(x) for x in lows)))
        self.low: th.Tensor
        self.span: th.Tensor
        self.register_buffer("low", th.as_tensor(np.concatenate(lows)))
        self.register_buffer("span", th.as_tensor(np.concatenate(spans)))

    def forward(self, observations: dict[str, th.Tensor]) -> th.Tensor:
        """``(batch, features)`` float tensor: every entry rescaled by its bounds."""
        x = th.cat([th.flatten(observations[k], start_dim=1).float() for k in self.keys], dim=1)
        return (x - self.low) / self.span


class BoundsScaledPolicy(MultiInputActorCriticPolicy):
    """PPO/A2C ``MultiInputPolicy`` with :class:`BoundsScaledExtractor` by default."""

    def __init__(self, *args: Any, features_extractor_class: type = BoundsScaledExtractor,
                 **kwargs: Any) -> None:
        kwargs["features_extractor_class"] = features_extractor_class
        super().__init__(*args, **kwargs)


class BoundsScaledSACPolicy(SACMultiInputPolicy):
    """SAC ``MultiInputPolicy`` with :class:`BoundsScaledExtractor` by default."""

    def __init__(self, *args: Any, features_extractor_class: type = BoundsScaledExtractor,
                 **kwargs: Any) -> None:
        kwargs["features_extractor_class"] = features_extractor_class
        super().__init__(*args, **kwargs)


class BoundsScaledTD3Policy(TD3MultiInputPolicy):
    """TD3 ``MultiInputPolicy`` with :class:`BoundsScaledExtractor` by default."""

    def __init__(self, *args: Any, features_extractor_class: type = BoundsScaledExtractor,
                 **kwargs: Any) -> None:
        kwargs["features_extractor_class"] = features_extractor_class
        super().__init__(*args, **kwargs)


#: The two action layouts of :class:`EntityPolicy` (the contract's ``metadata["entity_action"]``).
ACTION_LAYOUTS = ("entity", "global")


class MaskedDiagGaussian(DiagGaussianDistribution):
    """A diagonal Gaussian over one action entry per entity whose log-probability and entropy
    count only the entities of the mask (the env ignores the others' entries, so they would only
    add noise to the policy gradient)."""

    def __init__(self, action_dim: int) -> None:
        super().__init__(action_dim)
        self.mask: th.Tensor | None = None

    def proba_distribution_masked(self, mean_actions: th.Tensor, log_std: th.Tensor,
                                  mask: th.Tensor) -> MaskedDiagGaussian:
        """Set the distribution: mean ``(B, N)``, ``log_std`` broadcast, mask ``(B, N)``."""
        super().proba_distribution(mean_actions, log_std)
        self.mask = mask
        return self

    def log_prob(self, actions: th.Tensor) -> th.Tensor:
        """Sum over the masked-in entries of the per-entry log-density, ``(B,)``."""
        assert self.mask is not None
        return (self.distribution.log_prob(actions) * self.mask).sum(dim=-1)

    def entropy(self) -> th.Tensor:
        """Sum over the masked-in entries of the per-entry entropy, ``(B,)``."""
        assert self.mask is not None
        return (self.distribution.entropy() * self.mask).sum(dim=-1)


def _action_mean_init(value: Any, action_space: spaces.Box) -> float:
    """``value`` as a float inside every entry's bounds of ``action_space``; ``ValueError``
    naming it otherwise."""
    low, high = float(np.max(action_space.low)), float(np.min(action_space.high))
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not (ok and low <= float(value) <= high):
        raise ValueError(f"action_mean_init={value!r} is invalid: must be a number in "
                         f"[{low:g}, {high:g}], the action space's bounds")
    return float(value)


def _mlp(n_in: int, hidden: list[int], act: type[nn.Module]) -> nn.Sequential:
    layers: list[nn.Module] = []
    for h in hidden:
        layers += [nn.Linear(n_in, h), act()]
        n_in = h
    return nn.Sequential(*layers)


class EntityPolicy(ActorCriticPolicy):
    """PPO/A2C policy over entity observations, the same weights for every instance size.

    Network, for a batch of ``B`` observations of ``N`` entities with ``F`` features and a
    context of ``C`` entries (the ``(B, N * F)`` ``entities`` batch is viewed as ``(B, N, F)``,
    ``N`` from the mask's length, so entity ``i``'s row is entries ``[i * F:(i + 1) * F]``):

    - encoder: one MLP (``net_arch`` hidden widths, default ``[64, 64]``) applied to every entity
      row concatenated with the context, ``h_i = phi([x_i, c])`` ``(B, N, H)``;
    - pooling over the entities of the mask (permutation invariant): the masked mean and the
      masked max of ``h`` (0 when no entity is masked in), with the context:
      ``g = [mean, max, c]`` ``(B, 2H + C)``;
    - value head: ``g -> H -> 1``;
    - action mean (masked-in entities only; 0 for the others, which the env ignores):
      ``action_layout="entity"`` (the contract's ``entity_action == "entity"``:
      action entry ``i`` belongs to entity ``i``, action shape ``(N,)``): one shared head
      ``[h_i, g] -> H -> 1`` per entity, so permuting the entities permutes the actions;
      ``"global"`` (a fixed action vector): ``g -> H -> action_dim``.
    - exploration: a Gaussian with a learned ``log_std`` of shape ``(1,)`` shared by every
      entity (``"entity"``; its log-probability and entropy count only the masked-in entities) or
      ``(action_dim,)`` (``"global"``, independent of ``N``).
    - ``action_mean_init`` (default 0): the bias of the action head's last layer, so the
      untrained policy's action mean starts at this value in every entry (its weights start at
      gain 0.01, so near-constant). A decoder whose classical rule sits at a non-zero action
      (DeadlineWelfare's ``demand_price``: ``a = lam`` is ``time-of-use`` at that ``lam``)
      lets the learner start from that rule and learn corrections to it. Must lie inside the
      action space.

    Every parameter's shape depends only on ``F``, ``C``, the widths and (``"global"``) the
    fixed action size, never on ``N``: ``PPO.load(path, custom_objects={"observation_space":
    ..., "action_space": ...})`` plays any size (``agents.make("ppo:model.zip", env)`` does
    this). ``action_layout`` (default: ``"entity"`` when the action is a ``Box`` of shape
    ``(N,)``, else ``"global"``) goes in ``policy_kwargs``, so it is saved in the zip.
    """

    def __init__(self, observation_space: spaces.Space, action_space: spaces.Space,
                 lr_schedule: Schedule, net_arch: list[int] | dict[str, list[int]] | None = None,
                 activation_fn: type[nn.Module] = nn.Tanh, ortho_init: bool = True,
                 log_std_init: float = 0.0, action_layout: str | None = None,
                 action_mean_init: float = 0.0, use_sde: bool = False,
                 **kwargs: Any) -> None:
        N, _, _ = entity_space_sizes(observation_space)
        if use_sde:
            raise ValueError("use_sde=True is invalid for EntityPolicy: it explores with a "
                             "shared Gaussian log_std")
        if not isinstance(action_space, spaces.Box) or len(action_space.shape) != 1:
            raise ValueError(f"action_space={action_space} is invalid for EntityPolicy: must "
                             "be a 1-D Box")
        if action_layout is None:
            action_layout = "entity" if action_space.shape == (N,) else "global"
        if action_layout not in ACTION_LAYOUTS:
            raise ValueError(f"action_layout={action_layout!r} is invalid: must be one of "
                             f"{', '.join(ACTION_LAYOUTS)}")
        if action_layout == "entity" and action_space.shape != (N,):
            raise ValueError(f"action_layout='entity' is invalid with action shape "
                             f"{action_space.shape} and N={N} entities: one action entry per "
                             "entity is needed")
        if isinstance(net_arch, dict):
            net_arch = list(net_arch.get("pi", [64, 64]))
        self.hidden = list(net_arch) if net_arch else [64, 64]
        if any(not isinstance(h, int) or h < 1 for h in self.hidden):
            raise ValueError(f"net_arch={net_arch!r} is invalid: must be a list of widths >= 1")
        self.action_layout = action_layout
        self.action_mean_init = _action_mean_init(action_mean_init, action_space)
        super().__init__(observation_space, action_space, lr_schedule, net_arch=self.hidden,
                         activation_fn=activation_fn, ortho_init=ortho_init,
                         log_std_init=log_std_init, **kwargs)

    def _get_constructor_parameters(self) -> dict[str, Any]:
        data = super()._get_constructor_parameters()
        data.update(net_arch=self.hidden, action_layout=self.action_layout,
                    action_mean_init=self.action_mean_init)
        return data

    def _build(self, lr_schedule: Schedule) -> None:
        """The encoder, the pooled heads, the shared ``log_std`` and the optimizer."""
        _, F, C = entity_space_sizes(self.observation_space)
        H = self.hidden[-1]
        act = self.activation_fn
        self.encoder = _mlp(F + C, self.hidden, act)
        g_dim = 2 * H + C
        self.value_net: nn.Sequential = nn.Sequential(  # type: ignore[assignment]
            nn.Linear(g_dim, H), act(), nn.Linear(H, 1))
        n_act = int(self.action_space.shape[0])  # type: ignore[index]
        self.action_net: nn.Sequential
        if self.action_layout == "entity":
            self.action_net = nn.Sequential(nn.Linear(H + g_dim, H), act(), nn.Linear(H, 1))
            self.log_std = nn.Parameter(th.full((1,), float(self.log_std_init)))
            self.action_dist = MaskedDiagGaussian(n_act)
        else:
            self.action_net = nn.Sequential(nn.Linear(g_dim, H), act(), nn.Linear(H, n_act))
            self.log_std = nn.Parameter(th.full((n_act,), float(self.log_std_init)))
            self.action_dist = DiagGaussianDistribution(n_act)
        if self.ortho_init:
            nets: tuple[nn.Module, ...] = (self.encoder, self.value_net, self.action_net)
            for net in nets:
                net.apply(partial(self.init_weights, gain=np.sqrt(2)))
            self.init_weights(self.action_net[-1], gain=0.01)
            self.init_weights(self.value_net[-1], gain=1.0)
        if self.action_mean_init != 0.0:
            last = self.action_net[-1]
            assert isinstance(last, nn.Linear)
            nn.init.constant_(last.bias, self.action_mean_init)
        self.optimizer = self.optimizer_class(  # type: ignore[call-arg]
            self.parameters(), lr=lr_schedule(1), **self.optimizer_kwargs)

    def heads(self, obs: PyTorchObs) -> tuple[th.Tensor, th.Tensor, th.Tensor]:
        """``(action mean (B, action_dim), value (B, 1), mask (B, N))`` of a batch.

        Only the masked-in rows go through the networks (the others neither enter the pooling
        nor get an action the env reads; their action mean is 0), so the cost scales with the
        entities that matter, not with ``N``.
        """
        o = preprocess_obs(obs, self.observation_space, normalize_images=False)
        assert isinstance(o, dict)
        mask, ctx = o["mask"], o["context"]
        B, N = mask.shape
        ent = o["entities"].reshape(B, N, -1)  # the row-major (N, F) rows of every observation
        on = mask > 0.5
        rows = on.reshape(-1).nonzero().squeeze(1)  # flat (b * N + i) indices, (M,)
        batch = th.div(rows, N, rounding_mode="floor")
        x = th.cat([ent.reshape(B * N, -1)[rows], ctx[batch]], dim=-1)
        h_rows = self.encoder(x)  # (M, H)
        H = h_rows.shape[-1]
        h = h_rows.new_zeros((B * N, H)).index_copy(0, rows, h_rows).view(B, N, H)
        m = on[..., None]
        mean = h.sum(dim=1) / m.sum(dim=1).clamp_min(1)
        top = th.where(m, h, th.full_like(h, -th.inf)).amax(dim=1)
        top = th.where(m.any(dim=1), top, th.zeros_like(top))
        g = th.cat([mean, top, ctx], dim=-1)
        value = self.value_net(g)
        if self.action_layout == "entity":
            # action_net[0] on [h_i, g], split: the g part once per observation
            first = self.action_net[0]
            assert isinstance(first, nn.Linear)
            w_h, w_g = first.weight[:, :H], first.weight[:, H:]
            z = h_rows @ w_h.T + (g @ w_g.T + first.bias)[batch]
            mu_rows = self.action_net[2:](self.action_net[1](z)).squeeze(-1)
            mu = mu_rows.new_zeros(B * N).index_copy(0, rows, mu_rows).view(B, N)
        else:
            mu = self.action_net(g)
        return mu, value, on.float()

    def _dist(self, mu: th.Tensor, mask: th.Tensor) -> DiagGaussianDistribution:
        dist = self.action_dist
        if isinstance(dist, MaskedDiagGaussian):
            return dist.proba_distribution_masked(mu, self.log_std, mask)
        assert isinstance(dist, DiagGaussianDistribution)
        return dist.proba_distribution(mu, self.log_std)

    def forward(self, obs: PyTorchObs, deterministic: bool = False
                ) -> tuple[th.Tensor, th.Tensor, th.Tensor]:
        """``(actions, values, log_prob)`` of a batch (SB3's rollout call)."""
        mu, value, mask = self.heads(obs)
        dist = self._dist(mu, mask)
        actions = dist.get_actions(deterministic=deterministic)
        log_prob = dist.log_prob(actions)
        return actions.reshape((-1, *self.action_space.shape)), value, log_prob  # type: ignore[misc]

    def evaluate_actions(self, obs: PyTorchObs, actions: th.Tensor
                         ) -> tuple[th.Tensor, th.Tensor, th.Tensor | None]:
        """``(values, log_prob, entropy)`` of ``actions`` (SB3's training call)."""
        mu, value, mask = self.heads(obs)
        dist = self._dist(mu, mask)
        return value, dist.log_prob(actions), dist.entropy()

    def get_distribution(self, obs: PyTorchObs) -> Distribution:
        """The action distribution of a batch."""
        mu, _, mask = self.heads(obs)
        return self._dist(mu, mask)

    def predict_values(self, obs: PyTorchObs) -> th.Tensor:
        """The values ``(B, 1)`` of a batch."""
        return self.heads(obs)[1]
