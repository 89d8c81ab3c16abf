"""The speed-ups change time, not numbers: the compact sampler against
transformers' generate, length buckets against one full pass, trimmed batches
against padded ones."""

import pytest
import torch

from rlalgos.algorithms import get_algorithm, make_config
from rlalgos.engine.buckets import length_buckets
from rlalgos.engine.forward import batched_logprobs, forward_logprobs
from rlalgos.model import load_policy
from rlalgos.record import Rollout
from rlalgos.rollout import rollout
from rlalgos.engine.sampler import SamplingConfig, generate, sample_completions


def test_compact_greedy_equals_hf_generate(base, task):
    policy, tok = base
    prompts = [r["prompt"] for r in task.test[:24]]
    hf = generate(policy, tok, prompts, SamplingConfig(sampler="hf"), greedy=True)
    compact = generate(policy, tok, prompts, SamplingConfig(sampler="compact"), greedy=True)
    width = max(hf[2].shape[1], compact[2].shape[1])
    pad = lambda t: torch.nn.functional.pad(t, (0, width - t.shape[1]), value=tok.pad_token_id)  # noqa: E731
    assert torch.equal(hf[0], compact[0]) and torch.equal(hf[1], compact[1])
    assert torch.equal(pad(hf[2]), pad(compact[2]))
    lengths = (compact[2] != tok.pad_token_id).sum(1)
    assert lengths.min() < lengths.max()  # rows really finished at different steps (rows were dropped)


def test_compaction_and_shared_prefill_do_not_change_greedy_tokens(base, task):
    policy, tok = base
    enc = tok([r["prompt"] for r in task.test[:12]], return_tensors="pt", padding=True)
    args = (policy, enc["input_ids"], enc["attention_mask"], 48, tok.eos_token_id, tok.pad_token_id)
    never = sample_completions(*args, greedy=True, n=3, compact_frac=2.0)  # no row ever leaves the batch
    often = sample_completions(*args, greedy=True, n=3, compact_frac=0.01)  # rows leave as soon as they end
    expanded = sample_completions(
        policy,
        enc["input_ids"].repeat_interleave(3, 0),
        enc["attention_mask"].repeat_interleave(3, 0),
        48,
        tok.eos_token_id,
        tok.pad_token_id,
        greedy=True,
    )
    assert torch.equal(never, often) and torch.equal(never, expanded)


def test_compact_sampler_draws_from_the_model_distribution(tiny):
    """First-token frequencies over 4,000 draws match softmax(logits / T) and
    top-p keeps only the nucleus."""
    model, tok = tiny
    enc = tok(["12+7="], return_tensors="pt")
    with torch.no_grad():
        logits = model(**enc).logits[0, -1]
    for temperature in (1.0, 0.7):
        torch.manual_seed(0)
        out = sample_completions(
            model,
            enc["input_ids"],
            enc["attention_mask"],
            1,
            tok.eos_token_id,
            tok.pad_token_id,
            temperature=temperature,
            n=4000,
        )
        freq = torch.bincount(out[:, 0], minlength=logits.shape[0]).float() / 4000
        probs = torch.softmax(logits / temperature, -1)
        assert (freq - probs).abs().max() < 0.03, (temperature, (freq - probs).abs().max())
    out = sample_completions(
        model, enc["input_ids"], enc["attention_mask"], 1, tok.eos_token_id, tok.pad_token_id, top_p=0.5, n=500
    )
    sorted_p, order = torch.softmax(logits, -1).sort(descending=True)
    nucleus = set(order[: int((sorted_p.cumsum(0) < 0.5).sum()) + 1].tolist())
    assert set(out[:, 0].tolist()) <= nucleus


def test_sampled_logprobs_agree_with_a_forward_pass(base, task):
    """What the compact sampler drew is scored identically by one batched forward pass
    and by a per-row pass without padding."""
    policy, tok = base
    ro = rollout(policy, tok, task.test[:6], 4, task.rewards, SamplingConfig())
    for i in (0, 7, 23):
        r = ro.select([i]).trimmed()
        one = forward_logprobs(policy, r.prompt_ids, r.prompt_mask, r.completion_ids, r.completion_mask)["logprobs"][0]
        T = r.completion_ids.shape[1]
        torch.testing.assert_close(one, ro.old_logprobs[i, :T], atol=1e-5, rtol=0)
        assert (ro.old_logprobs[i, T:] == 0).all()


def test_length_buckets_partition_and_sort():
    lengths = torch.tensor([5, 1, 9, 3, 7, 2, 8])
    buckets = length_buckets(lengths, 3)
    assert sorted(torch.cat(buckets).tolist()) == list(range(7))
    assert [lengths[b].tolist() for b in buckets] == [[1, 2, 3], [5, 7], [8, 9]]
    assert len(length_buckets(lengths, 1, max_rows=2)) == 4  # max_rows splits further
    assert len(length_buckets(lengths, 50)) == 7


def test_trimmed_drops_only_padding(base, task):
    policy, tok = base
    ro = rollout(policy, tok, task.test[:8], 4, task.rewards, SamplingConfig())
    short = ro.select(torch.argsort(ro.lengths)[:8])
    t = short.trimmed()
    assert t.completion_ids.shape[1] == int(short.lengths.max()) < ro.completion_ids.shape[1]
    assert t.prompt_ids.shape[1] == int(short.prompt_mask.sum(1).max())
    assert t.completion_mask.sum() == short.completion_mask.sum() and t.prompt_mask.sum() == short.prompt_mask.sum()
    a = batched_logprobs(policy, short, buckets=1)
    b = forward_logprobs(policy, t.prompt_ids, t.prompt_mask, t.completion_ids, t.completion_mask)["logprobs"]
    torch.testing.assert_close(a[:, : b.shape[1]], b * t.completion_mask, atol=1e-5, rtol=0)


@pytest.mark.parametrize(
    "name,overrides",
    [
        ("reinforce", {}),
        ("grpo", {}),
        ("grpo", {"loss_agg": "token-mean", "kl_coef": 0.0}),
        ("drgrpo", {}),
        ("dapo", {"dynamic_sampling": "downweight", "degenerate_weight": 0.3, "minibatches": 2}),
        ("ppo", {"epochs": 1, "minibatches": 1}),
    ],
)
def test_length_buckets_give_the_same_update(base, task, name, overrides):
    """The gradients of one update with 4 length buckets (and with micro-batches of
    at most 7 rows) equal those of one full pass over each minibatch."""
    policy0, tok = base
    torch.manual_seed(1)
    ro = rollout(policy0, tok, task.train[:8], 4, task.rewards, SamplingConfig(), ref_model=policy0)
    results = []
    for buckets, micro in ((1, 0), (4, 0), (4, 7)):
        policy, _ = load_policy(None, device="cpu")
        cfg = make_config(name, **overrides, length_buckets=buckets, micro_batch_size=micro)
        algo = get_algorithm(name)(policy, cfg, max_new_tokens=48)
        grads = []  # the gradient at every optimizer step, instead of stepping
        algo.optimizer.step = lambda grads=grads, algo=algo: grads.append(
            torch.cat([p.grad.flatten() for p in algo.parameters() if p.grad is not None])
        )
        torch.manual_seed(2)  # the same minibatch shuffle
        m = algo.update(Rollout.concat([ro]))
        results.append((grads, m))
    (g1, m1), *rest = results
    assert len(g1) == algo.cfg.epochs * algo.cfg.minibatches and g1[0].abs().max() > 0
    for g, m in rest:
        for a, b in zip(g, g1):
            torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-4)
        assert m["loss"] == pytest.approx(m1["loss"], abs=1e-5)
        assert m["entropy"] == pytest.approx(m1["entropy"], abs=1e-5)
