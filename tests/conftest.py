"""Test-wide settings: offline W&B, and one torch thread (tiny nets; no thrashing on 2 cores)."""

import os

import torch

os.environ.setdefault("WANDB_MODE", "offline")
os.environ.setdefault("WANDB_SILENT", "true")
torch.set_num_threads(1)
