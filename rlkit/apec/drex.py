"""D-REX baseline: behaviour cloning + epsilon-random actions; less noise is preferred.

The comparison APEC is measured against: its pairs only perturb one policy, so they cover fewer
behaviours. Datasets follow APEC's conventions (shuffled sides, provenance in the meta columns).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from gymnasium import spaces
from stable_baselines3.common.vec_env import VecEnv
from torch import nn

from rlkit.apec.pair_config import NOISE_GRID as NOISE_GRID  # rlkit.apec exports it from here
from rlkit.apec.pair_config import DrexConfig
from rlkit.apec.pairs import shuffled_pairs
from rlkit.data.rollout import collect_trajectories, random_actions
from rlkit.data.store import TrajectoryStore
from rlkit.data.trajectory import Trajectory
from rlkit.devices import resolve_device
from rlkit.errors import InvalidDataError
from rlkit.feedback.dataset import PreferenceDataset
from rlkit.feedback.scale import BINARY
from rlkit.reward.augment import random_shift

DEFAULT_DREX = DrexConfig()


def is_pixel_observation(shape: Sequence[int], dtype: np.dtype[Any]) -> bool:
    """Channel-first uint8 frame stacks ``(C, H, W)`` are pixels; anything else is a vector.

    Args:
        shape: one observation's shape.
        dtype: the observations' dtype.

    Returns:
        True for 3-dimensional uint8 observations.
    """
    return len(shape) == 3 and np.dtype(dtype) == np.uint8


def pixel_encoder(in_channels: int, height: int, width: int, channels: Sequence[int],
                  feature_dim: int) -> tuple[nn.Module, int]:
    """DrQ-v2's encoder shape at any depth: 3x3 convolutions (the first with stride 2) with ReLU,
    flattened, then a trunk to ``feature_dim`` with LayerNorm and tanh.

    Args:
        in_channels: the frame stack's channels.
        height: the frames' height.
        width: the frames' width.
        channels: each convolution's output channels.
        feature_dim: the trunk's width.

    Returns:
        The encoder (images scaled to [0, 1] in, features out) and its output width.
    """
    layers: list[nn.Module] = []
    sizes = [in_channels, *channels]
    for k, (a, b) in enumerate(zip(sizes[:-1], sizes[1:], strict=True)):
        layers += [nn.Conv2d(a, b, 3, stride=2 if k == 0 else 1), nn.ReLU()]
    convs = nn.Sequential(*layers, nn.Flatten())
    with torch.no_grad():
        flat = convs(torch.zeros(1, in_channels, height, width)).shape[1]
    trunk = nn.Sequential(nn.Linear(flat, feature_dim), nn.LayerNorm(feature_dim), nn.Tanh())
    return nn.Sequential(convs, trunk), feature_dim


class BCPolicy(nn.Module):
    """A deterministic policy from observations to Box actions, clipped to the bounds: an MLP on
    flat vectors, or ``pixel_encoder`` then the MLP on uint8 frame stacks (divided by 255 here).

    Args:
        obs_shape: one observation's shape (flattened for the MLP); ``C x H x W`` with
            ``pixels``.
        action_space: the env's Box action space; ``act`` clips to its bounds.
        hidden: the widths of the MLP's hidden ReLU layers.
        pixels: observations are uint8 frame stacks, encoded by ``pixel_encoder`` first.
        conv_channels: the widths of the pixel encoder's 3x3 convolutions.
        feature_dim: the pixel encoder's output features.
    """

    def __init__(self, obs_shape: Sequence[int], action_space: spaces.Box, hidden: Sequence[int],
                 pixels: bool = False, conv_channels: Sequence[int] = (32, 32), feature_dim: int = 50,
                 ) -> None:
        super().__init__()
        self.encoder: nn.Module | None = None
        width = int(np.prod(obs_shape))
        if pixels:
            c, h, w = obs_shape
            self.encoder, width = pixel_encoder(c, h, w, conv_channels, feature_dim)
        sizes = [width, *hidden]
        layers: list[nn.Module] = []
        for a, b in zip(sizes[:-1], sizes[1:], strict=True):
            layers += [nn.Linear(a, b), nn.ReLU()]
        layers.append(nn.Linear(sizes[-1], int(np.prod(action_space.shape))))
        self.net = nn.Sequential(*layers)
        self.action_space = action_space

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        if self.encoder is not None:
            return self.net(self.encoder(obs.float() / 255.0))
        return self.net(obs.flatten(1).float())

    @torch.no_grad()
    def act(self, obs: np.ndarray) -> np.ndarray:
        device = next(self.parameters()).device
        array = np.asarray(obs)
        if self.encoder is None:
            array = array.astype(np.float32, copy=False)
        raw = self(torch.as_tensor(array, device=device)).cpu().numpy()
        raw = raw.reshape(len(raw), *self.action_space.shape)
        return np.clip(raw, self.action_space.low, self.action_space.high).astype(
            self.action_space.dtype
        )


def train_bc(demos: Sequence[Trajectory], action_space: spaces.Space,
             config: DrexConfig = DEFAULT_DREX) -> BCPolicy:
    """Fit a BCPolicy to the demos' (state, action) pairs with MSE on ``config.device`` (the demos
    copied there once; initial weights and minibatch order from the CPU RNG, the same on any
    device); leaves torch's global RNG alone.

    Args:
        demos: the demonstrations; each step's observation (flattened) and action is one sample.
        action_space: the env's action space; a Box (the policy's outputs are clipped to it).
        config: ``hidden``, ``bc_epochs``, ``bc_lr``, ``bc_batch_size``, ``seed`` and ``device``.

    Returns:
        The fitted policy on ``config.device``, in eval mode.

    Raises:
        ConfigError: when ``config.device`` is CUDA that torch does not see.
        InvalidDataError: when ``demos`` is empty, ``action_space`` is not a Box, or a demo's
            action rows are shaped unlike it.
    """
    device = resolve_device(config.device)
    if not demos:
        raise InvalidDataError("demos is empty: behaviour cloning needs demonstrations")
    if not isinstance(action_space, spaces.Box):
        raise InvalidDataError(
            f"action_space: D-REX's BC supports Box actions, not {type(action_space).__name__}"
        )
    for k, demo in enumerate(demos):
        if demo.acts.shape[1:] != action_space.shape:
            raise InvalidDataError(f"demos[{k}].acts rows have shape {demo.acts.shape[1:]}, "
                                   f"the action_space has {action_space.shape}")
    pixels = is_pixel_observation(demos[0].obs.shape[1:], demos[0].obs.dtype)
    states = np.concatenate([d.obs[:-1] for d in demos])
    obs = torch.as_tensor(states if pixels else states.reshape(len(states), -1).astype(np.float32),
                          device=device)
    acts = torch.as_tensor(np.concatenate([d.acts.reshape(len(d), -1) for d in demos]),
                           dtype=torch.float32, device=device)
    shifts = torch.Generator().manual_seed(config.seed)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(config.seed)
        policy = BCPolicy(states.shape[1:], action_space, config.hidden, pixels, config.conv_channels,
                          config.feature_dim).to(device)
        optimizer = torch.optim.Adam(policy.parameters(), lr=config.bc_lr)
        for _ in range(config.bc_epochs):
            for rows in torch.randperm(len(obs)).to(device).split(config.bc_batch_size):
                batch = obs[rows]
                if pixels and config.augment_pad:
                    batch = random_shift(batch, config.augment_pad, shifts)
                loss = nn.functional.mse_loss(policy(batch), acts[rows])
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
    return policy.train(False)


def noisy_rollouts(policy: BCPolicy, venv: VecEnv, rng: np.random.Generator,
                   config: DrexConfig = DEFAULT_DREX) -> tuple[TrajectoryStore, np.ndarray]:
    """Episodes at each noise level (each step random with probability eps); returns eps per trajectory.

    Args:
        policy: the behaviour-cloning policy (``train_bc``).
        venv: the env to roll out in; reseeded with ``config.seed + k`` for the k-th noise level.
        rng: draws which steps are random, and their uniformly random actions.
        config: ``noise_levels``, ``rollouts_per_level`` (finished episodes per level) and
            ``seed``.

    Returns:
        The store of every episode, and each trajectory's eps (float64, one per trajectory).
    """
    store, noise = TrajectoryStore(frame_stack=config.frame_stack), []
    for k, eps in enumerate(config.noise_levels):
        def act(obs: np.ndarray, eps: float = eps) -> np.ndarray:
            actions = policy.act(obs)
            random = rng.random(len(actions)) < eps
            if random.any():
                actions[random] = random_actions(venv.action_space, int(random.sum()), rng)
            return actions

        trajectories = collect_trajectories(
            venv, act, rng, n_episodes=config.rollouts_per_level, seed=config.seed + k
        )[: config.rollouts_per_level]
        store.extend(trajectories)
        noise += [eps] * len(trajectories)
    return store, np.asarray(noise, dtype=np.float64)


def drex_pairs(store: TrajectoryStore, noise: np.ndarray, rng: np.random.Generator,
               config: DrexConfig = DEFAULT_DREX) -> PreferenceDataset:
    """Uniform trajectory pairs whose noise differs by >= min_gap; the lower-noise one is preferred.

    Args:
        store: the noisy rollouts.
        noise: each trajectory's eps, shape ``(len(store),)`` (as ``noisy_rollouts`` returns it).
        rng: draws the pairs, the segment windows and the sides.
        config: ``n_pairs``, ``min_gap``, ``segment_length`` (None: whole trajectories) and
            ``max_draws``.

    Returns:
        ``n_pairs`` pairs with binary labels (sides shuffled), source ``"drex"``, with
        ``noise_*`` and ``return_*`` meta columns for diagnostics.

    Raises:
        InvalidDataError: when ``noise`` has the wrong shape, no usable trajectories span
            ``min_gap`` of noise, or ``max_draws * n_pairs`` draws find fewer than ``n_pairs``
            pairs.
    """
    noise = np.asarray(noise, dtype=np.float64)
    if noise.shape != (len(store),):
        raise InvalidDataError(f"noise has shape {noise.shape}, expected ({len(store)},)")
    usable = np.arange(len(store))
    if config.segment_length is not None:
        usable = usable[store.lengths >= config.segment_length]
    tolerance = 1e-9  # the grid's 0.05 steps are not exact in binary
    if len(usable) == 0 or np.ptp(noise[usable]) < config.min_gap - tolerance:
        raise InvalidDataError(
            f"min_gap {config.min_gap} is larger than the usable noise range "
            f"({np.ptp(noise[usable]) if len(usable) else 0:.3g})"
        )
    better_parts, worse_parts = [], []
    n_found, n_drawn, budget = 0, 0, config.max_draws * config.n_pairs
    while n_found < config.n_pairs and n_drawn < budget:
        batch = min(max(4 * (config.n_pairs - n_found), 64), budget - n_drawn)
        a, b = usable[rng.integers(0, len(usable), (2, batch))]
        keep = np.abs(noise[a] - noise[b]) >= config.min_gap - tolerance
        a, b = a[keep], b[keep]
        a_better = noise[a] < noise[b]
        better_parts.append(np.where(a_better, a, b))
        worse_parts.append(np.where(a_better, b, a))
        n_found += len(a)
        n_drawn += batch
    if n_found < config.n_pairs:
        raise InvalidDataError(
            f"n_pairs: found only {n_found} of {config.n_pairs} pairs in {n_drawn} draws"
        )
    better = np.concatenate(better_parts)[: config.n_pairs]
    worse = np.concatenate(worse_parts)[: config.n_pairs]
    pairs, labels, _ = shuffled_pairs(
        store, better, worse, np.ones(len(better)), config.segment_length, rng
    )
    left_ids, right_ids = pairs.left[:, 0], pairs.right[:, 0]
    left_batch, right_batch = pairs.gather()
    dataset = PreferenceDataset(store, BINARY)
    dataset.append(pairs, labels, source="drex", meta={
        "noise_left": noise[left_ids], "noise_right": noise[right_ids],
        "return_left": left_batch.returns(), "return_right": right_batch.returns(),
    })
    return dataset


def drex(demos: Sequence[Trajectory], venv: VecEnv, rng: np.random.Generator,
         config: DrexConfig = DEFAULT_DREX) -> PreferenceDataset:
    """The whole baseline: BC on the demos, noisy rollouts over the grid, labelled pairs.

    Args:
        demos: the demonstrations the BC policy is fitted to.
        venv: the env of the noisy rollouts (its action space must be a Box).
        rng: draws the noise, the pairs and the sides.
        config: the D-REX settings (see ``train_bc``, ``noisy_rollouts`` and ``drex_pairs``).

    Returns:
        The labelled pairs, as ``drex_pairs`` returns them.

    Raises:
        ConfigError: when ``config.device`` is CUDA that torch does not see.
        InvalidDataError: as ``train_bc`` and ``drex_pairs`` raise it.
    """
    policy = train_bc(demos, venv.action_space, config)
    store, noise = noisy_rollouts(policy, venv, rng, config)
    return drex_pairs(store, noise, rng, config)
