"""What a real instruct model needs, checked on small local stand-ins: every stop id
of its generation config ends an answer (Qwen2.5-Instruct lists two)."""

import pytest
import torch

from rlalgos.model import char_tokenizer, load_policy, tiny_model
from rlalgos.record import completion_mask_from_ids, decode_completions
from rlalgos.rollout import rollout
from rlalgos.sampler import SamplingConfig, stop_token_ids
from rlalgos.tasks import addition_task

IM_END = "<|im_end|>"
TEMPLATE = "{% for m in messages %}User: {{ m['content'] }}\n{% endfor %}{% if add_generation_prompt %}Assistant:{% endif %}"


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
    ids = torch.tensor([
        [5, 6, 2, 0, 0],  # ends in the first id
        [5, 6, 9, 0, 0],  # ends in the second: the same mask, not truncated
        [9, 0, 0, 0, 0],
        [5, 9, 6, 2, 0],  # the first stop of either kind counts
        [5, 6, 7, 8, 5],  # never stops: truncated
    ])
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
    ro = rollout(model, tok, rows, 32, addition_task().rewards, SamplingConfig(max_new_tokens=T, sampler=sampler), old_logprobs=False)
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
