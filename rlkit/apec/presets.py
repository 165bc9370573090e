"""APEC's reference preset: the settings of the agents and the AIL stage that the ``rlkit apec``
sections default to (``rlkit.apec.config``), as APEC's reference implementation runs them
(github.com/Zzl35/APEC, ``apec_mjc/``; file:line cited at each) and with the paper's budget."""

from __future__ import annotations

from typing import Any

from rlkit.ail.config import DiscriminatorConfig

REFERENCE_SAC: dict[str, Any] = {
    "learning_starts": 10_000, "batch_size": 256, "ent_coef": 0.1, "learning_rate": 1e-3,
    "train_freq": 1, "gradient_steps": 1, "policy_kwargs": {"net_arch": [256, 256]},
}
"""The reference's SAC (apec_mjc/parameter/Parameter.py:35-81, rl_alg/sac.py:428-489): 256x256,
fixed entropy coefficient 0.1, batch 256, Adam 1e-3, one update per env step (with one env),
10 episodes = 10k random-action steps first (SB3 also holds its updates back until then; the
reference starts them after 5k of those random steps). SB3's gamma 0.99 and tau 0.005 are the
reference's gamma and 1 - polyak."""

REFERENCE_DISCRIMINATOR = DiscriminatorConfig(
    loss="maxent", state_only=True, reward_on="next_obs", hidden=(512, 512), linear_first=True,
    lr=1e-4, weight_decay=1e-3, loss_scale=1000.0, reward_clip=10.0, grad_penalty=0.0, batch_size=1000,
    updates_per_round=1, encoder="compact",
)
"""APEC's AIL reward (apec_mjc/train_irl.py): a state-only max-ent IRL reward r(s) paid to the
generator as ``r(s')`` (``reward_on="next_obs"``, rl_alg/sac.py:479-480), MLP 2x512 clipped to
+-10 (Parameter.py:123-137) with no activation after its first layer (``linear_first``:
model/reward.py:59-82, ``MLPReward``), Adam 1e-4 with weight decay 1e-3 on the loss
``(E_agent[r] - E_expert[r]) * 1000`` (``loss_scale``: f_div.py:101-102), one step per round
(Parameter.py:139) of 1000-state batches.

``loss_scale`` matters through the weight decay only (Adam is invariant to the scale of the loss
gradient): 1000 with decay 1e-3 is decay 1e-6 on the unscaled loss."""

REFERENCE_AIL: dict[str, Any] = {
    "rounds": 50, "steps_per_round": 5000, "discriminator": REFERENCE_DISCRIMINATOR,
    "agent_buffer": 1000, "device": "auto", "generator": "sac", "generator_kwargs": REFERENCE_SAC,
    "checkpoint_every": 1,
}
"""APEC's AIL (apec_mjc/train_irl.py), as the fields of the ``ail`` section
(``rlkit.apec.config.ApecAILConfig``, whose default it is): a SAC generator (``REFERENCE_SAC``) on the
``REFERENCE_DISCRIMINATOR``'s reward, the discriminator's step on the last 1000 agent states
(train_irl.py:248). 50 rounds of 5 x 1000 env steps (the paper's length; the reference's default
runs on to 400, Parameter.py:94), a checkpoint each. ``device``: ``auto``; the SAC generator
(256x256, an update per env step) and the 512x512 discriminator on 1000-state batches are the
pipeline's largest networks."""

REFERENCE_POLICY_SAC: dict[str, Any] = {**REFERENCE_SAC}
"""The policy on the learned reward: the same SAC (apec_mjc/eval_reward.py:155-161, fixed alpha
0.1 as its README runs it), 10k random steps counted from the seeded buffer's size."""
