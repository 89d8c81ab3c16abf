"""What a real instruct model needs, checked on small local stand-ins: every stop id
of its generation config ends an answer (Qwen2.5-Instruct lists two), the chat
template, and the knobs of a run on a big model (top-p, dtype, the scoring batch,
the learning-rate warning)."""

import inspect
import json
from dataclasses import replace

import pytest
import torch

from rlalgos.tools import cli
from rlalgos.config import TrainConfig, lr_warning, make_config
from rlalgos.engine.precision import resolve_precision
from rlalgos.engine.runs import load_run_config
from rlalgos.model import char_tokenizer, load_policy, tiny_model
from rlalgos.record import completion_mask_from_ids, decode_completions
from rlalgos.rollout import rollout
from rlalgos.engine.sampler import SamplingConfig, encode_prompts, generate, stop_token_ids
from rlalgos.tasks import addition_task
from rlalgos.train import resume, train

IM_END = "<|im_end|>"
TEMPLATE = (
    "{% for m in messages %}User: {{ m['content'] }}\n{% endfor %}{% if add_generation_prompt %}Assistant:{% endif %}"
)


def _save_model(d, chat_template: str | None = None):
    """A random tiny model whose generation config stops on ``<eos>`` and on an
    added ``<|im_end|>`` that the tokenizer does not know as its EOS (as
    Qwen2.5-Instruct's tokenizer does not know ``<|endoftext|>``)."""
    tok = char_tokenizer()
    tok.add_special_tokens({"additional_special_tokens": [IM_END]})
    if chat_template:
        tok.chat_template = chat_template
    model = tiny_model(tok, seed=0, hidden=32, layers=1, heads=2, intermediate=64)
    model.generation_config.eos_token_id = [tok.eos_token_id, tok.convert_tokens_to_ids(IM_END)]
    model.save_pretrained(d)
    tok.save_pretrained(d)
    return d


@pytest.fixture(scope="module")
def two_eos_dir(tmp_path_factory):
    return _save_model(tmp_path_factory.mktemp("two_eos"), TEMPLATE)


@pytest.fixture(scope="module")
def two_eos(two_eos_dir):
    return load_policy(two_eos_dir, device="cpu")


# --------------------------------------------------------------------------- #
# stop tokens
# --------------------------------------------------------------------------- #


def test_stop_ids_are_the_tokenizers_eos_and_every_generation_config_eos(two_eos, tiny):
    model, tok = two_eos
    im_end = tok.convert_tokens_to_ids(IM_END)
    assert model.generation_config.eos_token_id == [tok.eos_token_id, im_end]  # survives save/load
    assert stop_token_ids(model, tok) == sorted([tok.eos_token_id, im_end])
    assert stop_token_ids(*tiny) == [tiny[1].eos_token_id]  # one eos: the set is just it


def test_second_stop_id_has_the_first_ones_mask_and_length_rules():
    eos, im_end = 2, 9
    ids = torch.tensor(
        [
            [5, 6, 2, 0, 0],  # ends in the first id
            [5, 6, 9, 0, 0],  # ends in the second: the same mask, not truncated
            [9, 0, 0, 0, 0],
            [5, 9, 6, 2, 0],  # the first stop of either kind counts
            [5, 6, 7, 8, 5],  # never stops: truncated
        ]
    )
    mask, trunc = completion_mask_from_ids(ids, [eos, im_end])
    assert mask.tolist() == [[1, 1, 1, 0, 0], [1, 1, 1, 0, 0], [1, 0, 0, 0, 0], [1, 1, 0, 0, 0], [1, 1, 1, 1, 1]]
    assert trunc.tolist() == [False, False, False, False, True]


@pytest.mark.parametrize("sampler", ["compact", "hf"])
def test_answers_ending_in_either_stop_id_are_finished(two_eos, sampler):
    """A near-uniform random model ends some answers in <eos>, some in <|im_end|>,
    and runs others to the limit: each stop id ends the answer in the sampler, the
    mask, the length, the truncation flag and the decoded text alike."""
    model, tok = two_eos
    eos, im_end = tok.eos_token_id, tok.convert_tokens_to_ids(IM_END)
    rows = [{"prompt": p, "answer": "0"} for p in ("1+2=", "12+30=", "5+5+5=", "9+1=")]
    torch.manual_seed(0)
    T = 8
    ro = rollout(
        model,
        tok,
        rows,
        32,
        addition_task().rewards,
        SamplingConfig(max_new_tokens=T, sampler=sampler),
        old_logprobs=False,
    )
    ends = []
    for i in range(len(ro)):
        n = int(ro.completion_mask[i].sum())
        assert n == ro.lengths[i].item() and ro.completion_mask[i, :n].eq(1).all()
        ids = ro.completion_ids[i]
        body = ids[: n - 1].tolist()
        assert eos not in body and im_end not in body  # nothing stopped earlier
        assert ids[n:].eq(tok.pad_token_id).all()  # the sampler stopped (or blanked) after the stop token
        last = ids[n - 1].item()
        ends.append(last if last in (eos, im_end) else None)
        assert bool(ro.truncated[i]) == (ends[-1] is None)
        if ends[-1] is None:
            assert n == T
        # the reward functions see the tokens before the stop token
        assert ro.completions[i] == tok.decode(body + ([] if ends[-1] else [last]), skip_special_tokens=True)
        assert IM_END not in ro.completions[i]
    assert ends.count(im_end) >= 3 and ends.count(eos) >= 3 and ends.count(None) >= 3, ends
    assert ro.stats()["truncated_frac"] == pytest.approx(ends.count(None) / len(ends))


def test_decoded_text_leaves_out_a_stop_token_that_is_not_special(tiny):
    """Whatever id the generation config lists, the text ends before it."""
    model, tok = tiny
    bang = tok.convert_tokens_to_ids("!")
    ids = torch.tensor([[tok.convert_tokens_to_ids("#"), tok.convert_tokens_to_ids("7"), bang, tok.pad_token_id]])
    mask, trunc = completion_mask_from_ids(ids, [tok.eos_token_id, bang])
    assert decode_completions(tok, ids, mask, [tok.eos_token_id, bang]) == ["#7"] and not trunc.item()


# --------------------------------------------------------------------------- #
# chat template
# --------------------------------------------------------------------------- #


def test_chat_template_wraps_the_task_prompt(two_eos):
    model, tok = two_eos
    plain = encode_prompts(tok, ["12+3="])
    chat = encode_prompts(tok, ["12+3=", "1+2+3="], chat_template=True)
    assert tok.decode(plain["input_ids"][0]) == "<bos>12+3="
    # the template's text and nothing added on top of it (no second BOS), left-padded
    texts = tok.batch_decode(chat["input_ids"], skip_special_tokens=True)
    assert texts == ["User: 12+3=\nAssistant:", "User: 1+2+3=\nAssistant:"]
    assert chat["input_ids"][0, 0].item() == tok.pad_token_id and chat["attention_mask"][1].all()
    prompt_ids, _, _ = generate(model, tok, ["12+3="], SamplingConfig(max_new_tokens=4, chat_template=True))
    assert tok.decode(prompt_ids[0], skip_special_tokens=True) == "User: 12+3=\nAssistant:"


def test_chat_template_without_one_is_a_one_line_error(tiny, tiny_dir, tmp_path, capsys):
    model, tok = tiny
    with pytest.raises(ValueError, match="tokenizer has no chat template; drop --chat-template"):
        encode_prompts(tok, ["1+2="], chat_template=True)
    out = tmp_path / "run"
    with pytest.raises(ValueError, match="no chat template"):
        train(TrainConfig(model=str(tiny_dir), chat_template=True, steps=1, out_dir=str(out), progress=False))
    assert not out.exists()  # failed before the run folder was touched
    assert (
        cli.main(["train", "grpo", "--model", str(tiny_dir), "--chat-template", "--out-dir", str(out), "--no-progress"])
        == 2
    )
    err = capsys.readouterr().err.strip()
    assert err.startswith("rlalgos: error:") and "chat template" in err and "\n" not in err


# --------------------------------------------------------------------------- #
# the knobs of a run on a big model
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize(
    "bad, message",
    [
        ({"top_p": 0.0}, "top_p must be in (0, 1]"),
        ({"top_p": 1.5}, "top_p must be in (0, 1]"),
        ({"score_batch_size": 0}, "score_batch_size must be >= 1"),
        ({"dtype": "fp8"}, "unknown dtype 'fp8'"),
    ],
)
def test_new_knobs_are_validated(bad, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace("]", r"\]")):
        TrainConfig(**bad).validate()


def test_help_shows_the_new_knobs(capsys):
    with pytest.raises(SystemExit):
        cli.main(["train", "grpo", "--help"])
    text = capsys.readouterr().out
    for opt in ("--top-p", "--dtype", "--score-batch-size", "--chat-template"):
        assert opt in text, opt
    assert cli.main(["algos", "grpo"]) == 0  # the whole text of each option
    assert "the policy whose log-probs the ratio and the KL use" in " ".join(
        capsys.readouterr().out.split()
    )  # top_p says what the log-probs are


def test_dtype_is_how_the_model_is_loaded_and_run(tiny_dir):
    cpu, cuda = torch.device("cpu"), torch.device("cuda")
    assert resolve_precision("auto", cpu) == (torch.float32, None)
    assert (
        resolve_precision("auto", cuda) == resolve_precision("bfloat16", cpu) == (torch.float32, torch.bfloat16)
    )  # fp32 master weights, bf16 autocast
    assert resolve_precision("bfloat16-weights", cuda) == (torch.bfloat16, None)
    model, _ = load_policy(tiny_dir, device="cpu", dtype="bfloat16")
    assert model.dtype == torch.float32 and not hasattr(
        model, "rlalgos_autocast"
    )  # the model carries no precision setting: the run's forward passes do
    model, _ = load_policy(tiny_dir, device="cpu", dtype="bfloat16-weights")
    assert model.dtype == torch.bfloat16
    for bad in ("half", "float16"):
        with pytest.raises(ValueError, match="unknown dtype"):
            load_policy(tiny_dir, device="cpu", dtype=bad)


def test_lr_warning_for_big_models_at_the_default_lr():
    line = lr_warning(500_000_000, "grpo", make_config("grpo"))
    assert "1e-06" not in line and "1e-6" in line and "--lr" in line and "500M" in line and "TRL and verl" in line
    assert lr_warning(500_000_000, "grpo", make_config("grpo", lr=1e-6)) == ""
    assert lr_warning(865_920, "grpo", make_config("grpo")) == ""  # the shipped model
    assert "--critic-lr" in lr_warning(500_000_000, "ppo", make_config("ppo"))


def test_run_knobs_reach_sampling_scoring_config_and_resume(two_eos_dir, tmp_path, monkeypatch, capsys):
    """top_p reaches every sampling call, score_batch_size every no-grad scoring
    pass (rollout, REINFORCE's own, eval), dtype the weights and the sampler's autocast, chat_template
    the prompts; config.json records them and resume runs with them. A model
    counted above 50M parameters at the default lr gets the warning."""
    import rlalgos.engine.sampler
    import rlalgos.engine.settings
    import rlalgos.rollout
    import rlalgos.train

    _, tok = load_policy(two_eos_dir, device="cpu")
    seen = {"top_p": set(), "batch": set(), "dtype": set(), "chat": set()}
    expected = {
        "top_p": {0.9},
        "batch": {3},
        "dtype": {(torch.float32, torch.bfloat16)},
        "chat": {True},
    }  # fp32 weights sampled under bf16 autocast

    def spy_sampler(fn):
        def wrapped(model, input_ids, *args, **kw):
            seen["top_p"].add(inspect.signature(fn).bind(model, input_ids, *args, **kw).arguments.get("top_p"))
            seen["dtype"].add((model.dtype, torch.is_autocast_enabled("cpu") and torch.get_autocast_dtype("cpu")))
            seen["chat"].update(t.startswith("User: ") for t in tok.batch_decode(input_ids, skip_special_tokens=True))
            return fn(model, input_ids, *args, **kw)

        return wrapped

    def spy_scorer(fn):
        def wrapped(model, ro, batch_size=512, **kw):
            seen["batch"].add(batch_size)
            return fn(model, ro, batch_size, **kw)

        return wrapped

    monkeypatch.setattr(
        rlalgos.engine.sampler, "sample_completions", spy_sampler(rlalgos.engine.sampler.sample_completions)
    )
    for mod, name in (
        (rlalgos.rollout, "batched_stats"),
        (rlalgos.engine.settings, "batched_logprobs"),  # the evaluation's and the algorithm's scoring passes
    ):
        monkeypatch.setattr(mod, name, spy_scorer(getattr(mod, name)))
    monkeypatch.setattr(rlalgos.train, "count_parameters", lambda m: 60_000_000)
    run = tmp_path / "run"
    cfg = TrainConfig(
        model=str(two_eos_dir),
        steps=2,
        prompts_per_step=2,
        group_size=3,
        max_new_tokens=6,
        eval_every=0,
        eval_prompts=2,
        eval_samples=2,
        save_every=1,
        out_dir=str(run),
        progress=False,
        top_p=0.9,
        score_batch_size=3,
        dtype="bfloat16",
        chat_template=True,
    )
    train(cfg, make_config("reinforce", kl_coef=0.05))
    assert "rlalgos: warning: lr is the default 0.0001" in capsys.readouterr().err
    assert seen == expected
    saved = json.loads((run / "config.json").read_text())["train"]
    assert {k: saved[k] for k in ("top_p", "score_batch_size", "dtype", "chat_template")} == {
        "top_p": 0.9,
        "score_batch_size": 3,
        "dtype": "bfloat16",
        "chat_template": True,
    }
    assert json.loads((run / "checkpoint" / "config.json").read_text())["dtype"] == "float32"  # the master weights
    samples = [json.loads(line) for line in (run / "samples.jsonl").read_text().splitlines()]
    assert samples and all(not s["prompt"].startswith("User:") for s in samples)  # the logs keep the task's prompt
    for v in seen.values():
        v.clear()
    df = resume(run, steps=3)
    assert df["step"].max() == 3 and load_run_config(run)[0] == replace(cfg, steps=3)
    assert seen == expected


def test_eval_cli_passes_top_p_to_the_sampled_eval(tiny_dir, monkeypatch, capsys):
    import rlalgos.train as train_mod
    from rlalgos.tools import cli

    seen = {}
    real = train_mod.evaluate
    monkeypatch.setattr(train_mod, "evaluate", lambda *a, **k: seen.update(k) or real(*a, **k))
    assert (
        cli.main(
            [
                "eval",
                "--model",
                str(tiny_dir),
                "--top-p",
                "0.9",
                "--prompts",
                "2",
                "--samples",
                "2",
                "--show",
                "0",
                "--device",
                "cpu",
            ]
        )
        == 0
    )
    assert seen["top_p"] == 0.9 and '"eval_accuracy"' in capsys.readouterr().out
