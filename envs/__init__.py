"""Environments shipped with rlkit."""

from envs.dmc import register_dmc_envs
from envs.overcooked import register_envs
from envs.pixels import register_pixel_envs

register_envs()  # rlkit/Overcooked-<layout>-<recipe>-v0 ids in gymnasium's registry
register_pixel_envs()  # rlkit/PixelPendulum-v0, rlkit/PixelPointMass-v0
register_dmc_envs()  # rlkit/dmc-<domain>-<task>-pixels-v0 (dm_control is imported on make only)
