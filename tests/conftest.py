"""Shared test settings: deterministic hypothesis runs, float32 tolerances."""

import os

import torch
from hypothesis import HealthCheck, settings

settings.register_profile(
    "course",
    derandomize=True,          # the same examples on every run, so CI cannot flake
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "course"))

torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
