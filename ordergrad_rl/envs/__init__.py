"""Gymnasium environments of ordergrad-rl. Importing ``ordergrad_rl`` registers them."""


def register_envs() -> None:
    """Register the ordergrad-rl environments with Gymnasium (idempotent)."""
