"""OrderGrad advantages in TRL's GRPOTrainer: equal to the core's for every objective (and to TRL's own GRPO for the
mean with group scaling), a simulated multi-process split, and one real training step of a tiny causal LM and a
word-level tokenizer built in code (no download)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

from ordergrad_rl.core import Objective, lstat_advantage
from ordergrad_rl.integrations.advantages import group_advantages, parse_group_objective

#: Completions per prompt (the paper's Top-2@4 ranks subsets of 4 of a larger group; k < G).
G = 8


def _rewards(n_prompts: int = 6, functions: int = 2, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.round(rng.normal(size=(n_prompts * G, functions)), 1)  # ties included


@pytest.mark.parametrize("spec", ["top2@4", "max@4", "cvar0.25@4", "bot2@4", "median@5", "trim1@5", "gmd@7", "mean"])
def test_advantages_are_the_cores_for_every_objective(spec):
    rewards = _rewards()
    objective = parse_group_objective(spec, G, ["a", "b"])
    out = group_advantages(objective, rewards, G, ["a", "b"], [1.0, 0.5], scale="none")
    total = (rewards @ np.array([1.0, 0.5])).reshape(-1, G)
    expected = objective.k * np.stack([lstat_advantage(row, Objective.parse(spec)) for row in total])
    np.testing.assert_allclose(out, expected.reshape(-1), atol=1e-12)
    # each group is ranked on its own: permuting the groups permutes the advantages
    order = np.random.default_rng(1).permutation(total.shape[0])
    shuffled = rewards.reshape(-1, G, 2)[order].reshape(-1, 2)
    np.testing.assert_allclose(
        group_advantages(objective, shuffled, G, ["a", "b"], [1.0, 0.5], "none").reshape(-1, G),
        out.reshape(-1, G)[order],
    )


def test_mean_with_group_scaling_is_trls_grpo_advantage():
    pytest.importorskip("trl", reason="the [trl] extra is not installed")
    from trl.trainer.utils import nanstd

    rewards = _rewards(functions=1)
    out = group_advantages(parse_group_objective("mean", G, ["a"]), rewards, G, ["a"], scale="group")
    r = torch.as_tensor(rewards[:, 0]).view(-1, G)
    trl = ((r - r.mean(dim=1, keepdim=True)) / (nanstd(r, dim=1, keepdim=True) + 1e-4)).reshape(-1).numpy()
    np.testing.assert_allclose(out, trl, rtol=2e-4, atol=2e-4)  # the same up to where the +1e-4 sits
    # unscaled, the leave-one-out baseline: G/(G-1) times TRL's reward minus the group mean (the README says so)
    unscaled = group_advantages(parse_group_objective("mean", G, ["a"]), rewards, G, ["a"], scale="none")
    np.testing.assert_allclose(unscaled, G / (G - 1) * (r - r.mean(dim=1, keepdim=True)).reshape(-1).numpy())


def test_channel_objective_ranks_each_reward_function():
    rewards = _rewards()
    objective = parse_group_objective("a=top2@4 + 0.4*b=bot2@4", G, ["a", "b"])
    out = group_advantages(objective, rewards, G, ["a", "b"], scale="none")
    grouped = rewards.reshape(-1, G, 2)
    expected = 4 * lstat_advantage(grouped[..., 0], "top2@4") + 0.4 * 4 * lstat_advantage(grouped[..., 1], "bot2@4")
    np.testing.assert_allclose(out, expected.reshape(-1), atol=1e-12)
    channel = group_advantages(objective, rewards, G, ["a", "b"], scale="channel")
    assert channel.shape == (rewards.shape[0],) and np.all(np.isfinite(channel))


@pytest.mark.parametrize(
    ("spec", "group_size", "message"),
    [
        ("top2@4", 4, r"k < G = num_generations = 4"),
        ("top5", 8, "needs m <= k"),
        ("gcvar0.2", 8, "GCVaR"),
        ("a=top2@4 + 0.4*length=bot2@4", 8, r"channels \['length'\] are not reward functions"),
        ("cvar2", 8, r"in \(0, 1\]"),
    ],
)
def test_bad_objectives_fail_before_generation(spec, group_size, message):
    with pytest.raises(ValueError, match=message):
        parse_group_objective(spec, group_size, ["a"])


def test_torch_rewards_of_any_dtype_and_autograd_state_give_numpys_advantages():
    # a GRPO loop of one's own holds rewards as tensors: bfloat16 and requires_grad failed inside np.asarray
    rewards = torch.tensor(_rewards(), dtype=torch.bfloat16)  # values of one decimal, exact in float64 after rounding
    objective = parse_group_objective("top2@4", G, ["a", "b"])
    expected = group_advantages(objective, rewards.double().numpy(), G, ["a", "b"])
    np.testing.assert_array_equal(group_advantages(objective, rewards, G, ["a", "b"]), expected)
    graded = rewards.float().requires_grad_()
    np.testing.assert_array_equal(group_advantages(objective, graded, G, ["a", "b"]), expected)


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda o: group_advantages(o, _rewards(), 0, ["a", "b"]), ValueError, "integer >= 1, got 0"),
        (lambda o: group_advantages(o, _rewards(), -8, ["a", "b"]), ValueError, "integer >= 1, got -8"),
        (lambda o: group_advantages(o, _rewards(), 8.0, ["a", "b"]), ValueError, r"integer >= 1, got 8\.0"),
        (lambda o: group_advantages("top2@4", _rewards(), G, ["a", "b"]), TypeError, "parse_group_objective"),
        (lambda o: group_advantages(Objective.parse("top2"), _rewards(), G, ["a", "b"]), TypeError, "bound"),
        (lambda o: group_advantages(o, _rewards(), G, ["a", "b"], [1.0]), ValueError, "1 weights for 2 reward"),
        (  # a channel objective ignored the plain sum's weights: [1, 0] trained on both functions
            lambda o: group_advantages(
                parse_group_objective("a=top2@4 + b=bot2@4", G, ["a", "b"]), _rewards(), G, ["a", "b"], [1.0, 0.0]
            ),
            ValueError,
            r"weights=\[1.0, 0.0\] weigh the plain objective's sum",
        ),
        (lambda o: parse_group_objective("mean", 1, ["a"]), ValueError, "integer >= 2, got 1"),
        (  # a plain objective ranks the weighted sum: scale="channel" scaled it as "group"
            lambda o: group_advantages(o, _rewards(), G, ["a", "b"], scale="channel"),
            ValueError,
            r"scale='channel' divides each reward function's advantages.*'top2@4' ranks the weighted sum",
        ),
        (lambda o: group_advantages(o, _rewards(), G, ["a", "b"], scale="Group"), ValueError, "scale must be one of"),
    ],
    ids=[
        "group-0",
        "group-negative",
        "group-float",
        "spec-string",
        "unbound",
        "weights",
        "channel-weights",
        "parse-1",
        "channel-scale-of-a-sum",
        "scale",
    ],
)
def test_bad_arguments_are_named(call, error, message):
    # they were a ZeroDivisionError, all-zero advantages (a negative group size), an AttributeError on str.k, a
    # matmul shape error, or "k must be >= 1, got k=0" for a group of one
    with pytest.raises(error, match=message):
        call(parse_group_objective("top2@4", G, ["a", "b"]))


def test_a_split_across_processes_is_ranked_whole():
    """TRL gathers every process's rewards before scoring; each process keeps its slice of the whole-batch
    advantages. Two simulated processes of 12 completions each: the second group (completions 8..15) straddles them."""
    rewards = _rewards(n_prompts=3, functions=1)  # 24 completions: process 0 holds 0..11, process 1 holds 12..23
    objective = parse_group_objective("top2@4", G, ["a"])
    whole = group_advantages(objective, rewards, G, ["a"], scale="none")
    halves = [whole[rank * 12 : (rank + 1) * 12] for rank in range(2)]  # what OrderGradGRPOTrainer slices
    np.testing.assert_allclose(np.concatenate(halves), whole)
    np.testing.assert_allclose(whole[8:16], 4 * lstat_advantage(rewards[8:16, 0], "top2@4"), atol=1e-12)
    # ranking each process's half of that group alone would give other advantages
    assert not np.allclose(whole[8:12], 4 * lstat_advantage(rewards[8:12, 0], "top2@3"))


# ---------------------------------------------------------------------------------------------------- one real step
def _require_trl() -> None:
    pytest.importorskip("trl", reason="the [trl] extra is not installed")


def _tiny_model_and_tokenizer():
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    words = ["<pad>", "<eos>", "<unk>", *[str(i) for i in range(10)], "=", "+", "sum"]
    tokenizer = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, pad_token="<pad>", eos_token="<eos>", unk_token="<unk>")
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=len(words), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=64,
                         pad_token_id=0, eos_token_id=1, bos_token_id=1)  # fmt: skip
    return LlamaForCausalLM(config), fast


def test_one_grpo_step_end_to_end_with_ordergrad_advantages(tmp_path):
    _require_trl()
    from datasets import Dataset
    from trl import GRPOConfig

    from ordergrad_rl.integrations.trl import OrderGradGRPOTrainer

    model, tokenizer = _tiny_model_and_tokenizer()
    dataset = Dataset.from_dict({"prompt": [f"sum {a} + {b} =" for a, b in [(1, 2), (3, 4), (2, 2), (5, 1)]]})

    def digits(completions, **kwargs):
        return [float(sum(ch.isdigit() for ch in c)) for c in completions]

    def short(completions, **kwargs):
        return [-float(len(c.split())) for c in completions]

    args = GRPOConfig(output_dir=str(tmp_path), per_device_train_batch_size=16, num_generations=G, max_steps=1,
                      max_completion_length=6, logging_steps=1, report_to=[], use_cpu=True, save_strategy="no",
                      learning_rate=1e-3, seed=0)  # fmt: skip
    before = [p.detach().clone() for p in model.parameters()]
    trainer = OrderGradGRPOTrainer(
        model, reward_funcs=[digits, short], args=args, train_dataset=dataset, processing_class=tokenizer,
        objective="digits=top2@4 + 0.4*short=bot2@4",
    )  # fmt: skip
    captured = {}
    generate = trainer._generate_and_score_completions

    def spy(inputs):
        output = generate(inputs)
        captured["advantages"] = output["advantages"].clone()
        captured["rewards"] = trainer._ordergrad_rewards.clone()
        return output

    trainer._generate_and_score_completions = spy
    trainer.train()
    assert any(not torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))
    expected = group_advantages(
        trainer.ordergrad_objective, captured["rewards"].numpy(), G, ["digits", "short"], scale="group"
    )
    np.testing.assert_allclose(captured["advantages"].numpy(), expected, rtol=1e-5, atol=1e-6)
    logged = trainer.state.log_history[0]
    assert {"risk/digits/objective", "risk/short/objective", "risk/adv_abs_mean"} <= set(logged)


def test_an_infinite_reward_is_refused_naming_the_function_and_the_completion():
    rewards = _rewards()
    rewards[11, 1] = np.inf  # ranked, it made its whole group's advantages inf - inf = NaN
    with pytest.raises(ValueError, match=r"reward function 'b' returned inf for completion 11"):
        group_advantages(parse_group_objective("top2@4", G, ["a", "b"]), rewards, G, ["a", "b"])


@pytest.mark.parametrize("scale", ["group", "batch", "none"])
def test_an_unscorable_completion_is_left_out_of_its_group_with_advantage_0(scale):
    # TRL 1.16: a completion every reward function returned None for is excluded from its group's baseline and std
    # and gets advantage 0; one that some function scored counts the others as 0 (TRL's nansum).
    rewards = _rewards()
    rewards[3] = np.nan  # unscorable
    rewards[12, 0] = np.nan  # scored by function b only
    objective = parse_group_objective("top2@4", G, ["a", "b"])
    out = group_advantages(objective, rewards, G, ["a", "b"], scale=scale).reshape(-1, G)
    assert out[0, 3] == 0.0
    total = np.nan_to_num(rewards).sum(axis=1).reshape(-1, G)
    first = 4 * lstat_advantage(np.delete(total[0], 3), objective)  # ranked among its 7 scored completions
    second = 4 * lstat_advantage(total[1], objective)
    if scale == "group":
        first, second = first / (first.std(ddof=1) + 1e-4), second / (second.std(ddof=1) + 1e-4)
    if scale == "batch":
        np.testing.assert_allclose(out[0] / out[1, 0], np.insert(first, 3, 0.0) / second[0], atol=1e-12)
    else:
        np.testing.assert_allclose(out[0], np.insert(first, 3, 0.0), atol=1e-12)
        np.testing.assert_allclose(out[1], second, atol=1e-12)
    rewards[G : G + 6] = np.nan  # 2 scored completions left: not more than k = 2, no leave-one-out advantage
    assert np.all(group_advantages(objective, rewards, G, ["a", "b"], scale=scale).reshape(-1, G)[1] == 0.0)


@pytest.mark.parametrize("scale", ["none", "channel", "group"])
def test_a_channel_objective_ranks_each_reward_function_on_the_completions_it_scored(scale):
    """A reward function that returned None for some completions of a group (a format check that cannot parse
    them): a channel objective ranked them as a reward of 0 in that function's channel, the lowest of its rewards
    or, for a penalty, the highest. Each channel is ranked on the completions its function scored, with that
    channel's advantage 0 for the others (TRL's normalize_then_sum)."""
    rewards = _rewards()
    rewards[3, 1] = rewards[9, 0] = np.nan  # b did not score completion 3 of group 0, a completion 1 of group 1
    objective = parse_group_objective("a=top2@4 + 0.4*b=bot2@4", G, ["a", "b"])
    out = group_advantages(objective, rewards, G, ["a", "b"], scale=scale).reshape(-1, G)

    def channel(values, spec):  # ranked on the scored values, 0 for the others
        keep = ~np.isnan(values)
        part = np.zeros(G)
        part[keep] = 4 * lstat_advantage(values[keep], spec)
        if scale == "channel":
            part[keep] /= part[keep].std(ddof=1) + 1e-4
        return part

    for group, values in enumerate(rewards.reshape(-1, G, 2)):
        expected = channel(values[:, 0], "top2@4") + 0.4 * channel(values[:, 1], "bot2@4")
        if scale == "group":
            expected = expected / (expected.std(ddof=1) + 1e-4)
        np.testing.assert_allclose(out[group], expected, atol=1e-12)


def test_groups_no_larger_than_k_get_advantage_0():  # evaluation groups of num_generations_eval <= k
    objective = parse_group_objective("top2@4", G, ["a"])
    assert np.all(group_advantages(objective, _rewards(functions=1)[:8], 2, ["a"]) == 0.0)


def test_trainer_refuses_k_at_least_g_before_generating(tmp_path):
    _require_trl()
    from datasets import Dataset
    from trl import GRPOConfig

    from ordergrad_rl.integrations.trl import OrderGradGRPOTrainer

    model, tokenizer = _tiny_model_and_tokenizer()
    args = GRPOConfig(output_dir=str(tmp_path), per_device_train_batch_size=G, num_generations=G, max_steps=1,
                      report_to=[], use_cpu=True)  # fmt: skip
    with pytest.raises(ValueError, match="k < G = num_generations = 8"):
        OrderGradGRPOTrainer(model, reward_funcs=[lambda completions, **kw: [0.0] * len(completions)], args=args,
                             train_dataset=Dataset.from_dict({"prompt": ["1 ="] * 4}), processing_class=tokenizer,
                             objective="top4@8")  # fmt: skip


@pytest.mark.parametrize(
    ("objective", "settings", "message"),
    [
        ("top4@8", {}, "k < G"),
        ("digits=top2@4 + 0.4*length=bot2@4", {}, r"channels \['length'\] are not reward functions"),
        ("top2@4", {"multi_objective_aggregation": "normalize_then_sum"}, "multi_objective_aggregation"),
    ],
)
def test_a_refused_objective_leaves_the_users_model_without_lora_layers(tmp_path, objective, settings, message):
    # The objective was checked after GRPOTrainer's __init__, which had already injected peft_config's LoRA layers
    # into the model passed, in place: the model the user kept had them after the refusal.
    _require_trl()
    pytest.importorskip("peft", reason="peft is not installed (the [trl] extra installs it)")
    from datasets import Dataset
    from peft import LoraConfig
    from trl import GRPOConfig

    from ordergrad_rl.integrations.trl import OrderGradGRPOTrainer

    def digits(completions, **kwargs):
        return [0.0] * len(completions)

    model, tokenizer = _tiny_model_and_tokenizer()
    args = GRPOConfig(output_dir=str(tmp_path), per_device_train_batch_size=G, num_generations=G, max_steps=1,
                      report_to=[], use_cpu=True, **settings)  # fmt: skip
    lora = LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM")
    modules = [type(module) for module in model.modules()]
    with pytest.raises(ValueError, match=message):
        OrderGradGRPOTrainer(model, [digits], args, train_dataset=Dataset.from_dict({"prompt": ["1 ="] * 4}),
                             processing_class=tokenizer, peft_config=lora, objective=objective)  # fmt: skip
    assert [type(module) for module in model.modules()] == modules


def test_checkpoints_and_saves_keep_the_objective_and_a_resume_with_another_warns(tmp_path):
    # TRL's GRPOConfig fields travel in every checkpoint (training_args.bin); the objective and scale, trainer
    # arguments, were in none: a resume that left objective= out went on with the default top2@4, silently.
    import json

    _require_trl()
    from datasets import Dataset
    from trl import GRPOConfig

    from ordergrad_rl.integrations.trl import ORDERGRAD_ARGS_NAME, OrderGradGRPOTrainer

    def digits(completions, **kwargs):
        return [float(sum(ch.isdigit() for ch in c)) for c in completions]

    def make(max_steps, **objective):
        model, tokenizer = _tiny_model_and_tokenizer()
        args = GRPOConfig(output_dir=str(tmp_path / "run"), per_device_train_batch_size=G, num_generations=G,
                          max_steps=max_steps, max_completion_length=4, report_to=[], use_cpu=True,
                          save_strategy="steps", save_steps=1, seed=0)  # fmt: skip
        return OrderGradGRPOTrainer(model, [digits], args, train_dataset=Dataset.from_dict({"prompt": ["1 ="] * 4}),
                                    processing_class=tokenizer, **objective)  # fmt: skip

    trainer = make(1, objective="cvar0.5", scale="none")
    trainer.train()
    trainer.save_model(str(tmp_path / "saved"))
    expected = {"objective": "cvar0.5@4", "scale": "none"}
    for folder in (tmp_path / "run" / "checkpoint-1", tmp_path / "saved"):
        assert json.loads((folder / ORDERGRAD_ARGS_NAME).read_text()) == expected
    with pytest.warns(UserWarning, match=r"trained with \{'objective': 'cvar0.5@4', 'scale': 'none'\}"):
        make(2).train(resume_from_checkpoint=True)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message="resuming", category=UserWarning)
        make(2, objective="cvar0.5", scale="none").train(resume_from_checkpoint=str(tmp_path / "run" / "checkpoint-1"))


def test_trainer_refuses_normalize_then_sum_and_evaluates_small_groups_at_the_training_k(tmp_path):
    _require_trl()
    from datasets import Dataset
    from trl import GRPOConfig

    from ordergrad_rl.integrations.trl import OrderGradGRPOTrainer

    model, tokenizer = _tiny_model_and_tokenizer()
    common = dict(output_dir=str(tmp_path), per_device_train_batch_size=G, num_generations=G, max_steps=1,
                  report_to=[], use_cpu=True)  # fmt: skip
    kwargs = dict(reward_funcs=[lambda completions, **kw: [0.0] * len(completions)],
                  train_dataset=Dataset.from_dict({"prompt": ["1 ="] * 4}), processing_class=tokenizer)  # fmt: skip
    with pytest.raises(ValueError, match="multi_objective_aggregation='normalize_then_sum'.*scale='channel'"):
        OrderGradGRPOTrainer(model, args=GRPOConfig(**common, multi_objective_aggregation="normalize_then_sum"),
                             objective="top2@4", **kwargs)  # fmt: skip
    # TRL allows one completion per prompt at evaluation: it trains, and evaluation's advantages are 0
    with pytest.warns(UserWarning, match="num_generations_eval=1 holds no leave-one-out advantage"):
        trainer = OrderGradGRPOTrainer(model, args=GRPOConfig(**common, num_generations_eval=1), objective="mean",
                                       **kwargs)  # fmt: skip
    assert str(trainer.ordergrad_objective) == "mean"
    small = OrderGradGRPOTrainer(model, args=GRPOConfig(**common, num_generations_eval=4), objective="cvar0.5",
                                 **kwargs)  # fmt: skip
    assert str(small.ordergrad_objective) == "cvar0.5@4"  # evaluation measures what training optimizes


def test_pass_at_k_callback_restores_the_training_mode_when_is_correct_raises():
    _require_trl()
    from ordergrad_rl.integrations.trl import PassAtKCallback

    model, tokenizer = _tiny_model_and_tokenizer()
    model.train()

    def broken(prompt, completion):
        raise KeyError("the grader's table has no such problem")

    with pytest.raises(KeyError, match="grader"):
        PassAtKCallback(["sum 1 + 2 ="], broken, n_samples=2, max_new_tokens=2).evaluate(model, tokenizer)
    assert model.training  # it was left in eval mode: dropout off for the rest of training


def test_pass_at_k_callback_samples_conversational_prompts_through_the_chat_template():
    """A conversational dataset's held-out prompts (message lists, as GRPOTrainer takes them) were accepted and then
    failed in the tokenizer at the first evaluation, mid-training; they are rendered by the chat template as TRL
    renders them, and anything else is refused at construction."""
    _require_trl()
    from ordergrad_rl.integrations.trl import PassAtKCallback

    model, tokenizer = _tiny_model_and_tokenizer()
    tokenizer.chat_template = "{% for m in messages %}{{ m['content'] }} {% endfor %}{{ '=' }}"
    conversation = [{"role": "user", "content": "sum 1 + 2"}]
    seen = {}

    def record(key):
        def is_correct(prompt, completion):
            seen.setdefault(key, []).append((prompt, completion))
            return True

        return is_correct

    torch.manual_seed(1)
    curve = PassAtKCallback([conversation], record("chat"), n_samples=4, max_new_tokens=3).evaluate(model, tokenizer)
    torch.manual_seed(1)
    PassAtKCallback(["sum 1 + 2 ="], record("text"), n_samples=4, max_new_tokens=3).evaluate(model, tokenizer)
    assert curve == {1: 1.0, 2: 1.0, 4: 1.0}
    assert [p for p, _ in seen["chat"]] == [conversation] * 4  # is_correct gets the prompt as given
    assert [c for _, c in seen["chat"]] == [c for _, c in seen["text"]]  # sampled from the rendered prompt
    for bad in (conversation, [None], [[]]):  # one conversation not in a list, a missing prompt, an empty one
        with pytest.raises(ValueError, match="prompts must be text or conversations"):
            PassAtKCallback(bad, lambda p, c: True)


def test_pass_at_k_callback_refuses_conversations_without_a_chat_template_before_any_step(tmp_path):
    """Conversational held-out prompts and a tokenizer without a chat template failed in transformers'
    ``apply_chat_template`` at the first evaluation, after training (or mid-training); refused when training begins."""
    _require_trl()
    from datasets import Dataset
    from trl import GRPOConfig

    from ordergrad_rl.integrations.trl import OrderGradGRPOTrainer, PassAtKCallback

    model, tokenizer = _tiny_model_and_tokenizer()
    assert tokenizer.chat_template is None
    callback = PassAtKCallback([[{"role": "user", "content": "sum 1 + 2"}]], lambda p, c: True, n_samples=2)
    scored = []

    def reward(completions, **kwargs):
        scored.append(completions)
        return [0.0] * len(completions)

    args = GRPOConfig(output_dir=str(tmp_path), per_device_train_batch_size=G, num_generations=G, max_steps=1,
                      max_completion_length=4, report_to=[], use_cpu=True, save_strategy="no")  # fmt: skip
    trainer = OrderGradGRPOTrainer(model, reward_funcs=[reward], args=args, processing_class=tokenizer,
                                   train_dataset=Dataset.from_dict({"prompt": ["sum 1 + 2 ="] * 2}),
                                   objective="top2@4", callbacks=[callback])  # fmt: skip
    with pytest.raises(ValueError, match=r"processing_class \w+ has no chat template"):
        trainer.train()
    assert not scored and trainer.state.global_step == 0
    with pytest.raises(ValueError, match="no processing_class"):  # a Trainer without a tokenizer, any prompts
        PassAtKCallback(["sum 1 + 2 ="], lambda p, c: True).on_train_begin(args, trainer.state, trainer.control)


def test_pass_at_k_callback_logs_the_unbiased_curve(tmp_path):
    _require_trl()
    from datasets import Dataset
    from trl import GRPOConfig

    from ordergrad_rl.integrations.trl import OrderGradGRPOTrainer, PassAtKCallback

    model, tokenizer = _tiny_model_and_tokenizer()
    prompts = ["sum 1 + 2 =", "sum 3 + 4 ="]
    always = PassAtKCallback(prompts, lambda p, c: True, n_samples=4, max_new_tokens=4)
    digit = PassAtKCallback(prompts, lambda p, c: any(ch.isdigit() for ch in c), n_samples=8, ks=[1, 4, 8],
                            eval_steps=1, max_new_tokens=4)  # fmt: skip
    args = GRPOConfig(output_dir=str(tmp_path), per_device_train_batch_size=G, num_generations=G, max_steps=1,
                      max_completion_length=4, report_to=[], use_cpu=True, save_strategy="no")  # fmt: skip
    trainer = OrderGradGRPOTrainer(model, reward_funcs=[lambda completions, **kw: [0.0] * len(completions)], args=args,
                                   train_dataset=Dataset.from_dict({"prompt": prompts * 2}), processing_class=tokenizer,
                                   objective="top2@4", callbacks=[always, digit])  # fmt: skip
    trainer.train()
    assert always.history == [(1, {1: 1.0, 2: 1.0, 4: 1.0})]
    assert len(digit.history) == 1  # at step 1, not again at the end of training
    curve = digit.history[0][1]
    assert list(curve) == [1, 4, 8] and 0.0 <= curve[1] <= curve[4] <= curve[8] <= 1.0
    assert any("eval_pass@k/k=8" in entry for entry in trainer.state.log_history)
    with pytest.raises(ValueError, match="ks must be in"):
        PassAtKCallback(prompts, lambda p, c: True, n_samples=4, ks=[8])
    # refused here, not at the first evaluation in the middle of training (generate's ValueError for a temperature
    # of 0, a ZeroDivisionError for eval_steps=0 at step 1)
    for bad, message in [
        ({"temperature": 0.0}, "temperature must be a finite number > 0, got 0.0"),
        ({"temperature": float("nan")}, "temperature must be a finite number > 0"),
        ({"eval_steps": 0}, "eval_steps must be an integer >= 1, got 0"),
        ({"max_new_tokens": 0}, "max_new_tokens must be an integer >= 1, got 0"),
        ({"n_samples": 2.5}, r"n_samples must be an integer >= 1, got 2\.5"),
        ({"ks": [1.5]}, "ks must be integers, got non-integer values"),  # these raised at the end of training
        ({"ks": []}, "ks is empty"),
    ]:
        with pytest.raises(ValueError, match=message):
            PassAtKCallback(prompts, lambda p, c: True, **bad)


def test_the_completions_table_shows_ordergrads_advantages(tmp_path):
    """log_completions writes each logged step's completions with their advantage (completions_<step>.parquet, the
    printed sample, wandb/trackio): OrderGrad's, not the GRPO advantages TRL computed before they were replaced."""
    _require_trl()
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    from datasets import Dataset
    from trl import GRPOConfig

    from ordergrad_rl.integrations.trl import OrderGradGRPOTrainer

    model, tokenizer = _tiny_model_and_tokenizer()
    args = GRPOConfig(output_dir=str(tmp_path), per_device_train_batch_size=16, num_generations=G, max_steps=1,
                      max_completion_length=4, logging_steps=1, report_to=[], use_cpu=True, save_strategy="no",
                      log_completions=True, num_completions_to_print=0, seed=0)  # fmt: skip
    trainer = OrderGradGRPOTrainer(
        model, reward_funcs=[lambda completions, **kw: [float(len(c)) for c in completions]], args=args,
        train_dataset=Dataset.from_dict({"prompt": ["sum 1 + 2 =", "sum 3 + 4 ="] * 2}), processing_class=tokenizer,
        objective="cvar0.25",
    )  # fmt: skip
    trainer.train()
    table = pd.read_parquet(tmp_path / "completions" / "completions_00001.parquet")
    rewards = np.asarray(trainer._ordergrad_rewards)  # those of the one generation, the table's rows in order
    expected = group_advantages(trainer.ordergrad_objective, rewards, G, trainer.reward_func_names, scale="group")
    np.testing.assert_allclose(table["advantage"].to_numpy(), expected, rtol=1e-6, atol=1e-9)


def test_a_channel_objective_refuses_reward_weights_it_would_ignore(tmp_path):
    """A channel objective weighs each reward function in its spec; TRL's reward_weights, which weigh the plain
    objective's sum, changed nothing (reward_weights=[1, 0] trained on both functions): refused."""
    _require_trl()
    from datasets import Dataset
    from trl import GRPOConfig

    from ordergrad_rl.integrations.trl import OrderGradGRPOTrainer

    model, tokenizer = _tiny_model_and_tokenizer()

    def a(completions, **kwargs):
        return [0.0] * len(completions)

    def b(completions, **kwargs):
        return [1.0] * len(completions)

    def trainer(obj, weights, scale=None, scale_rewards="group"):
        args = GRPOConfig(output_dir=str(tmp_path), per_device_train_batch_size=G, num_generations=G, max_steps=1,
                          report_to=[], use_cpu=True, reward_weights=weights, scale_rewards=scale_rewards)  # fmt: skip
        dataset = Dataset.from_dict({"prompt": ["1 ="] * 4})
        return OrderGradGRPOTrainer(
            model, reward_funcs=[a, b], args=args, processing_class=tokenizer, train_dataset=dataset, objective=obj,
            scale=scale,
        )  # fmt: skip

    with pytest.raises(ValueError, match=r"reward_weights=\[1.0, 0.0\].*put the weights there"):
        trainer("a=top2@4 + 0.4*b=bot2@4", [1.0, 0.0])
    assert trainer("top2@4", [1.0, 0.0]).reward_weights.tolist() == [1.0, 0.0]  # the plain objective's sum
    assert str(trainer("a=top2@4 + 0.4*b=bot2@4", [1.0, 1.0]).ordergrad_objective) == "a=top2@4 + 0.4*b=bot2@4"
    # scale="channel" scales each reward function's advantages: a plain objective has one, of their sum (it was
    # scaled as "group", silently); refused at construction, before any generation
    with pytest.raises(ValueError, match=r"scale='channel'.*plain objective 'top2@4' ranks the weighted sum"):
        trainer("top2@4", [1.0, 0.5], scale="channel")
    assert trainer("a=top2@4 + 0.4*b=bot2@4", None, scale="channel").ordergrad_scale == "channel"
    # OrderGrad's scale given as TRL's scale_rewards: accepted, then TRL's own advantages raised "Invalid value for
    # scale_rewards: channel" at the first generation; refused here, naming the trainer's argument
    with pytest.raises(ValueError, match=r"scale_rewards='channel'.*are OrderGradGRPOTrainer's scale argument"):
        trainer("a=top2@4 + 0.4*b=bot2@4", None, scale_rewards="channel")


@pytest.mark.parametrize("given", ["callbacks", "add_callback"])
def test_pass_at_k_reaches_tensorboard(tmp_path, given):
    """The curve is written by the run's reporting backends (before, it went to ``state.log_history`` only; and, for
    a callback given by ``trainer.add_callback``, TRL's way for its ``LogCompletionsCallback``, it still did)."""
    _require_trl()
    from datasets import Dataset
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from trl import GRPOConfig

    from ordergrad_rl.integrations.trl import OrderGradGRPOTrainer, PassAtKCallback

    model, tokenizer = _tiny_model_and_tokenizer()
    prompts = ["sum 1 + 2 =", "sum 3 + 4 ="]
    callback = PassAtKCallback(prompts, lambda p, c: True, n_samples=2, max_new_tokens=2)
    args = GRPOConfig(output_dir=str(tmp_path), per_device_train_batch_size=G, num_generations=G, max_steps=2,
                      logging_steps=2, max_completion_length=4, report_to=["tensorboard"], use_cpu=True,
                      save_strategy="no")  # fmt: skip
    given_callbacks = [callback] if given == "callbacks" else []
    trainer = OrderGradGRPOTrainer(model, reward_funcs=[lambda completions, **kw: [0.0] * len(completions)], args=args,
                                   train_dataset=Dataset.from_dict({"prompt": prompts * 4}), processing_class=tokenizer,
                                   objective="top2@4", callbacks=given_callbacks)  # fmt: skip
    if given == "add_callback":
        trainer.add_callback(callback)
    assert callback.trainer is trainer
    trainer.train()
    (events,) = {path.parent for path in tmp_path.rglob("events.out.tfevents.*")}  # <output_dir>/runs/<run>
    scalars = EventAccumulator(str(events)).Reload().Tags()["scalars"]
    assert {"eval/pass@k/k=1", "eval/pass@k/k=2"} <= set(scalars), scalars  # transformers renames eval_ to eval/
    # TRL's training metrics are still averaged over its logging steps: one entry at step 2, none at step 1
    logged = [entry["step"] for entry in trainer.state.log_history if "risk/objective" in entry]
    assert logged == [2]


def test_pass_at_k_at_a_logging_step_keeps_the_training_log(tmp_path):
    """An evaluation at a logging step (``eval_steps == logging_steps``, the usual setting) cleared the step's
    ``should_log`` through transformers' ``on_log``: no training ``loss``, ``grad_norm`` or TRL metric was ever logged
    at those steps, only the pass@k curve."""
    _require_trl()
    from datasets import Dataset
    from trl import GRPOConfig

    from ordergrad_rl.integrations.trl import OrderGradGRPOTrainer, PassAtKCallback

    model, tokenizer = _tiny_model_and_tokenizer()
    prompts = ["sum 1 + 2 =", "sum 3 + 4 ="]
    callback = PassAtKCallback(prompts, lambda p, c: True, n_samples=2, eval_steps=1, max_new_tokens=2)
    args = GRPOConfig(output_dir=str(tmp_path), per_device_train_batch_size=G, num_generations=G, max_steps=2,
                      logging_steps=1, max_completion_length=2, report_to=[], use_cpu=True,
                      save_strategy="no")  # fmt: skip
    trainer = OrderGradGRPOTrainer(model, reward_funcs=[lambda completions, **kw: [0.0] * len(completions)], args=args,
                                   train_dataset=Dataset.from_dict({"prompt": prompts * 4}), processing_class=tokenizer,
                                   objective="top2@4", callbacks=[callback])  # fmt: skip
    trainer.train()
    history = trainer.state.log_history
    assert [entry["step"] for entry in history if "eval_pass@k/k=1" in entry] == [1, 2]
    trained = [entry for entry in history if "loss" in entry]
    assert [entry["step"] for entry in trained] == [1, 2]
    assert all({"grad_norm", "learning_rate", "risk/objective"} <= set(entry) for entry in trained)


@pytest.mark.parametrize("beta", [0.0, 0.04])
def test_lora_through_peft_config_trains_as_trls_grpo_and_saves_the_adapter(tmp_path, beta):
    """TRL's LoRA path, ``peft_config=LoraConfig(...)``: with ``objective="mean"`` the same losses (and KL against
    the adapter-disabled model for ``beta > 0``) as TRL's own ``GRPOTrainer`` on the same seed; only the adapter
    trains; ``save_model`` writes the adapter, which ``merge_and_unload`` folds into a plain model."""
    _require_trl()
    pytest.importorskip("peft", reason="peft is not installed (the [trl] extra installs it)")
    from datasets import Dataset
    from peft import LoraConfig, PeftModel
    from trl import GRPOConfig, GRPOTrainer

    from ordergrad_rl.integrations.trl import OrderGradGRPOTrainer

    def digits(completions, **kwargs):
        return [float(sum(ch.isdigit() for ch in c)) for c in completions]

    def run(trainer_class, **objective):
        model, tokenizer = _tiny_model_and_tokenizer()
        args = GRPOConfig(output_dir=str(tmp_path / trainer_class.__name__), per_device_train_batch_size=16,
                          num_generations=G, max_steps=2, max_completion_length=6, logging_steps=1, report_to=[],
                          use_cpu=True, save_strategy="no", learning_rate=1e-2, beta=beta, seed=0)  # fmt: skip
        lora = LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM")
        trainer = trainer_class(model, reward_funcs=[digits], args=args, processing_class=tokenizer, peft_config=lora,
                                train_dataset=Dataset.from_dict({"prompt": ["sum 1 + 2 =", "sum 3 + 4 ="] * 2}),
                                **objective)  # fmt: skip
        base = {n: p.detach().clone() for n, p in trainer.model.named_parameters() if "lora_" not in n}
        trainer.train()
        assert trainer.ref_model is None  # beta > 0: the reference is the model with its adapter disabled
        assert all(torch.equal(p, base[n]) for n, p in trainer.model.named_parameters() if n in base)
        logged = [(entry["loss"], entry.get("kl", 0.0)) for entry in trainer.state.log_history if "loss" in entry]
        return trainer, np.array(logged)

    trl, trl_logged = run(GRPOTrainer)
    ordergrad, logged = run(OrderGradGRPOTrainer, objective="mean")
    assert isinstance(ordergrad.model, PeftModel) and len(logged) == 2
    np.testing.assert_allclose(logged, trl_logged, rtol=1e-4, atol=1e-6)  # the +1e-4 of TRL's std apart
    ordergrad.save_model(str(tmp_path / "adapter"))
    saved = {path.name for path in (tmp_path / "adapter").iterdir()}
    assert {"adapter_config.json", "adapter_model.safetensors"} <= saved and "model.safetensors" not in saved
    loaded = PeftModel.from_pretrained(_tiny_model_and_tokenizer()[0], str(tmp_path / "adapter"))
    ids = torch.tensor([[13, 4, 14, 5, 12]])
    with torch.no_grad():
        expected = loaded(ids).logits
        merged = ordergrad.model.merge_and_unload()
        np.testing.assert_allclose(merged(ids).logits.numpy(), expected.numpy(), atol=1e-5)


def test_pass_at_k_callback_samples_the_models_whole_distribution():
    """``generate`` filled the unset ``top_k`` with transformers' default of 50 (and took a pretrained model's
    ``generation_config``: its top_k, top_p, repetition_penalty), so pass@k was that of the truncated distribution,
    not of the policy GRPOTrainer samples (``top_k=0``, ``top_p=1``); a completion outside the 50 likeliest first
    tokens never counted."""
    _require_trl()
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    from ordergrad_rl.integrations.trl import PassAtKCallback

    words = ["<pad>", "<eos>", "<unk>", *[f"w{i}" for i in range(197)]]  # a vocabulary well above 50 tokens
    vocab = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
    vocab.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=vocab, pad_token="<pad>", eos_token="<eos>", unk_token="<unk>")
    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(vocab_size=len(words), hidden_size=16, intermediate_size=32,
                                         num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2,
                                         pad_token_id=0, eos_token_id=1))  # fmt: skip
    model.generation_config.top_p = 0.5  # as a pretrained model's generation_config.json may set
    prompt = "w1 w2"
    with torch.no_grad():
        logits = model(**tokenizer(prompt, return_tensors="pt")).logits[0, -1]
    likeliest = set(logits.topk(50).indices.tolist())

    def unlikely(p, completion):  # the first token is outside the 50 likeliest, as about 3/4 of the samples are
        first = completion.split()[:1]
        return bool(first) and tokenizer.convert_tokens_to_ids(first[0]) not in likeliest

    torch.manual_seed(0)
    curve = PassAtKCallback([prompt], unlikely, n_samples=32, ks=[1], max_new_tokens=1).evaluate(model, tokenizer)
    assert curve[1] > 0.4
    truncated = PassAtKCallback([prompt], unlikely, n_samples=32, ks=[1], max_new_tokens=1,
                                generation_kwargs={"top_k": 50})  # fmt: skip
    assert truncated.evaluate(model, tokenizer) == {1: 0.0}  # the run's own sampling settings, when asked
    with pytest.raises(ValueError, match=r"generation_kwargs \['do_sample'\] are PassAtKCallback's own"):
        PassAtKCallback([prompt], unlikely, generation_kwargs={"do_sample": False})


@pytest.mark.parametrize(
    ("spec", "weights"),
    [("top2@4", [0, 0, 0.5, 0.5]), ("max@4", [0, 0, 0, 1]), ("cvar0.25@4", [1, 0, 0, 0]), ("median@3", [0, 1, 0])],
)
def test_advantages_are_the_papers_estimator_by_enumerating_every_subset(spec, weights):
    """On a hand-made batch (ties, an unscorable completion), unscaled: completion i's advantage is k times the mean
    objective value of the k-subsets of its group holding it minus that of those without it (the leave-one-out
    baseline), each subset's value its sorted rewards times the objective's weights; TRL's loss averages it over
    the completions, the subset average of the score function estimator of the objective's gradient."""
    import itertools

    rewards = np.array([[1.0, 0.0, 0.0, 1.0, 0.0, 0.0], [3.0, 1.0, 2.0, 2.0, np.nan, 0.5]]).reshape(-1, 1)
    objective = parse_group_objective(spec, 6, ["correct"])
    out = group_advantages(objective, rewards, 6, ["correct"], scale="none").reshape(2, 6)
    k = len(weights)
    for group, values in enumerate(rewards.reshape(2, 6)):
        scored = [i for i in range(6) if not np.isnan(values[i])]
        value = {s: np.sort(values[list(s)]) @ weights for s in itertools.combinations(scored, k)}
        for i in range(6):
            if i not in scored:  # no function scored it: left out of the ranking, advantage 0
                assert out[group, i] == 0.0
                continue
            with_i = np.mean([v for s, v in value.items() if i in s])
            without_i = np.mean([v for s, v in value.items() if i not in s])
            assert out[group, i] == pytest.approx(k * (with_i - without_i), abs=1e-12)


def test_a_channel_objective_refuses_a_name_that_several_reward_functions_share(tmp_path):
    """TRL names a reward function by its function (a functools.partial by the function it wraps): two partials of
    one scorer are both ``scorer``, and ``"scorer=top2@4"`` ranked the first alone, the second silently not trained
    on."""
    _require_trl()
    import functools

    from datasets import Dataset
    from trl import GRPOConfig

    from ordergrad_rl.integrations.trl import OrderGradGRPOTrainer

    def scorer(completions, scale=1.0, **kwargs):
        return [scale * len(c) for c in completions]

    model, tokenizer = _tiny_model_and_tokenizer()
    args = GRPOConfig(output_dir=str(tmp_path), per_device_train_batch_size=G, num_generations=G, max_steps=1,
                      report_to=[], use_cpu=True)  # fmt: skip
    funcs = [functools.partial(scorer, scale=1.0), functools.partial(scorer, scale=-1.0)]
    with pytest.raises(ValueError, match=r"reward functions 0 and 1 are both named 'scorer'"):
        OrderGradGRPOTrainer(model, funcs, args, train_dataset=Dataset.from_dict({"prompt": ["1 ="] * 4}),
                             processing_class=tokenizer, objective="scorer=top2@4")  # fmt: skip
    # a plain objective ranks their sum
    OrderGradGRPOTrainer(model, funcs, args, train_dataset=Dataset.from_dict({"prompt": ["1 ="] * 4}),
                         processing_class=tokenizer, objective="top2@4")  # fmt: skip


def test_pass_at_k_callback_renders_conversations_with_the_runs_chat_template_kwargs(tmp_path):
    """GRPOTrainer renders a conversational prompt with GRPOConfig.chat_template_kwargs (Qwen3's
    ``{"enable_thinking": False}``, say); the callback rendered the held-out ones without them, so pass@k measured
    prompts that training never saw."""
    _require_trl()
    from datasets import Dataset
    from trl import GRPOConfig

    from ordergrad_rl.integrations.trl import OrderGradGRPOTrainer, PassAtKCallback

    model, tokenizer = _tiny_model_and_tokenizer()
    tokenizer.chat_template = "{% for m in messages %}{{ m['content'] }} {% endfor %}{% if answer %}={% endif %}"
    conversation = [{"role": "user", "content": "sum 1 + 2"}]
    rendered = []
    render = tokenizer.apply_chat_template

    def spy(*args, **kwargs):
        rendered.append(kwargs.get("answer"))
        return render(*args, **kwargs)

    tokenizer.apply_chat_template = spy
    callback = PassAtKCallback([conversation], lambda p, c: True, n_samples=2, max_new_tokens=2)
    args = GRPOConfig(output_dir=str(tmp_path), per_device_train_batch_size=G, num_generations=G, max_steps=1,
                      max_completion_length=2, report_to=[], use_cpu=True, save_strategy="no",
                      chat_template_kwargs={"answer": True})  # fmt: skip
    trainer = OrderGradGRPOTrainer(model, reward_funcs=[lambda completions, **kw: [0.0] * len(completions)], args=args,
                                   train_dataset=Dataset.from_dict({"prompt": [conversation] * 2}),
                                   processing_class=tokenizer, objective="top2@4", callbacks=[callback])  # fmt: skip
    trainer.train()
    assert len(callback.history) == 1 and len(rendered) >= 2  # the trainer's prompts and the callback's
    assert rendered == [True] * len(rendered)
    # evaluate, called by hand, takes them too
    torch.manual_seed(1)
    seen = []
    PassAtKCallback([conversation], lambda p, c: seen.append(c), n_samples=4, max_new_tokens=3).evaluate(
        model, tokenizer, GRPOConfig(output_dir=str(tmp_path), chat_template_kwargs={"answer": True}, use_cpu=True)
    )
    torch.manual_seed(1)
    text = []
    PassAtKCallback(["sum 1 + 2 ="], lambda p, c: text.append(c), n_samples=4, max_new_tokens=3).evaluate(
        model, tokenizer
    )
    assert seen == text


def test_pass_at_k_callback_samples_completions_as_long_as_the_run_does(tmp_path):
    """``max_new_tokens`` defaulted to 32 whatever the run's ``max_completion_length`` (TRL's default: 512): a model
    that reasons for a few hundred tokens was cut off at 32, and its pass@k was near 0. By default it is the run's
    length now."""
    _require_trl()
    from datasets import Dataset
    from trl import GRPOConfig

    from ordergrad_rl.integrations.trl import OrderGradGRPOTrainer, PassAtKCallback

    model, tokenizer = _tiny_model_and_tokenizer()
    limits = []
    generate = model.generate

    def spy(*args, **kwargs):
        if "num_return_sequences" in kwargs:  # the callback's (GRPOTrainer passes a GenerationConfig)
            limits.append(kwargs["max_new_tokens"])
        return generate(*args, **kwargs)

    model.generate = spy
    args = GRPOConfig(output_dir=str(tmp_path), per_device_train_batch_size=G, num_generations=G, max_steps=1,
                      max_completion_length=40, report_to=[], use_cpu=True, save_strategy="no")  # fmt: skip
    callback = PassAtKCallback(["sum 1 + 2 ="], lambda p, c: True, n_samples=2)
    trainer = OrderGradGRPOTrainer(model, reward_funcs=[lambda completions, **kw: [0.0] * len(completions)], args=args,
                                   train_dataset=Dataset.from_dict({"prompt": ["sum 1 + 2 ="] * 2}),
                                   processing_class=tokenizer, objective="top2@4", callbacks=[callback])  # fmt: skip
    trainer.train()
    assert limits == [40]
    PassAtKCallback(["sum 1 + 2 ="], lambda p, c: True, n_samples=2, max_new_tokens=5).evaluate(model, tokenizer, args)
    PassAtKCallback(["sum 1 + 2 ="], lambda p, c: True, n_samples=2).evaluate(model, tokenizer)
    assert limits == [40, 5, 512]  # given, it is the limit; without a run, GRPOConfig's default


def test_a_reward_function_named_reward_is_a_channel_of_its_own():
    """The agents read a lone ``reward=`` channel as the plain objective of the env's reward; with a TRL reward
    function named ``reward`` beside others, ``"reward=top2@4"`` ranked the weighted sum of every function instead
    of that function."""
    rewards = _rewards()
    for spec in ("reward=top2@4", {"reward": "top2@4"}):
        objective = parse_group_objective(spec, G, ["reward", "length"])
        out = group_advantages(objective, rewards, G, ["reward", "length"], scale="none")
        expected = 4 * lstat_advantage(rewards[:, 0].reshape(-1, G), "top2@4")
        np.testing.assert_allclose(out, expected.reshape(-1), atol=1e-12)
    # the only reward function, or none named so: the plain objective, as for the agents
    assert str(parse_group_objective("reward=top2@4", G, ["reward"])) == "top2@4"
    assert str(parse_group_objective("reward=top2@4", G, ["correct", "length"])) == "top2@4"
