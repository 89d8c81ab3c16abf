"""Tokenizer, task and rewards, rollout record, loading, the loop and the CLI."""

import json
import random

import pandas as pd
import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedTokenizerFast

from rlalgos.tools import cli
from rlalgos.model import char_tokenizer, load_policy, tiny_model
from rlalgos.engine.forward import batched_logprobs, forward_logprobs
from rlalgos.record import Rollout, completion_mask_from_ids
from rlalgos.rollout import rollout
from rlalgos.engine.sampler import SamplingConfig
from rlalgos.tasks import (
    RewardSet,
    addition_task,
    correctness_reward,
    format_reward,
    get_task,
    load_gsm8k,
    make_addition_problem,
    make_addition_split,
    numeric_match_reward,
    read_jsonl,
)
from rlalgos.train import TrainConfig, load_metrics, train

# --------------------------------------------------------------------------- #
# tokenizer
# --------------------------------------------------------------------------- #


def test_tokenizer_round_trip_and_specials(tmp_path):
    tok = char_tokenizer()
    assert isinstance(tok, PreTrainedTokenizerFast)
    text = "46+76+82=46+76=122;122+82=204#204"
    ids = tok(text)["input_ids"]
    assert ids[0] == tok.bos_token_id and len(ids) == len(text) + 1  # one token per char, BOS in front
    assert tok.decode(ids, skip_special_tokens=True) == text
    assert {tok.pad_token, tok.bos_token, tok.eos_token} == {"<pad>", "<bos>", "<eos>"}
    tok.save_pretrained(tmp_path)
    again = AutoTokenizer.from_pretrained(tmp_path)
    assert again(text)["input_ids"] == ids
    assert again.decode(ids[1:]) == text


def test_tokenizer_left_pads_batches():
    tok = char_tokenizer()
    enc = tok(["1+2=", "10+20+30="], padding=True, return_tensors="pt")
    assert enc["input_ids"].shape == (2, 10)
    assert enc["attention_mask"][0].tolist() == [0] * 5 + [1] * 5
    assert enc["input_ids"][0, :5].tolist() == [tok.pad_token_id] * 5


# --------------------------------------------------------------------------- #
# task and rewards
# --------------------------------------------------------------------------- #


def test_addition_problem_format():
    p = make_addition_problem(random.Random(3), n_terms=3)
    a, b, c = map(int, p["prompt"][:-1].split("+"))
    assert p["answer"] == str(a + b + c)
    assert p["target"] == f"{a}+{b}={a + b};{a + b}+{c}={a + b + c}#{a + b + c}"
    assert p["direct"] == f"#{a + b + c}"


def test_splits_are_seeded_and_difficulty_knob_works():
    assert make_addition_split(50, seed=1) == make_addition_split(50, seed=1)
    rows = make_addition_split(200, seed=2, terms=(4,), max_value=9)
    assert all(r["n_terms"] == 4 and r["prompt"].count("+") == 3 for r in rows)
    assert all(int(x) <= 9 for r in rows for x in r["prompt"][:-1].split("+"))


def test_shipped_splits_are_disjoint():
    task = addition_task()
    assert len(task.train) >= 10000 and len(task.test) == 500
    assert not {r["prompt"] for r in task.train} & {r["prompt"] for r in task.test}


@pytest.mark.parametrize(
    "completion,correct,fmt",
    [
        ("46+76=122;122+82=204#204", 1.0, 1.0),  # right, with working
        ("#204", 1.0, 1.0),  # right, direct
        ("46+76=122;122+82=205#205", 0.0, 1.0),  # wrong but well-formed
        ("46+76=122;122+82=204", 0.0, 0.0),  # no answer marker
        ("#204x", 0.0, 0.0),  # junk after the number
        ("204", 0.0, 0.0),  # malformed
        ("", 0.0, 0.0),  # empty
        ("##", 0.0, 0.0),
    ],
)
def test_rewards_on_right_wrong_malformed_empty(completion, correct, fmt):
    assert correctness_reward(["46+76+82="], [completion], answer=["204"]) == [correct]
    assert format_reward(["46+76+82="], [completion]) == [fmt]


def test_reward_set_combines_and_logs_each():
    rs = RewardSet([("correct", correctness_reward, 1.0), ("format", format_reward, 0.5)])
    total, parts = rs(["1+2=", "1+2="], ["#3", "oops"], {"answer": ["3", "3"]})
    assert parts == {"correct": [1.0, 0.0], "format": [1.0, 0.0]}
    assert total == [1.5, 0.0]


def test_gsm8k_loader_and_numeric_reward(tmp_path):
    path = tmp_path / "gsm.jsonl"
    rows = [
        {"question": "Tom has 3 apples and buys 4. How many?", "answer": "3 + 4 = 7\n#### 7"},
        {"question": "A shop sells 1,200 pens.", "answer": "so\n#### 1,200"},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    data = load_gsm8k(path)
    assert [d["answer"] for d in data] == ["7", "1200"]
    assert data[0]["prompt"].startswith("Question: Tom has")
    got = numeric_match_reward(
        [d["prompt"] for d in data] * 2,
        ["The answer is 7.", "#### 1,200", "It is 8", "no number"],
        answer=["7", "1200", "7", "1200"],
    )
    assert got == [1.0, 1.0, 0.0, 0.0]
    task = get_task(f"gsm8k:{path}")  # no test file: one of the two rows is held out, never trained on
    assert task.name == "gsm8k" and len(task.test) == 1 and len(task.train) == 1 and task.test != task.train


def test_bad_jsonl_line_is_reported(tmp_path):
    p = tmp_path / "bad.jsonl"
    p.write_text('{"prompt": "1+1=", "answer": "2"}\n{oops\n')
    with pytest.raises(ValueError, match=r"bad.jsonl:2: not valid JSON"):
        read_jsonl(p, ("prompt", "answer"))
    p.write_text('{"prompt": "1+1="}\n')
    with pytest.raises(ValueError, match=r":1: missing field\(s\) answer"):
        read_jsonl(p, ("prompt", "answer"))


# --------------------------------------------------------------------------- #
# model loading
# --------------------------------------------------------------------------- #


def test_load_policy_any_local_hf_model(tiny_dir):
    model, tok = load_policy(tiny_dir, device="cpu")
    assert isinstance(model, type(AutoModelForCausalLM.from_pretrained(tiny_dir)))
    assert model.dtype == torch.float32 and model.device.type == "cpu"
    assert tok.padding_side == "left" and tok.pad_token_id is not None


def test_load_policy_clear_error_on_missing(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such folder"):  # a local path, not a hub name: no network error
        load_policy(tmp_path / "nope", device="cpu")


def test_tiny_config_size_is_the_shipped_models_as_the_docs_write_it():
    """SHIPPED_PARAMETERS is how the messages and docs write the shipped model's size."""
    from rlalgos.config import BASE_MODEL_DIR, SHIPPED_PARAMETERS

    n = sum(p.numel() for p in tiny_model(char_tokenizer()).parameters())
    shipped = sum(p.numel() for p in AutoModelForCausalLM.from_pretrained(BASE_MODEL_DIR).parameters())
    assert n == shipped and SHIPPED_PARAMETERS == f"{shipped / 1e6:.2f}M"


def test_save_then_reload_gives_identical_logprobs(tiny, tmp_path):
    model, tok = tiny
    ro = rollout(
        model,
        tok,
        [{"prompt": "12+3=", "answer": "15"}] * 2,
        3,
        addition_task().rewards,
        SamplingConfig(max_new_tokens=10),
    )
    model.save_pretrained(tmp_path)
    tok.save_pretrained(tmp_path)
    again, _ = load_policy(tmp_path, device="cpu")
    torch.testing.assert_close(batched_logprobs(again, ro), ro.old_logprobs, rtol=0, atol=0)


# --------------------------------------------------------------------------- #
# rollout record
# --------------------------------------------------------------------------- #


def test_completion_mask_by_hand():
    eos = 2
    ids = torch.tensor(
        [
            [5, 6, 2, 0, 0],  # EOS at 2: mask up to and including it
            [2, 0, 0, 0, 0],  # EOS first: one token
            [5, 6, 7, 8, 9],  # never ends: truncated, all ones
            [5, 2, 6, 2, 0],  # only the first EOS counts
        ]
    )
    mask, trunc = completion_mask_from_ids(ids, eos)
    assert mask.tolist() == [[1, 1, 1, 0, 0], [1, 0, 0, 0, 0], [1, 1, 1, 1, 1], [1, 1, 0, 0, 0]]
    assert trunc.tolist() == [False, False, True, False]


def test_rollout_record(tiny):
    model, tok = tiny
    rows = [{"prompt": "12+3=", "answer": "15"}, {"prompt": "1+2+30=", "answer": "33"}]
    torch.manual_seed(0)
    ro = rollout(model, tok, rows, 4, addition_task().rewards, SamplingConfig(max_new_tokens=6), ref_model=model)
    N, T = ro.completion_ids.shape
    assert N == 8 and T <= 6 and len(ro.completions) == 8
    assert ro.group_size == 4 and ro.num_groups == 2
    assert ro.prompts[:4] == ["12+3="] * 4 and ro.rows[4]["answer"] == "33"
    # mask: a prefix of ones; ends at EOS or runs to the limit (truncated)
    for i in range(N):
        m = ro.completion_mask[i]
        n = int(m.sum())
        assert m[:n].eq(1).all() and m[n:].eq(0).all()
        ends_eos = ro.completion_ids[i, n - 1].item() == tok.eos_token_id
        assert ends_eos != bool(ro.truncated[i])
        assert ro.completion_ids[i, n:].eq(tok.pad_token_id).all()
    assert set(ro.reward_parts) == {"correct", "format"} and ro.rewards.shape == (N,)
    assert ro.old_logprobs.shape == (N, T) and (ro.old_logprobs <= 0).all()
    torch.testing.assert_close(ro.ref_logprobs, ro.old_logprobs)  # same model
    # select/concat keep the record consistent
    part = ro.select(torch.arange(4, 8))
    assert part.prompts == ["1+2+30="] * 4 and part.completion_ids.shape[0] == 4
    both = Rollout.concat([ro.select(torch.arange(4)), part])
    torch.testing.assert_close(both.rewards, ro.rewards)
    assert both.prompts == ro.prompts and both.num_groups == 2


def test_logprobs_match_what_generate_sampled(tiny):
    """The forward pass used for training gives the generator's own numbers (padding and positions handled)."""
    model, tok = tiny
    enc = tok(["1+2=", "10+20+30="], return_tensors="pt", padding=True)
    out = model.generate(
        **enc,
        do_sample=True,
        top_k=0,
        max_new_tokens=8,
        output_logits=True,
        return_dict_in_generate=True,
        pad_token_id=tok.pad_token_id,
    )
    comp = out.sequences[:, enc["input_ids"].shape[1] :]
    mask, _ = completion_mask_from_ids(comp, tok.eos_token_id)
    gen_lp = torch.log_softmax(torch.stack(out.logits, 1).float(), -1).gather(-1, comp.unsqueeze(-1)).squeeze(-1)
    lp = forward_logprobs(model, enc["input_ids"], enc["attention_mask"], comp, mask)["logprobs"]
    torch.testing.assert_close(lp * mask, gen_lp * mask, atol=1e-4, rtol=0)


# --------------------------------------------------------------------------- #
# the loop
# --------------------------------------------------------------------------- #


def _small_cfg(tmp_path, tiny_dir, **kw):
    base = dict(
        model=str(tiny_dir),
        steps=3,
        prompts_per_step=4,
        group_size=4,
        max_new_tokens=8,
        eval_every=2,
        eval_prompts=4,
        eval_samples=2,
        out_dir=str(tmp_path / "run"),
        progress=False,
    )
    base.update(kw)
    return TrainConfig(**base)


def test_loop_writes_jsonl_and_returns_dataframe(tmp_path, tiny_dir):
    df = train(_small_cfg(tmp_path, tiny_dir))
    assert isinstance(df, pd.DataFrame) and df["step"].tolist() == [0, 1, 2, 3]
    run = tmp_path / "run"
    lines = (run / "metrics.jsonl").read_text().splitlines()
    assert len(lines) == 4
    logged = load_metrics(run)
    for key in (
        "reward_mean",
        "reward_std",
        "accuracy",
        "entropy",
        "kl",
        "clip_frac",
        "completion_len",
        "truncated_frac",
        "zero_std_frac",
        "grad_norm",
        "lr",
        "step_seconds",
        "tokens_per_second",
    ):
        assert key in logged and logged[key].iloc[1:].notna().all(), key
    assert logged["eval_accuracy"].notna().tolist() == [True, False, True, True]
    assert {"eval_greedy_accuracy", "eval_pass@2"} <= set(logged)
    samples = [json.loads(x) for x in (run / "samples.jsonl").read_text().splitlines()]
    assert samples and {"step", "prompt", "completion", "reward", "correct"} <= set(samples[0])
    assert (run / "checkpoint" / "config.json").exists() and (run / "checkpoint" / "trainer_state.pt").exists()
    assert json.loads((run / "config.json").read_text())["train"]["steps"] == 3


def test_eval_entropy_is_the_policys_entropy_on_its_own_test_answers(tiny_dir):
    """``eval_entropy`` = token-weighted mean entropy of the policy on the sampled test
    answers, recomputed here from the same forked random stream; and evaluating
    leaves the caller's random stream untouched."""
    from rlalgos.core import entropy_from_logits
    from rlalgos.train import evaluate

    policy, tok = load_policy(str(tiny_dir), device="cpu")
    task = addition_task()
    rows = task.test[:4]
    torch.manual_seed(11)
    before = torch.rand(1)
    torch.manual_seed(11)
    out = evaluate(policy, tok, task, rows, n_samples=3, max_new_tokens=8, seed=5, greedy=False)
    assert torch.rand(1) == before
    torch.manual_seed(5)
    ro = rollout(policy, tok, rows, 3, task.rewards, SamplingConfig(max_new_tokens=8), old_logprobs=False)
    ent, n = 0.0, 0
    with torch.no_grad():
        for i in range(len(ro.completions)):
            T = int(ro.completion_mask[i].sum())
            ids = torch.cat([ro.prompt_ids[i][ro.prompt_mask[i].bool()], ro.completion_ids[i, :T]])
            logits = policy(ids[None]).logits[0, -T - 1 : -1]  # the logits that predicted each completion token
            ent += float(entropy_from_logits(logits).sum())
            n += T
    assert out["eval_entropy"] == pytest.approx(ent / n, rel=1e-4)


def test_same_seed_same_numbers(tmp_path, tiny_dir):
    a = train(_small_cfg(tmp_path / "a", tiny_dir, seed=3))
    b = train(_small_cfg(tmp_path / "b", tiny_dir, seed=3))
    cols = ["reward_mean", "entropy", "kl", "grad_norm", "completion_len"]
    pd.testing.assert_frame_equal(a[cols], b[cols])


# --------------------------------------------------------------------------- #
# CLI
# --------------------------------------------------------------------------- #


def _help(argv, capsys) -> str:
    with pytest.raises(SystemExit) as e:
        cli.main(argv)
    assert e.value.code == 0
    return capsys.readouterr().out


def test_cli_help_is_per_algorithm_and_exact(capsys):
    grpo = _help(["train", "grpo", "--help"], capsys)
    for opt in (
        "--group-size",
        "--prompts-per-step",
        "--clip-high",
        "--kl-coef",
        "--adv-scale",
        "--seed",
        "--overwrite",
    ):
        assert opt in grpo, opt
    assert "Completions per prompt" in grpo  # help text comes from the field docstrings
    assert (
        "--baseline" not in grpo and "--critic-lr" not in grpo and "--dynamic-sampling" not in grpo
    )  # only GRPO's options
    assert "beta: weight of the k3 KL-to-reference term" in grpo and "[0.04]" in grpo
    assert "--critic-lr" in _help(["train", "ppo", "--help"], capsys)
    reinforce = _help(["train", "reinforce", "--help"], capsys)
    assert "--baseline" in reinforce and "--clip-high" not in reinforce
    assert "[leave_one_out]" in reinforce
    assert "--adv-scale {std,none}" in _help(["train", "drgrpo", "--help"], capsys)  # a fixed set of values is listed
    assert "[none]" in _help(["train", "drgrpo", "--help"], capsys)  # the preset's own default for adv_scale
    assert cli.main(["algos", "grpo"]) == 0  # the whole text of every option, from the field docstrings
    full = " ".join(capsys.readouterr().out.split())
    assert "beta: weight of the k3 KL-to-reference term in the loss" in full and "--kl-coef (default 0.04)" in full
    assert all(_help(["train", "grpo", "--help"], capsys) == grpo for _ in range(4))  # the same text every time


def test_cli_bad_input_is_one_line_exit_2(capsys):
    assert cli.main(["compare", "--algos", "nope"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("rlalgos: error: unknown algorithm 'nope'") and "\n" not in err
    assert cli.main(["train", "grpo", "--group-size", "0"]) == 2
    assert "group_size must be >= 1" in capsys.readouterr().err
    for argv in (
        ["train", "nope"],
        ["train", "nope", "--steps", "3"],
        ["export", "--to", "verl", "nope"],
        ["export", "--overwrite", "nope"],
    ):
        assert cli.main(argv) == 2, argv  # one line naming the algorithms, not tyro's page of usage
        err = capsys.readouterr().err.strip()
        assert (
            err.startswith("rlalgos: error: unknown algorithm 'nope'; choose one of reinforce, ppo, grpo, dapo")
            and "\n" not in err
        ), (argv, err)
    assert "run" in cli.unknown_algorithm(["export", "nope"])  # export also takes `run RUN_DIR`
    assert (
        cli.unknown_algorithm(["export", "--to", "trl", "run", "x"]) is None
        and cli.unknown_algorithm(["train", "--help"]) is None
    )


def test_cli_train_then_plot(tmp_path, tiny_dir, capsys):
    run = tmp_path / "r"
    rc = cli.main(
        [
            "train",
            "reinforce",
            "--model",
            str(tiny_dir),
            "--steps",
            "2",
            "--prompts-per-step",
            "2",
            "--group-size",
            "2",
            "--max-new-tokens",
            "6",
            "--eval-prompts",
            "2",
            "--eval-samples",
            "2",
            "--out-dir",
            str(run),
            "--no-progress",
            "--baseline",
            "batch_mean",
        ]
    )
    assert rc == 0
    saved = json.loads((run / "config.json").read_text())
    assert saved["algo"]["baseline"] == "batch_mean" and saved["train"]["algo"] == "reinforce"
    rc = cli.main(["plot", str(run), "--out", str(tmp_path / "p.png")])
    assert rc == 0 and (tmp_path / "p.png").stat().st_size > 1000


def test_cli_imports_neither_torch_nor_transformers_until_a_command_runs():
    """--help and config errors answer at once because parsing needs only the configs."""
    import subprocess
    import sys

    code = "import sys, rlalgos.tools.cli, rlalgos.config; print(sorted(m for m in ('torch', 'transformers') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"


def test_addition_regimes_from_a_task_spec():
    from rlalgos.tasks import get_task

    hard = get_task("addition:terms=2-6")
    assert {r["n_terms"] for r in hard.test} == {2, 3, 4, 5, 6} and hard.max_new_tokens == 64
    assert not {r["prompt"] for r in hard.test} & {r["prompt"] for r in hard.train}
    assert (
        max(len(r["target"]) for r in hard.train) + 1 <= hard.max_new_tokens
    )  # the longest scratchpad and its EOS fit
    assert get_task("addition:terms=2,5:max_value=9").train[0]["n_terms"] in (2, 5)
    assert get_task("addition:terms=2-6").test == hard.test  # generated with a fixed seed
    for bad in ("addition:terms=1-3", "addition:max_value=9", "addition:terms=2-4:colour=red", "addition:terms=x"):
        with pytest.raises(ValueError, match="addition:terms="):
            get_task(bad)
