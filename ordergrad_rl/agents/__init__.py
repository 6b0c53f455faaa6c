"""Stable-Baselines3-compatible OrderGrad agents."""
