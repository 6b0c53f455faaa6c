"""The reasoning experiments' pieces beside the ``TargetSum-v0`` env: the base model and pass@k sampling.

Imports torch and SB3 (it is never imported by ``import ordergrad_rl``).
"""

from ordergrad_rl.reasoning.base_model import (
    BaseModel,
    BaseModelConfig,
    build_base_model,
    default_cache_dir,
    load_base_policy,
)
from ordergrad_rl.reasoning.demonstrations import StudentConfig, demonstrations
from ordergrad_rl.reasoning.sampling import evaluate_pass_at_k, sample_answers
from ordergrad_rl.reasoning.token_gru import TokenGRUExtractor

__all__ = [
    "BaseModel",
    "BaseModelConfig",
    "StudentConfig",
    "TokenGRUExtractor",
    "build_base_model",
    "default_cache_dir",
    "demonstrations",
    "evaluate_pass_at_k",
    "load_base_policy",
    "sample_answers",
]
