"""OrderGrad objectives in TRL's ``GRPOTrainer`` (the ``[trl]`` extra): GRPO with another advantage.

    from ordergrad_rl.integrations.trl import OrderGradGRPOTrainer

    trainer = OrderGradGRPOTrainer(model, reward_funcs=[correct], args=GRPOConfig(num_generations=4, ...),
                                   train_dataset=dataset, objective="top2@4")   # GRPO is objective="mean"
    trainer.train()

TRL 1.16 computes GRPO's advantages inline in the private ``_generate_and_score_completions``, with no public hook.
The narrowest place to change them: ``_calculate_rewards`` (which returns the rewards of *every* process's
completions, gathered, so that groups split across processes are ranked whole) is wrapped to keep them, and after
``_generate_and_score_completions`` the ``"advantages"`` entry of its output (the only one the loss reads) is
replaced by OrderGrad's, computed on the whole ``[n_prompts, G]`` batch in one core call and sliced to this process
exactly as TRL slices its own (``process_index * n_local``). Everything else (generation, KL, clipping, loss
types, vLLM, logging) is TRL's.

Logged through TRL's metrics (``trainer._metrics``, written to every ``report_to`` backend): ``risk/objective`` (the
objective's mean batch value over the groups, of the weighted reward sum or per channel), ``risk/adv_abs_mean`` and
``risk/frac_zero_adv`` (completions whose advantage is 0: outside every weighted rank of their group).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

try:
    from trl import GRPOTrainer
except ImportError as err:  # pragma: no cover - the message names the extra
    raise ImportError(
        f'ordergrad_rl.integrations.trl needs the [trl] extra: pip install "ordergrad-rl[trl]" ({err})'
    ) from err

from ordergrad_rl.core import ChannelObjective, lstat_value
from ordergrad_rl.integrations.advantages import SCALES, group_advantages, parse_group_objective


class OrderGradGRPOTrainer(GRPOTrainer):
    """TRL's ``GRPOTrainer`` whose advantages are OrderGrad weights of an order-statistic objective of each group.

    :param objective: an objective spec of the core (``"top2@4"``, ``"max@4"``, ``"cvar0.25@4"``, ``"mean"`` =
        GRPO's baseline), default ``k = num_generations // 2``; or per reward function, in the agents' channel
        syntax with the reward functions' names: ``"correct=top2@4 + 0.4*length=bot2@4"``. ``k < num_generations``
        is checked at construction, before any generation.
    :param scale: ``"group"``, ``"batch"``, ``"none"`` (default: ``args.scale_rewards``, TRL's option) or
        ``"channel"`` (each reward function's advantages divided by their group std before the weights, the
        paper's normalization for the correctness + length objective).
    :param args, kwargs: those of ``GRPOTrainer``.
    """

    def __init__(self, *args: Any, objective: Any = "top2@4", scale: str | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.ordergrad_scale = self.scale_rewards if scale is None else scale
        if self.ordergrad_scale not in SCALES:
            raise ValueError(f"scale must be one of {SCALES}, got {self.ordergrad_scale!r}")
        self.ordergrad_objective = parse_group_objective(objective, self.num_generations, self.reward_func_names)
        if self.num_generations_eval != self.num_generations:
            self.ordergrad_eval_objective = parse_group_objective(
                objective, self.num_generations_eval, self.reward_func_names
            )
        else:
            self.ordergrad_eval_objective = self.ordergrad_objective
        self._ordergrad_rewards: torch.Tensor | None = None

    def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):  # type: ignore[override]
        rewards = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
        self._ordergrad_rewards = rewards  # [B_all_processes, F], gathered
        return rewards

    def _generate_and_score_completions(self, inputs):  # type: ignore[override]
        output = super()._generate_and_score_completions(inputs)
        mode = "train" if self.model.training else "eval"
        group_size = self.num_generations if mode == "train" else self.num_generations_eval
        objective = self.ordergrad_objective if mode == "train" else self.ordergrad_eval_objective
        rewards = self._ordergrad_rewards.detach().float().cpu().numpy()
        advantages = group_advantages(
            objective,
            rewards,
            group_size,
            self.reward_func_names,
            self.reward_weights.tolist(),
            self.ordergrad_scale,
        )
        local = output["advantages"].shape[0]
        rows = slice(self.accelerator.process_index * local, (self.accelerator.process_index + 1) * local)
        output["advantages"] = torch.as_tensor(
            advantages[rows], dtype=output["advantages"].dtype, device=output["advantages"].device
        )
        self._log_risk(mode, objective, rewards, advantages, group_size)
        return output

    def _log_risk(
        self, mode: str, objective: Any, rewards: np.ndarray, advantages: np.ndarray, group_size: int
    ) -> None:
        metrics = self._metrics[mode]
        grouped = np.nan_to_num(rewards).reshape(-1, group_size, rewards.shape[1])
        if isinstance(objective, ChannelObjective):
            for c in objective.channels:
                column = grouped[..., self.reward_func_names.index(c.name)]
                metrics[f"risk/{c.name}/objective"].append(float(np.mean(lstat_value(column, c.objective))))
        else:
            total = grouped @ self.reward_weights.numpy().astype(np.float64)
            metrics["risk/objective"].append(float(np.mean(lstat_value(total, objective))))
        metrics["risk/adv_abs_mean"].append(float(np.abs(advantages).mean()))
        metrics["risk/frac_zero_adv"].append(float(np.mean(np.isclose(advantages, 0.0))))
