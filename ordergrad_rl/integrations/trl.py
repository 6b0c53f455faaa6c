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

import dataclasses
import inspect
import json
import os
import warnings
from collections import deque
from typing import Any, cast

import numpy as np
import torch

try:
    from transformers import Trainer, TrainerCallback
    from trl import GRPOConfig, GRPOTrainer, is_conversational
    from trl.trainer.utils import get_callable_name, get_config_model_id
except ImportError as err:  # pragma: no cover - the message names the extra
    raise ImportError(
        f'ordergrad_rl.integrations.trl needs the [trl] extra: pip install "ordergrad-rl[trl]" ({err})'
    ) from err

from ordergrad_rl.common.warning_util import user_stacklevel
from ordergrad_rl.core import ChannelObjective, Objective, lstat_value
from ordergrad_rl.integrations.advantages import (
    check_scale,
    check_weights,
    group_advantages,
    objective_ks,
    parse_group_objective,
    scored_completions,
)
from ordergrad_rl.passk import checked_ks, pass_at_k_curve

#: The values of TRL's ``GRPOConfig.scale_rewards`` (bools are mapped to ``"group"`` and ``"none"`` by the config).
TRL_SCALES = ("group", "batch", "none")
#: TRL's ``GRPOConfig.multi_objective_aggregation`` that sums the weighted reward functions before normalizing, the
#: sum a plain objective ranks.
SUM_THEN_NORMALIZE = "sum_then_normalize"
#: The file of :class:`OrderGradGRPOTrainer`'s own arguments (``objective``, ``scale``: no ``GRPOConfig`` fields), which
#: every checkpoint and ``save_model`` folder holds beside TRL's ``training_args.bin``.
ORDERGRAD_ARGS_NAME = "ordergrad_args.json"


class OrderGradGRPOTrainer(GRPOTrainer):
    """TRL's ``GRPOTrainer`` whose advantages are OrderGrad weights of an order-statistic objective of each group.

    :param objective: an objective spec of the core (``"top2@4"``, ``"max@4"``, ``"cvar0.25@4"``, ``"mean"`` =
        GRPO's baseline), default ``k = num_generations // 2``; or per reward function, in the agents' channel
        syntax with the reward functions' names: ``"correct=top2@4 + 0.4*length=bot2@4"`` (its weights replace TRL's
        ``reward_weights``, which it refuses). ``k < num_generations`` is checked at construction, before
        GRPOTrainer's ``__init__`` (which injects a ``peft_config``'s LoRA layers into the model passed) and any
        generation.
    :param scale: ``"group"``, ``"batch"``, ``"none"`` (default: ``args.scale_rewards``, TRL's option) or
        ``"channel"`` (each reward function's advantages divided by their group std before the weights, the
        paper's normalization for the correctness + length objective; for a channel objective, or a single reward
        function).
    :param args, kwargs: those of ``GRPOTrainer``.
    """

    def __init__(self, *args: Any, objective: Any = "top2@4", scale: str | None = None, **kwargs: Any) -> None:
        # GRPOTrainer's __init__ injects a peft_config's LoRA layers into the model passed, in place: what the
        # arguments refuse is refused before it, where they tell (the reward functions' names it gives after).
        given = inspect.signature(GRPOTrainer.__init__).bind(self, *args, **kwargs).arguments
        config = given.get("args")
        _checked_arguments(
            objective,
            scale,
            _config_value(config, "num_generations"),
            _config_value(config, "multi_objective_aggregation"),
            _config_value(config, "scale_rewards"),
            _config_value(config, "reward_weights"),
            _reward_func_names(given.get("reward_funcs"), given.get("environment_factory")),
        )
        super().__init__(*args, **kwargs)
        # TRL types num_generations (and num_generations_eval) int | None; GRPOTrainer has made both ints by now.
        self.ordergrad_objective, self.ordergrad_scale = _checked_arguments(
            objective,
            scale,
            self.num_generations,  # type: ignore[arg-type]
            getattr(self, "multi_objective_aggregation", SUM_THEN_NORMALIZE),  # TRL >= 1.x
            self.scale_rewards,
            self.reward_weights.tolist(),
            self.reward_func_names,
        )
        # Evaluation measures the objective training optimizes, at its k. Groups of num_generations_eval <= k
        # (TRL allows 1) rank nothing: their advantages, which only the eval loss reads, are 0.
        k = max(objective_ks(self.ordergrad_objective))
        if self.num_generations_eval <= k:  # type: ignore[operator]
            warnings.warn(
                f"num_generations_eval={self.num_generations_eval} holds no leave-one-out advantage of objective "
                f"{str(self.ordergrad_objective)!r} (k={k}): evaluation's advantages are 0, and so is its loss",
                stacklevel=user_stacklevel(),
            )
        self._ordergrad_rewards: torch.Tensor | None = None
        self._bind_callbacks()

    def ordergrad_arguments(self) -> dict[str, str]:
        """The trainer's own arguments, as saved in :data:`ORDERGRAD_ARGS_NAME`: the bound objective's spec and the
        scale."""
        return {"objective": str(self.ordergrad_objective), "scale": self.ordergrad_scale}

    def _save(self, output_dir: str | None = None, state_dict: dict | None = None) -> None:
        # Trainer's _save (save_model, every checkpoint) writes the GRPOConfig as training_args.bin; the objective and
        # scale, which are no GRPOConfig fields, go beside it.
        super()._save(output_dir, state_dict)
        if self.args.should_save:
            # TrainingArguments types output_dir str | None, and sets it ("trainer_output" for None) after init.
            directory = self.args.output_dir if output_dir is None else output_dir
            path = os.path.join(directory, ORDERGRAD_ARGS_NAME)  # type: ignore[arg-type]
            with open(path, "w") as file:
                json.dump(self.ordergrad_arguments(), file, indent=2)

    def _load_from_checkpoint(self, resume_from_checkpoint: str, model: Any = None) -> None:
        # TRL resumes with the GRPOConfig given, not the checkpoint's; the objective likewise, with a warning where it
        # differs from the one the checkpoint was trained on.
        path = os.path.join(resume_from_checkpoint, ORDERGRAD_ARGS_NAME)
        if os.path.isfile(path):
            with open(path) as file:
                saved = json.load(file)
            if saved != self.ordergrad_arguments():
                warnings.warn(
                    f"resuming {resume_from_checkpoint}, trained with {saved}, with {self.ordergrad_arguments()}: "
                    "pass the checkpoint's objective and scale to OrderGradGRPOTrainer to go on training it",
                    UserWarning,
                    stacklevel=user_stacklevel(),
                )
        super()._load_from_checkpoint(resume_from_checkpoint, model)

    def add_callback(self, callback: type[TrainerCallback] | TrainerCallback) -> None:
        """``transformers``' ``add_callback``, binding a :class:`PassAtKCallback` to this trainer as the constructor
        binds those in ``callbacks``."""
        super().add_callback(callback)
        self._bind_callbacks()

    def _bind_callbacks(self) -> None:
        """Report the curve of every unbound :class:`PassAtKCallback` through this trainer's log."""
        for callback in self.callback_handler.callbacks:
            if isinstance(callback, PassAtKCallback) and callback.trainer is None:
                callback.trainer = self

    def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):  # type: ignore[override]
        rewards = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
        self._ordergrad_rewards = rewards  # [B_all_processes, F], gathered
        return rewards

    def _generate_and_score_completions(self, inputs):  # type: ignore[override]
        output = super()._generate_and_score_completions(inputs)
        # TRL's attributes are typed loosely; all three are set by now (the model at __init__, the rewards by
        # _calculate_rewards just above, num_generations_eval as `args.num_generations_eval or num_generations`).
        assert self.model is not None and self._ordergrad_rewards is not None
        mode = "train" if self.model.training else "eval"
        group_size = self.num_generations if mode == "train" else self.num_generations_eval
        assert group_size is not None
        objective = self.ordergrad_objective
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
        # TRL's completions table (log_completions: the printed sample, completions_<step>.parquet, wandb/trackio)
        # has just received its own advantages of every process's completions: it shows OrderGrad's instead.
        # TRL's deque(maxlen=generation_batch_size) (a list in some releases), typed there as a Collection.
        logged = cast("deque[float]", self._logs["advantages"])
        for _ in range(min(len(logged), len(advantages))):
            logged.pop()
        logged.extend(advantages.tolist())
        return output

    def _log_risk(
        self, mode: str, objective: Any, rewards: np.ndarray, advantages: np.ndarray, group_size: int
    ) -> None:
        metrics = self._metrics[mode]
        scored = scored_completions(rewards, group_size)  # unscorable completions are left out
        grouped = np.nan_to_num(rewards).reshape(-1, group_size, rewards.shape[1])
        if isinstance(objective, ChannelObjective):
            for c in objective.channels:  # each on the completions its reward function scored
                i = self.reward_func_names.index(c.name)
                value = _mean_group_value(grouped[..., i], ~np.isnan(rewards[:, i]).reshape(scored.shape), c.objective)
                if value is not None:
                    metrics[f"risk/{c.name}/objective"].append(value)
        else:
            value = _mean_group_value(grouped @ self.reward_weights.numpy().astype(np.float64), scored, objective)
            if value is not None:
                metrics["risk/objective"].append(value)
        metrics["risk/adv_abs_mean"].append(float(np.abs(advantages).mean()))
        metrics["risk/frac_zero_adv"].append(float(np.mean(np.isclose(advantages, 0.0))))


def _config_value(config: Any, name: str) -> Any:
    """``config``'s ``name``; without a config (``args=None``), the default ``GRPOConfig``'s, which GRPOTrainer
    builds."""
    if config is not None:
        return getattr(config, name, None)
    return next((field.default for field in dataclasses.fields(GRPOConfig) if field.name == name), None)


def _reward_func_names(reward_funcs: Any, environment_factory: Any) -> list[str] | None:
    """The names GRPOTrainer gives ``reward_funcs`` (its ``reward_func_names``) where its arguments tell them: ``None``
    with a reward model given by its id (GRPOTrainer loads it) or an ``environment_factory`` (its envs may add a
    reward)."""
    funcs = [] if reward_funcs is None else reward_funcs if isinstance(reward_funcs, list) else [reward_funcs]
    if environment_factory is not None or any(isinstance(func, str) for func in funcs):
        return None
    names = []
    for func in funcs:  # as GRPOTrainer names them
        is_model = isinstance(func, torch.nn.Module)
        names.append(get_config_model_id(func.config).split("/")[-1] if is_model else get_callable_name(func))
    return names


def _checked_arguments(
    objective: Any,
    scale: str | None,
    num_generations: int,
    aggregation: str | None,
    scale_rewards: str,
    reward_weights: list[float] | None,
    names: list[str] | None,
) -> tuple[Objective | ChannelObjective, str]:
    """:class:`OrderGradGRPOTrainer`'s ``objective`` (bound) and ``scale`` under GRPOTrainer's settings.

    :param aggregation: ``multi_objective_aggregation`` (``None``: a TRL without it, which sums).
    :param names: the reward functions' names; ``None``: not known yet, a channel objective's names and the weights
        are not checked.
    :raises ValueError: an objective, scale or setting that OrderGrad's advantages cannot take.
    """
    if aggregation not in (None, SUM_THEN_NORMALIZE):
        raise ValueError(
            f"multi_objective_aggregation={aggregation!r}: a plain objective ranks the weighted sum of the reward "
            "functions (TRL's 'sum_then_normalize'); to rank and normalize each reward function on its own, "
            "give a channel objective ('correct=top2@4 + 0.4*length=bot2@4') with scale='channel'"
        )
    if scale_rewards not in TRL_SCALES:  # TRL computes its own advantages first, and refuses it there
        raise ValueError(
            f"scale_rewards={scale_rewards!r}: GRPOConfig's scale_rewards takes {TRL_SCALES} (GRPOTrainer "
            "raises at the first generation otherwise); OrderGrad's other scales ('channel') are "
            "OrderGradGRPOTrainer's scale argument"
        )
    parsed = parse_group_objective(objective, num_generations, names)
    scale = scale_rewards if scale is None else scale
    check_scale(parsed, scale, () if names is None else names)
    if names is not None:
        check_weights(parsed, reward_weights, names, "reward_weights")
    return parsed, scale


def _mean_group_value(values: np.ndarray, scored: np.ndarray, objective: Any) -> float | None:
    """The objective's value of each group's scored ``[n_groups, G]`` values, averaged over the groups with at least
    ``k`` of them (``None`` if none has: an evaluation group smaller than ``k``)."""
    if scored.all():
        return float(np.mean(lstat_value(values, objective))) if values.shape[1] >= objective.k else None
    rows = zip(values, scored, strict=True)
    per_group = [lstat_value(row[keep], objective) for row, keep in rows if keep.sum() >= objective.k]
    return float(np.mean(per_group)) if per_group else None


class PassAtKCallback(TrainerCallback):
    """pass@k of a TRL (or any ``transformers``) run on held-out prompts: every ``eval_steps`` optimizer steps and at
    the end of training, ``n_samples`` sampled completions per prompt, scored by ``is_correct``, give the unbiased
    pass@k of :func:`ordergrad_rl.passk.pass_at_k_curve` (the paper's estimator), logged as ``eval_pass@k/k=<k>``
    through ``trainer``'s log, to its history and to every ``report_to`` backend (TensorBoard, wandb, ...).

    :class:`OrderGradGRPOTrainer` binds the callbacks it is given to itself (in ``callbacks`` or by ``add_callback``).
    For another trainer, pass it, as for
    TRL's ``LogCompletionsCallback``: ``trainer.add_callback(PassAtKCallback(prompts, is_correct, trainer=trainer))``;
    without a trainer the curve goes to ``state.log_history`` (and :attr:`history`) only.

    :param prompts: the held-out prompts: text, or conversations (lists of ``{"role": ..., "content": ...}``
        messages, as in a conversational dataset), which the tokenizer's chat template renders with the generation
        prompt and the run's ``chat_template_kwargs``, as ``GRPOTrainer`` renders them (a tokenizer without one is
        refused when training begins).
    :param is_correct: ``(prompt, completion) -> bool``, with the prompt as given and the completion's text.
    :param n_samples: completions per prompt (``n`` of the estimator).
    :param ks: the ``k`` of the curve, integers in ``[1, n_samples]`` (kept sorted); default ``1, 2, 4, ... <=
        n_samples``.
    :param eval_steps: evaluate every ``eval_steps`` optimizer steps (``None``: only at the end).
    :param max_new_tokens: completion length limit; ``None``: the run's ``GRPOConfig.max_completion_length``, the
        length training samples (for another trainer, or :meth:`evaluate` without ``args``, ``GRPOConfig``'s
        default).
    :param temperature: sampling temperature (``> 0``). The completions are drawn from the model's whole distribution
        at this temperature, as ``GRPOTrainer`` samples by default (``top_k=0``, ``top_p=1``, no repetition
        penalty), whatever the model's ``generation_config`` sets (``generate`` would fill an unset ``top_k`` with
        50, and a pretrained model's config may truncate further).
    :param generation_kwargs: other ``generate`` arguments, over those (``{"top_p": 0.95}`` to evaluate with the
        ``top_p`` a run trains with, as ``GRPOConfig.generation_kwargs`` does for TRL's sampling).
    :param trainer: the ``transformers.Trainer`` (TRL's trainers included) whose log reports the curve.
    """

    def __init__(
        self,
        prompts: list[str] | list[list[dict[str, Any]]],
        is_correct: Any,
        n_samples: int = 16,
        ks: Any = None,
        eval_steps: int | None = None,
        max_new_tokens: int | None = None,
        temperature: float = 1.0,
        trainer: Trainer | None = None,
        generation_kwargs: dict[str, Any] | None = None,
    ) -> None:
        # Checked here: generate refuses them (a temperature of 0, say) only at the first evaluation, mid-training
        if not prompts:
            raise ValueError("PassAtKCallback needs at least one prompt")
        for prompt in prompts:
            conversation = isinstance(prompt, list) and bool(prompt) and is_conversational({"prompt": prompt})
            if not isinstance(prompt, str) and not conversation:  # TRL's test of a conversational prompt
                raise ValueError(
                    f"prompts must be text or conversations (lists of {{'role': ..., 'content': ...}} messages, a "
                    f"conversational dataset's prompts), got {prompt!r}"
                )
        sizes = {"n_samples": n_samples}
        if eval_steps is not None:  # None: only at the end of training
            sizes["eval_steps"] = eval_steps
        if max_new_tokens is not None:  # None: the run's max_completion_length
            sizes["max_new_tokens"] = max_new_tokens
        for name, value in sizes.items():
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        if not np.isfinite(temperature) or temperature <= 0:
            raise ValueError(f"temperature must be a finite number > 0, got {temperature!r}")
        self.prompts = list(prompts)
        self.is_correct = is_correct
        self.n_samples = n_samples
        self.ks = checked_ks(ks, n_samples)
        self.eval_steps = eval_steps
        self.max_new_tokens = max_new_tokens
        own = {"do_sample", "temperature", "max_new_tokens", "num_return_sequences", "pad_token_id"}
        if set(generation_kwargs or ()) & own:
            raise ValueError(
                f"generation_kwargs {sorted(set(generation_kwargs or ()) & own)} are PassAtKCallback's own: give "
                "temperature, max_new_tokens or n_samples instead"
            )
        self.temperature = temperature
        # GRPOTrainer's sampling of the policy (GRPOConfig's defaults), not generate's: pass@k is the policy's.
        self.generation_kwargs = {"top_k": 0, "top_p": 1.0, "repetition_penalty": 1.0, **(generation_kwargs or {})}
        self.trainer = trainer
        self.history: list[tuple[int, dict[int, float]]] = []

    @torch.no_grad()
    def evaluate(self, model: Any, tokenizer: Any, args: Any = None) -> dict[int, float]:
        """The pass@k curve of ``model`` now: ``{k: mean over prompts of pass@k}``.

        :param args: the run's ``GRPOConfig`` (during training, the trainer's): conversational prompts are rendered
            with its ``chat_template_kwargs``, as ``GRPOTrainer`` renders its own, and completions are as long as its
            ``max_completion_length`` unless ``max_new_tokens`` was given; ``None``: ``GRPOConfig``'s defaults.
        """
        chat_template_kwargs = getattr(args, "chat_template_kwargs", None) or {}  # another Trainer's args have none
        max_new_tokens = self.max_new_tokens or getattr(args, "max_completion_length", None)
        max_new_tokens = max_new_tokens or _config_value(None, "max_completion_length")
        was_training = model.training
        model.eval()
        correct = []
        try:  # a user's is_correct that raises must not leave the training model in eval mode (dropout off)
            for prompt in self.prompts:
                if isinstance(prompt, str):
                    encoded = tokenizer(prompt, return_tensors="pt")
                else:  # rendered as GRPOTrainer renders a conversational prompt
                    encoded = tokenizer.apply_chat_template(
                        prompt,
                        add_generation_prompt=True,
                        tokenize=True,
                        return_dict=True,
                        return_tensors="pt",
                        **chat_template_kwargs,
                    )
                encoded = encoded.to(model.device)
                out = model.generate(
                    **encoded,
                    do_sample=True,
                    temperature=self.temperature,
                    max_new_tokens=max_new_tokens,
                    num_return_sequences=self.n_samples,
                    pad_token_id=tokenizer.pad_token_id,
                    **self.generation_kwargs,
                )
                completions = tokenizer.batch_decode(out[:, encoded["input_ids"].shape[1] :], skip_special_tokens=True)
                correct.append(sum(bool(self.is_correct(prompt, c)) for c in completions))
        finally:
            model.train(was_training)
        return pass_at_k_curve(np.asarray(correct), self.n_samples, self.ks)

    def _log(self, args: Any, state: Any, model: Any, tokenizer: Any) -> None:
        if self.history and self.history[-1][0] == state.global_step:
            return
        curve = self.evaluate(model, tokenizer, args)
        self.history.append((state.global_step, curve))
        logs = {f"eval_pass@k/k={k}": v for k, v in curve.items()}
        if self.trainer is None:
            state.log_history.append({**logs, "step": state.global_step})
        else:
            # transformers' own log, not the trainer's override: TRL's would flush (and average) its training metrics
            # here, between its logging steps. On every process, as the reporting callbacks write on process 0 only.
            # Its on_log clears control.should_log, which on_step_end has just set for this step's training log:
            # kept, or a logging step that is also an evaluation step would log no loss, grad_norm or TRL metrics.
            should_log = self.trainer.control.should_log
            Trainer.log(self.trainer, logs)
            self.trainer.control.should_log = should_log

    def on_train_begin(self, args, state, control, processing_class=None, **kwargs):  # type: ignore[override]
        # Checked here: the tokenizer would fail only at the first evaluation, mid-training or after it.
        if processing_class is None:
            raise ValueError(
                "PassAtKCallback samples with the trainer's tokenizer, and the trainer has no processing_class"
            )
        conversations = any(not isinstance(prompt, str) for prompt in self.prompts)
        if conversations and getattr(processing_class, "chat_template", None) is None:
            raise ValueError(
                f"PassAtKCallback's prompts are conversations, and the trainer's processing_class "
                f"{type(processing_class).__name__} has no chat template to render them: set its chat_template "
                "(as GRPOTrainer needs for a conversational dataset) or give text prompts"
            )

    def on_step_end(self, args, state, control, model=None, processing_class=None, **kwargs):  # type: ignore[override]
        # The last step is evaluated here, before on_train_end, where the reporting callbacks close their writers.
        last = state.global_step == state.max_steps
        if last or (self.eval_steps is not None and state.global_step % self.eval_steps == 0):
            self._log(args, state, model, processing_class)

    def on_train_end(self, args, state, control, model=None, processing_class=None, **kwargs):  # type: ignore[override]
        self._log(args, state, model, processing_class)
