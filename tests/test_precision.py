"""Mixed precision the standard way (``--dtype bfloat16``, and ``auto`` on CUDA): float32
master weights that the optimizer updates, every forward pass under bf16 autocast,
float32 log-probs; checked on CPU, where torch runs bf16 autocast too."""

import pytest
import torch
from safetensors.torch import load_file

from rlalgos.engine.forward import forward_logprobs
from rlalgos.engine.precision import resolve_precision
from rlalgos.model import load_policy
from rlalgos.engine.sampler import SamplingConfig, generate
from rlalgos.train import TrainConfig, train


def batch(vocab: int, N: int = 4, P: int = 5, T: int = 7):
    g = torch.Generator().manual_seed(0)
    prompt_ids, completion_ids = (
        torch.randint(4, vocab, (N, P), generator=g),
        torch.randint(4, vocab, (N, T), generator=g),
    )
    return prompt_ids, torch.ones(N, P, dtype=torch.long), completion_ids, torch.ones(N, T)


@pytest.fixture
def linear_outputs():
    """(grad enabled, output dtype) of every nn.Linear call (any model's) while the test runs."""
    seen = []
    hook = lambda m, i, o: seen.append((torch.is_grad_enabled(), o.dtype)) if isinstance(m, torch.nn.Linear) else None  # noqa: E731
    handle = torch.nn.modules.module.register_module_forward_hook(hook)
    yield seen
    handle.remove()


def test_bfloat16_runs_float32_weights_under_autocast(tiny_dir, linear_outputs):
    model, tok = load_policy(tiny_dir, device="cpu", dtype="bfloat16")
    fp32, _ = load_policy(tiny_dir, device="cpu", dtype="float32")
    assert model.dtype == fp32.dtype == torch.float32 and resolve_precision("bfloat16", model.device) == (
        torch.float32,
        torch.bfloat16,
    )
    seen = linear_outputs
    args = batch(len(tok))
    out = forward_logprobs(model, *args, with_entropy=True, autocast_dtype=torch.bfloat16)
    assert set(seen) == {(True, torch.bfloat16)}  # the matmuls ran in bf16
    ref = forward_logprobs(fp32, *args, with_entropy=True)
    assert seen[-1] == (True, torch.float32)
    assert out["logprobs"].dtype == out["entropy"].dtype == torch.float32  # the log-probs did not
    assert not torch.equal(out["logprobs"], ref["logprobs"])
    torch.testing.assert_close(
        out["logprobs"], ref["logprobs"], atol=0.05, rtol=0.02
    )  # bf16 rounding, not a different model
    seen.clear()
    generate(model, tok, ["1+2=", "3+4="], SamplingConfig(max_new_tokens=3, autocast_dtype=torch.bfloat16))
    assert seen and set(seen) == {(False, torch.bfloat16)}  # the sampler's forward too


def test_a_step_bf16_weights_round_away_changes_the_float32_master_weights(tiny_dir):
    """AdamW moves every weight by about lr: at lr 1e-6 that is far below a bf16 weight's
    resolution (about 1/256 of it), so bf16 weights keep almost all their values, while
    the float32 master weights of the mixed-precision scheme take the step."""
    changed = {}
    for dtype in ("bfloat16", "bfloat16-weights"):
        model, tok = load_policy(tiny_dir, device="cpu", dtype=dtype)
        before = {n: p.detach().clone() for n, p in model.named_parameters()}
        opt = torch.optim.AdamW(model.parameters(), lr=1e-6)
        (
            -forward_logprobs(model, *batch(len(tok)), autocast_dtype=resolve_precision(dtype, model.device)[1])[
                "logprobs"
            ].mean()
        ).backward()
        opt.step()
        moved = [
            (p.detach() != before[n]).float().mean().item()
            for n, p in model.named_parameters()
            if p.grad is not None and p.grad.abs().max() > 0
        ]
        changed[dtype] = sum(moved) / len(moved)
        assert all(p.dtype == (torch.float32 if dtype == "bfloat16" else torch.bfloat16) for p in model.parameters())
    assert changed["bfloat16"] > 0.9 and changed["bfloat16-weights"] < 0.1, changed


@pytest.mark.parametrize("algo", ["grpo", "ppo"])
def test_training_in_bfloat16_keeps_float32_weights(tmp_path, linear_outputs, algo):
    """Two steps with --dtype bfloat16 on (a fresh copy of) the shipped model, whose
    answers are sometimes right, so the policy moves: the update's forward runs under
    autocast (PPO's critic too), the losses are finite, the weights and the checkpoint stay float32."""
    policy, tok = load_policy(None, device="cpu", dtype="bfloat16")
    start = {n: p.detach().clone() for n, p in policy.named_parameters()}
    cfg = TrainConfig(
        algo=algo,
        dtype="bfloat16",
        steps=2,
        prompts_per_step=4,
        group_size=4,
        eval_every=0,
        eval_prompts=2,
        eval_samples=1,
        out_dir=str(tmp_path / "run"),
        progress=False,
    )
    df = train(cfg, policy=policy, tokenizer=tok)
    assert df["loss"].iloc[1:].notna().all() and torch.isfinite(torch.tensor(df["loss"].iloc[1:].values)).all()
    assert set(linear_outputs) == {
        (True, torch.bfloat16),
        (False, torch.bfloat16),
    }  # every matmul of the policy (and the critic), with grad or not
    assert all(p.dtype == torch.float32 for p in policy.parameters())
    assert any(not torch.equal(p, start[n]) for n, p in policy.named_parameters())
    assert {t.dtype for t in load_file(tmp_path / "run" / "checkpoint" / "model.safetensors").values()} == {
        torch.float32
    }
    if algo == "ppo":
        state = torch.load(tmp_path / "run" / "checkpoint" / "trainer_state.pt", weights_only=False)
        assert {t.dtype for t in state["algo"]["critic"].values()} == {torch.float32}
