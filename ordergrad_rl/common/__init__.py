"""Helpers shared by every layer of ordergrad-rl; this package imports nothing else from ordergrad_rl."""
