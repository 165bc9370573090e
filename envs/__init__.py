"""Environments shipped with rlkit."""

from envs.overcooked import register_envs

register_envs()  # rlkit/Overcooked-<layout>-<recipe>-v0 ids in gymnasium's registry
