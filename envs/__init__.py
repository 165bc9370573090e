"""Environments shipped with rlkit."""
