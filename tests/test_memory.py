"""Memory bounded by a chunk, not by the vocabulary: the chunked LM head gives the
same log-probs, entropies, gradients and training rows as the unchunked one, keeps
no full-vocabulary tensor for the backward, and a run holds a reference copy only
when a KL to it is trained on or logged."""

from types import SimpleNamespace

import pytest
import torch

import rlalgos.train as train_mod
from rlalgos.engine.forward import batched_logprobs, forward_logprobs, plain_lm_head
from rlalgos.model import load_policy
from rlalgos.rollout import rollout
from rlalgos.engine.sampler import SamplingConfig
from rlalgos.train import TrainConfig, resume, train

N, P, T = 4, 6, 9  # 36 completion tokens: chunks of 1, 5, 7, 16 and 35 leave a remainder


def batch(vocab: int):
    """Left-padded prompts and right-padded completions: (N, P) and (N, T) ids and masks."""
    g = torch.Generator().manual_seed(0)
    prompt_ids, completion_ids = (
        torch.randint(4, vocab, (N, P), generator=g),
        torch.randint(4, vocab, (N, T), generator=g),
    )
    prompt_mask, completion_mask = torch.ones(N, P, dtype=torch.long), torch.ones(N, T)
    prompt_mask[0, :3] = 0
    completion_mask[1, 5:] = 0
    return prompt_ids, prompt_mask, completion_ids, completion_mask


@pytest.mark.parametrize("chunk", [1, 5, 7, 16, 35])
@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_chunked_logprobs_and_entropy_equal_unchunked(tiny, chunk, temperature):
    model, tok = tiny
    args = batch(len(tok))
    with torch.no_grad():
        full = forward_logprobs(model, *args, temperature, with_entropy=True)
        chunked = forward_logprobs(model, *args, temperature, with_entropy=True, logits_chunk=chunk)
    torch.testing.assert_close(chunked["logprobs"], full["logprobs"], atol=1e-5, rtol=0)
    torch.testing.assert_close(chunked["entropy"], full["entropy"], atol=1e-5, rtol=0)


def test_batched_logprobs_chunked_equal_unchunked(tiny, task):
    model, tok = tiny
    ro = rollout(model, tok, task.train[:4], 3, task.rewards, SamplingConfig(max_new_tokens=8), old_logprobs=False)
    logp, ent = batched_logprobs(model, ro, with_entropy=True)
    logp_c, ent_c = batched_logprobs(model, ro, with_entropy=True, logits_chunk=5)
    torch.testing.assert_close(logp_c, logp, atol=1e-5, rtol=0)
    torch.testing.assert_close(ent_c, ent, atol=1e-5, rtol=0)


@pytest.mark.parametrize("chunk", [1, 7, 16])
@pytest.mark.parametrize("entropy_grad,temperature", [(False, 1.0), (True, 1.0), (True, 0.7), (False, 1.3)])
def test_chunked_gradients_equal_unchunked(tiny, chunk, entropy_grad, temperature):
    """d loss / d parameters through the recomputed chunks equals the unchunked gradient,
    the entropy bonus's included (DAPO's entropy_grad); without it the entropy stays detached."""
    model, tok = tiny
    args = batch(len(tok))
    weights = torch.randn(N, T)

    def grads(logits_chunk):
        model.zero_grad(set_to_none=True)
        out = forward_logprobs(
            model, *args, temperature, with_entropy=True, entropy_grad=entropy_grad, logits_chunk=logits_chunk
        )
        assert out["entropy"].requires_grad == entropy_grad
        loss = (out["logprobs"] * weights * args[3]).sum() + (
            0.3 * (out["entropy"] * args[3]).sum() if entropy_grad else 0.0
        )
        loss.backward()
        g = {n: p.grad.clone() for n, p in model.named_parameters()}
        model.zero_grad(set_to_none=True)
        return g

    full, chunked = grads(0), grads(chunk)
    assert any(g.abs().max() > 0 for g in full.values())
    for name in full:
        torch.testing.assert_close(chunked[name], full[name], atol=1e-5, rtol=1e-4, msg=name)


def test_chunked_forward_keeps_no_vocabulary_sized_tensor_for_the_backward(tiny):
    """Unchunked, autograd holds the (N, T+1, V) logits until the backward; chunked, the
    only tensors it holds outside the recomputed chunks are the transformer's and the
    (N*T, H) hidden states: nothing with a vocabulary dimension."""
    model, tok = tiny
    V, args = len(tok), batch(len(tok))
    assert V not in (
        N,
        P,
        T,
        P + T,
        N * T,
        model.config.hidden_size,
        model.config.intermediate_size,
    )  # a V-sized dim can only be the vocabulary

    def saved_shapes(logits_chunk):
        shapes = []
        with torch.autograd.graph.saved_tensors_hooks(lambda t: shapes.append(tuple(t.shape)) or t, lambda t: t):
            forward_logprobs(model, *args, with_entropy=True, logits_chunk=logits_chunk)
        return shapes

    assert any(V in s for s in saved_shapes(0))
    assert not any(V in s for s in saved_shapes(8))


def test_models_that_rescale_their_logits_take_the_unchunked_path(tiny):
    model, _ = tiny
    assert plain_lm_head(model)
    for key, value in (("final_logit_softcapping", 30.0), ("logit_scale", 0.0625), ("logits_scaling", 8.0)):
        assert not plain_lm_head(SimpleNamespace(config=SimpleNamespace(**{key: value})))  # Gemma 2, Cohere, Granite


def cfg_for(tmp_path, tiny_dir, name, **kw):
    base = dict(
        model=str(tiny_dir),
        steps=2,
        prompts_per_step=2,
        group_size=4,
        max_new_tokens=8,
        eval_every=0,
        eval_prompts=4,
        eval_samples=2,
        out_dir=str(tmp_path / name),
        progress=False,
    )
    return TrainConfig(**{**base, **kw})


@pytest.mark.parametrize(
    "algo,algo_kw",
    [
        ("grpo", {}),  # KL to the reference in the loss
        (
            "dapo",
            {"entropy_threshold": 100.0, "minibatches": 2, "dynamic_sampling": "off"},
        ),  # entropy bonus on from step 2; old log-probs
    ],
)
def test_training_with_chunks_gives_the_same_rows(tmp_path, tiny_dir, algo, algo_kw):
    from rlalgos.algorithms import make_config

    rows = [
        train(cfg_for(tmp_path, tiny_dir, f"c{c}", algo=algo, logits_chunk=c), make_config(algo, **algo_kw))
        for c in (0, 5)
    ]
    if algo == "dapo":
        assert rows[0]["entropy_bonus_active"].tolist()[1:] == [0.0, 1.0]
    numbers = [c for c in rows[0].columns if rows[0][c].dtype.kind == "f" and not c.endswith(("seconds", "per_second"))]
    assert {"loss", "grad_norm", "entropy", "eval_entropy"} <= set(numbers)
    for c in numbers:
        torch.testing.assert_close(
            torch.tensor(rows[1][c].values),
            torch.tensor(rows[0][c].values),
            atol=1e-5,
            rtol=1e-4,
            equal_nan=True,
            msg=c,
        )


@pytest.fixture
def reference_copies(monkeypatch):
    """Every reference copy ``train`` makes, in order."""
    copies = []
    make = train_mod.frozen_copy
    monkeypatch.setattr(train_mod, "frozen_copy", lambda model: copies.append(make(model)) or copies[-1])
    return copies


@pytest.mark.parametrize(
    "algo,log_kl,copies", [("dapo", False, 0), ("dapo", True, 1), ("grpo", False, 1), ("reinforce", False, 0)]
)
def test_reference_copy_only_when_needed(tmp_path, tiny_dir, reference_copies, algo, log_kl, copies):
    df = train(cfg_for(tmp_path, tiny_dir, "run", algo=algo, log_kl=log_kl, steps=1))
    assert len(reference_copies) == copies
    assert ("kl" in df.columns) == bool(copies)  # the KL is measured exactly when there is a reference


def test_resumed_run_keeps_the_starting_policy_as_reference(tmp_path, reference_copies):
    # the shipped base model: right about 40% of the time, so the advantages are not all 0 and the policy moves
    cfg = TrainConfig(
        algo="grpo",
        steps=2,
        prompts_per_step=4,
        group_size=4,
        eval_every=0,
        eval_prompts=4,
        eval_samples=1,
        log_kl=False,
        out_dir=str(tmp_path / "run"),
        progress=False,
    )
    train(cfg)
    resume(cfg.out_dir, steps=3)
    start, _ = load_policy(None, device="cpu")
    trained, _ = load_policy(tmp_path / "run" / "checkpoint", device="cpu")
    assert len(reference_copies) == 2
    for name, p in reference_copies[1].state_dict().items():  # the resumed run's reference
        torch.testing.assert_close(p, start.state_dict()[name], atol=0, rtol=0)
    assert any(
        not torch.equal(p, start.state_dict()[n]) for n, p in trained.state_dict().items()
    )  # the policy did move
