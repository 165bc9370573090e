"""Environments shipped with rlkit."""

from envs.overcooked import register_envs
from envs.pixels import register_pixel_envs

register_envs()  # rlkit/Overcooked-<layout>-<recipe>-v0 ids in gymnasium's registry
register_pixel_envs()  # rlkit/PixelPendulum-v0, rlkit/PixelPointMass-v0
