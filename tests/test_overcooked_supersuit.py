"""Parameter-shared training through SuperSuit, as the stack notes describe it."""

import numpy as np
import supersuit as ss
from stable_baselines3 import PPO

import envs.overcooked as oc


def test_supersuit_vec_env_trains_a_shared_ppo_policy():
    par = oc.parallel_env(layout="A", recipe="lettuce-tomato", n_agents=3)
    venv = ss.concat_vec_envs_v1(ss.pettingzoo_env_to_vec_env_v1(par), 2, num_cpus=0,
                                 base_class="stable_baselines3")
    assert venv.num_envs == 6  # 2 games x 3 agents, one shared policy
    assert venv.observation_space.shape == (32,)
    # no seed=: SuperSuit's ConcatVecEnv has no seed() for SB3 to call
    model = PPO("MlpPolicy", venv, n_steps=32, batch_size=64, n_epochs=1, device="cpu")
    model.learn(192)
    assert model.num_timesteps == 192
    actions, _ = model.predict(venv.reset(), deterministic=True)
    assert actions.shape == (6,) and np.all((0 <= actions) & (actions < 14))
