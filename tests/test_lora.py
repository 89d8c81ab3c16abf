"""LoRA (``--lora-rank``): only the adapters train, the reference is the same model
with its adapters switched off (exactly the base model, no copy), checkpoints hold
the adapters, resume continues with the same numbers, and a checkpoint loads as a
merged model for ``rlalgos eval``. Without peft, one line says how to install it."""

import json
import sys

import pytest
import torch
from safetensors.torch import load_file

import rlalgos.train as train_mod
from rlalgos.tools import cli
from rlalgos.engine.forward import batched_logprobs
from rlalgos.engine.lora import AdaptersOff, add_lora, has_adapters, load_adapters
from rlalgos.model import load_policy
from rlalgos.rollout import rollout
from rlalgos.engine.sampler import SamplingConfig
from rlalgos.train import TrainConfig, resume, train

pytest.importorskip("peft")

TIMING = ("seconds", "per_second")


def lora_cfg(out_dir, **kw):
    """A short grpo run on the shipped model (right about 40% of the time, so the policy moves), KL in the loss."""
    base = dict(
        algo="grpo",
        lora_rank=4,
        steps=3,
        prompts_per_step=4,
        group_size=4,
        eval_every=0,
        eval_prompts=8,
        eval_samples=1,
        out_dir=str(out_dir),
        progress=False,
        device="cpu",
    )
    return TrainConfig(**{**base, **kw})


def test_reference_logprobs_with_adapters_off_equal_the_base_models(tiny_dir, task):
    policy, tok = load_policy(tiny_dir, device="cpu")
    base, _ = load_policy(tiny_dir, device="cpu")
    lora = add_lora(policy, TrainConfig(lora_rank=4))
    with torch.no_grad():
        for name, p in policy.named_parameters():
            if "lora_B" in name:  # B starts at 0 (adapters off = on): make the adapters matter
                p.normal_(0, 0.5)
    ro = rollout(base, tok, task.train[:4], 3, task.rewards, SamplingConfig(max_new_tokens=8), old_logprobs=False)
    ref = AdaptersOff(lora)
    for chunk in (0, 5):  # the whole LM head at once, and the chunked path through ref.base_model
        on = batched_logprobs(policy, ro, logits_chunk=chunk)
        assert torch.equal(
            batched_logprobs(ref, ro, logits_chunk=chunk), batched_logprobs(base, ro, logits_chunk=chunk)
        )
        assert not torch.allclose(on, batched_logprobs(base, ro, logits_chunk=chunk), atol=1e-3)
        assert torch.equal(batched_logprobs(policy, ro, logits_chunk=chunk), on)  # the adapters are back on afterwards
    assert {id(p) for p in ref.parameters()} == {id(p) for p in policy.parameters()}  # the same weights, not a copy


def test_only_the_adapters_train_and_the_reference_is_no_copy(tmp_path, monkeypatch):
    policy, tok = load_policy(None, device="cpu")
    start = {p: p.detach().clone() for p in policy.parameters()}  # by identity: peft renames the wrapped weights
    refs = []
    make_rollout = train_mod.rollout
    monkeypatch.setattr(train_mod, "frozen_copy", lambda model: pytest.fail("a reference copy was made"))
    monkeypatch.setattr(
        train_mod, "rollout", lambda *a, **kw: refs.append(kw.get("ref_model")) or make_rollout(*a, **kw)
    )
    df = train(lora_cfg(tmp_path / "run"), policy=policy, tokenizer=tok)
    assert all(torch.equal(p, before) for p, before in start.items())  # every base weight bit-identical
    adapters = {n: p for n, p in policy.named_parameters() if p.requires_grad}
    assert (
        adapters
        and all("lora_" in n for n in adapters)
        and len(adapters) + len(start) == len(list(policy.parameters()))
    )
    assert any(p.abs().max() > 0 for n, p in adapters.items() if "lora_B" in n)  # B started at 0: the adapters trained
    refs = [r for r in refs if r is not None]  # training rollouts (the eval ones score no reference)
    assert len(refs) == 3 and all(isinstance(r, AdaptersOff) and r.module is policy for r in refs)
    assert df["kl"].iloc[-1] > 0  # measured against the adapters-off model
    state = torch.load(tmp_path / "run" / "checkpoint" / "trainer_state.pt", weights_only=False)["algo"]["optimizer"]
    assert (
        len(state["param_groups"][0]["params"]) == len(state["state"]) == len(adapters)
    )  # the optimizer holds only the adapters
    ckpt = tmp_path / "run" / "checkpoint"
    assert (ckpt / "adapter_config.json").is_file() and not (ckpt / "model.safetensors").exists()
    saved = load_file(ckpt / "adapter_model.safetensors")
    assert len(saved) == len(adapters) and all("lora_" in k for k in saved)


@pytest.fixture(scope="module")
def lora_runs(tmp_path_factory):
    """The same LoRA run (dropout on, so the RNG matters too) uninterrupted and stopped after 2 steps then resumed."""
    d = tmp_path_factory.mktemp("lora")
    kw = dict(steps=4, save_every=2, lora_dropout=0.1)
    full = train(lora_cfg(d / "full", **kw))
    train(lora_cfg(d / "cut", **{**kw, "steps": 2}))
    resumed = resume(d / "cut", steps=4)
    return d, full, resumed


def test_resume_gives_the_rows_of_an_uninterrupted_run(lora_runs):
    d, full, resumed = lora_runs
    cols = [c for c in full.columns if not c.endswith(TIMING) and not c.startswith("eval_")]
    evals = [c for c in full.columns if c.startswith("eval_")]
    assert resumed["step"].tolist() == full["step"].tolist() == [0, 1, 2, 3, 4]
    assert resumed[cols].equals(full[cols]), resumed[cols].compare(full[cols])  # every training number, bit for bit
    assert resumed.loc[[0, 4], evals].equals(
        full.loc[[0, 4], evals]
    )  # the evaluations both runs made (the cut run also evaluated at its end, step 2)
    a, b = (load_file(d / run / "checkpoint" / "adapter_model.safetensors") for run in ("full", "cut"))
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_a_lora_checkpoint_loads_merged_and_evaluates(lora_runs, task, tmp_path, capsys):
    d, _, _ = lora_runs
    ckpt = d / "full" / "checkpoint"
    merged, tok = load_policy(ckpt, device="cpu")  # the base model the adapter config names, adapters merged in
    assert not has_adapters(merged) and json.loads((ckpt / "adapter_config.json").read_text())[
        "base_model_name_or_path"
    ].startswith("/")
    policy, _ = load_policy(None, device="cpu")
    load_adapters(add_lora(policy, lora_cfg(tmp_path, lora_dropout=0.1)), ckpt)  # the trained LoRA policy, rebuilt
    ro = rollout(merged, tok, task.test[:4], 2, task.rewards, SamplingConfig(max_new_tokens=12), old_logprobs=False)
    torch.testing.assert_close(batched_logprobs(merged, ro), batched_logprobs(policy, ro), atol=1e-5, rtol=0)
    merged.save_pretrained(tmp_path / "export")  # the export of a final model: a plain model folder
    tok.save_pretrained(tmp_path / "export")
    again, _ = load_policy(tmp_path / "export", device="cpu")
    assert torch.equal(batched_logprobs(again, ro), batched_logprobs(merged, ro))
    assert (
        cli.main(["eval", "--model", str(ckpt), "--prompts", "2", "--samples", "1", "--show", "0", "--device", "cpu"])
        == 0
    )
    assert "eval_accuracy" in capsys.readouterr().out


def one_line_error(capsys, argv, needle):
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("rlalgos: error:") and needle in err and "\n" not in err, err


def test_without_peft_and_with_ppo_lora_is_a_one_line_error(tmp_path, capsys, monkeypatch, lora_runs):
    run = ["--lora-rank", "4", "--out-dir", str(tmp_path / "run"), "--no-progress", "--device", "cpu"]
    one_line_error(capsys, ["train", "ppo", *run], "a LoRA critic is not supported")
    monkeypatch.setitem(sys.modules, "peft", None)  # as if the lora extra were not installed
    one_line_error(capsys, ["train", "grpo", *run], "pip install rlalgos[lora]")
    one_line_error(
        capsys,
        ["eval", "--model", str(lora_runs[0] / "full" / "checkpoint"), "--device", "cpu"],
        "pip install rlalgos[lora]",
    )
    assert not (tmp_path / "run").exists()


def test_help_shows_the_lora_options(capsys):
    with pytest.raises(SystemExit):
        cli.main(["train", "grpo", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for opt in ("--lora-rank", "--lora-alpha", "--lora-dropout", "--lora-targets", "all-linear"):
        assert opt in text, opt
    assert cli.main(["algos", "grpo"]) == 0
    assert "pip install rlalgos[lora]" in capsys.readouterr().out  # the option's whole text


def test_lora_exports_to_verl_and_is_named_missing_for_trl():
    from rlalgos.algorithms import make_config
    from rlalgos.tools.export.trl import trl_settings
    from rlalgos.tools.export.verl import verl_overrides
    from rlalgos.tools.export.verl_files import compose_verl, hydra_value, verl_config_dir

    cfg = TrainConfig(algo="grpo", lora_rank=8, lora_targets="q_proj,v_proj", device="cpu")
    values, _ = verl_overrides(cfg, make_config("grpo"))
    lora = {
        k: v
        for k, v in values.items()
        if k.startswith("actor_rollout_ref.model.") and "path" not in k and "template" not in k
    }
    assert lora == {
        "actor_rollout_ref.model.lora_rank": 8,
        "actor_rollout_ref.model.lora_alpha": 16,
        "actor_rollout_ref.model.target_modules": ["q_proj", "v_proj"],
    }
    _, _, trl = trl_settings(cfg, make_config("grpo"))
    assert any("LoRA is not exported to TRL" in n for n in trl.notes)
    assert not any(
        "lora" in n for n in trl_settings(TrainConfig(algo="grpo", device="cpu"), make_config("grpo"))[2].notes
    )  # LoRA off: nothing to say
    pytest.importorskip("hydra")
    if verl_config_dir() is None:
        pytest.skip("verl is not installed (pip install --no-deps verl)")
    composed = compose_verl([f"{k}={hydra_value(v)}" for k, v in lora.items()])
    assert (
        composed.actor_rollout_ref.model.lora_rank,
        composed.actor_rollout_ref.model.lora_alpha,
        list(composed.actor_rollout_ref.model.target_modules),
    ) == (8, 16, ["q_proj", "v_proj"])


def test_lora_on_bfloat16_weights_keeps_float32_adapters(tiny_dir):
    """The memory-saving combination: the frozen base in bf16, the trained adapters in float32 (nothing rounded away)."""
    from rlalgos.engine.forward import forward_logprobs

    policy, tok = load_policy(tiny_dir, device="cpu", dtype="bfloat16-weights")
    add_lora(policy, TrainConfig(lora_rank=4))
    assert {(p.requires_grad, p.dtype) for p in policy.parameters()} == {(True, torch.float32), (False, torch.bfloat16)}
    ids = torch.randint(4, len(tok), (2, 6))
    out = forward_logprobs(policy, ids, torch.ones_like(ids), ids, torch.ones(2, 6))
    out["logprobs"].sum().backward()
    assert all(p.grad is not None and p.grad.dtype == torch.float32 for p in policy.parameters() if p.requires_grad)
