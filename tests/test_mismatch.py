"""The rollout-trainer mismatch: sampling in lower precision (``rollout_dtype``), the
sampler's own log-probs, the logged gap, and the corrections (TIS / masked IS, token
or sequence level) exactly as TRL 1.16 and verl 0.9.1 compute them."""

import importlib.util
import json
import math

import pytest
import torch

from rlalgos import core
from rlalgos.engine import diagnostics
from rlalgos.algorithms.base import Advantages
from rlalgos.algorithms.grpo import GRPO
from rlalgos.config import ROLLOUT_CORRECTIONS, TrainConfig, make_config
from rlalgos.engine.precision import SamplingCopy
from rlalgos.engine.sampler import SamplingConfig
from rlalgos.losses import POLICY_LOSSES
from rlalgos.rollout import rollout
from rlalgos.tasks import get_task
from rlalgos.tools import cli
from rlalgos.tools.export.trl import trl_settings
from rlalgos.tools.export.verl import MASK_NO_LOWER, verl_overrides
from rlalgos.tools.export.verl_files import compose_verl, hydra_value, verl_config_dir
from test_loss_modes import VERL_PRELUDE, run_verl

MODES = [m for m in ROLLOUT_CORRECTIONS if m != "none"]


def fixed_logprobs(seed=0, B=8, T=7):
    """Trainer and sampler log-probs of moderate spread (ratios mostly within e^-2 .. e^2) and a ragged mask."""
    g = torch.Generator().manual_seed(seed)
    old = -torch.rand(B, T, generator=g) * 3
    rollout_lp = old + torch.randn(B, T, generator=g)
    mask = (torch.arange(T) < torch.randint(2, T + 1, (B, 1), generator=g)).float()
    return old, rollout_lp, mask


def trl_weights(old_per_token_logps, sampling_per_token_logps, mask, mode, clip_max):
    """TRL 1.16's importance-sampling ratio, its lines copied from trl/trainer/grpo_trainer.py:2660-2705
    (``_generate_and_score_completions``, vllm_importance_sampling_correction, clip_min None)."""
    per_token_logps_diff = (old_per_token_logps - sampling_per_token_logps) * mask
    per_token_logps_diff = torch.nan_to_num(per_token_logps_diff, nan=0.0)
    sequence_level_is = mode in ["sequence_mask", "sequence_truncate"]
    logps_diff = per_token_logps_diff.sum(dim=-1, keepdim=True) if sequence_level_is else per_token_logps_diff
    ratio = torch.exp(logps_diff)
    if mode in ["sequence_truncate", "token_truncate"]:
        ratio = torch.clamp(ratio, min=None, max=clip_max)
    else:
        invalid_mis_mask = (ratio < -math.inf) | (ratio > clip_max)
        ratio = ratio.masked_fill(invalid_mis_mask, value=0.0)
    return ratio  # (B, T) or (B, 1); grpo_trainer.py:3147 multiplies per_token_loss by it


@pytest.mark.parametrize("mode", MODES)
def test_weights_match_trl(mode):
    old, ro_lp, mask = fixed_logprobs()
    w, m = core.rollout_correction_weights(old, ro_lp, mask, mode, 3.0)
    want = trl_weights(old, ro_lp, mask, mode, 3.0).expand_as(old) * mask  # padding does not count in TRL's loss
    torch.testing.assert_close(w, want, rtol=1e-6, atol=0)
    assert not w.requires_grad
    assert 0 < m["rollout_is_clip_frac"] < 1  # the fixed tensors do cross the threshold
    assert m["rollout_is_mean"] == pytest.approx(float(core.masked_mean(w, mask)))


VERL_IS_SCRIPT = (
    VERL_PRELUDE
    + r"""
from verl.trainer.ppo.rollout_corr_helper import compute_rollout_correction_weights
cases, out = torch.load(sys.argv[1]), {}
for name, (old, ro_lp, mask, level, threshold) in cases.items():
    w, metrics = compute_rollout_correction_weights(old - ro_lp, mask, rollout_is=level, rollout_is_threshold=threshold)
    out[name] = w
torch.save(out, sys.argv[2])
"""
)


def test_weights_match_verl(tmp_path):
    """verl's ``compute_rollout_correction_weights`` (rollout_is token / sequence; masking is IcePop with
    the lower bound the export writes, MASK_NO_LOWER), on the same tensors, also with extreme log-ratios."""
    old, ro_lp, mask = fixed_logprobs(1)
    ro_lp[0, 0] = old[0, 0] + 30  # a log-ratio beyond verl's +-20 safety bound
    C = 2.0
    cases = {
        mode: (old, ro_lp, mask, mode.split("_")[0], C if mode.endswith("truncate") else f"{MASK_NO_LOWER:g}_{C:g}")
        for mode in MODES
    }
    got = run_verl(VERL_IS_SCRIPT, cases, tmp_path)
    for mode in MODES:
        w, _ = core.rollout_correction_weights(old, ro_lp, mask, mode, C)
        torch.testing.assert_close(w, got[mode], rtol=1e-6, atol=0, msg=mode)


def test_no_mismatch_gives_weight_one_and_the_same_loss():
    old, _, mask = fixed_logprobs(2)
    logp = (old + 0.05 * torch.randn_like(old)).requires_grad_(True)
    adv = torch.randn(old.shape[0], 1)
    for mode in MODES:
        w, m = core.rollout_correction_weights(old, old.clone(), mask, mode, 2.0)
        assert torch.equal(w, mask) and m == {"rollout_is_mean": 1.0, "rollout_is_clip_frac": 0.0}
        for agg in ("token-mean", "seq-mean-token-mean"):
            base, _ = core.policy_loss(logp, old, adv, mask, 0.2, 0.28, agg)
            weighted, _ = core.policy_loss(logp, old, adv, mask, 0.2, 0.28, agg, is_weights=w)
            assert torch.equal(base, weighted)
    gap = diagnostics.logprob_gap(old, old, mask)
    assert gap == {"mismatch_logp_gap_mean": 0.0, "mismatch_logp_gap_max": 0.0, "mismatch_ratio_beyond_2": 0.0}
    with pytest.raises(ValueError, match="unknown rollout correction"):
        core.rollout_correction_weights(old, old, mask, "token_clip", 2.0)


def test_weights_scale_each_tokens_policy_loss():
    """The weight multiplies the per-token loss before aggregation (verl's pg_losses * rollout_is_weights), in every loss mode."""
    old, ro_lp, mask = fixed_logprobs(3)
    logp = old + 0.1 * torch.randn_like(old)
    adv = torch.randn(old.shape[0], 1)
    w, _ = core.rollout_correction_weights(old, ro_lp, mask, "token_truncate", 2.0)
    got, _ = core.policy_loss(logp, old, adv, mask, 0.2, 0.2, "token-mean", is_weights=w)
    ratio = torch.exp(logp - old)
    per_token = torch.maximum(-adv * ratio, -adv * ratio.clamp(0.8, 1.2))
    torch.testing.assert_close(got, (per_token * w * mask).sum() / mask.sum())
    for fn, args in ((core.cispo_loss, ()), (core.sapo_loss, ()), (core.kl_cov_loss, ()), (core.clip_cov_loss, ())):
        plain, _ = fn(logp, old, adv, mask, *args)
        zero, _ = fn(logp, old, adv, mask, *args, is_weights=torch.zeros_like(mask))
        assert zero.item() == 0.0 and plain.item() != 0.0, fn.__name__


@pytest.mark.parametrize("mode", list(POLICY_LOSSES))
def test_the_update_weights_every_registered_loss(mode):
    """The weights reach each token's loss in the algorithm's aggregation, not in the loss modules:
    every registered loss, none of which is handed them, is corrected the same way."""
    old, ro_lp, mask = fixed_logprobs(3)
    logp = old + 0.1 * torch.randn_like(old)
    adv = torch.randn(old.shape[0], 1)
    w, _ = core.rollout_correction_weights(old, ro_lp, mask, "token_truncate", 2.0)
    algo, loss = GRPO(torch.nn.Linear(1, 1), make_config("grpo", loss_mode=mode, kl_coef=0.0)), POLICY_LOSSES[mode]
    torch.manual_seed(0)  # clip_cov draws its tokens
    loss_mat, _ = loss.token_loss(logp, old, adv, mask, **loss.options(algo.cfg))
    torch.manual_seed(0)
    got, _ = algo.policy_loss({"logprobs": logp}, Advantages(adv, mask, is_weights=w), old)
    torch.testing.assert_close(got, core.aggregate_loss(loss_mat * w, mask, algo.cfg.loss_agg))
    zero, _ = algo.policy_loss({"logprobs": logp}, Advantages(adv, mask, is_weights=torch.zeros_like(mask)), old)
    assert zero.item() == 0.0 and got.item() != 0.0
    cut = Advantages(adv, mask, is_weights=w).rows(torch.tensor([2, 0]), 4)  # a micro-batch keeps its rows' weights
    assert torch.equal(cut.is_weights, w[[2, 0], :4])


def sample(model, tok, rows, sampler=None, top_p=1.0, seed=0, engine="compact", keep=True):
    torch.manual_seed(seed)
    task = get_task("addition")
    return rollout(
        model,
        tok,
        rows,
        4,
        task.rewards,
        SamplingConfig(max_new_tokens=task.max_new_tokens, top_p=top_p, sampler=engine),
        sampler=sampler,
        rollout_logprobs=keep,
    )


def test_float32_sampler_logprobs_are_the_trainers_and_bf16_ones_are_close(base):
    policy, tok = base
    rows = get_task("addition").train[:8]
    ro = sample(policy, tok, rows)
    valid = ro.completion_mask > 0
    assert (ro.rollout_logprobs[~valid] == 0).all()
    torch.testing.assert_close(
        ro.rollout_logprobs, ro.old_logprobs, atol=1e-4, rtol=0
    )  # the KV-cache loop vs one full pass, both fp32
    hf = sample(policy, tok, rows[:2], engine="hf")  # transformers' generate: its processed scores
    torch.testing.assert_close(hf.rollout_logprobs, hf.old_logprobs, atol=1e-4, rtol=0)
    plain = sample(
        policy, tok, rows, keep=False
    )  # the same draw with or without the sampler's log-probs kept: one random stream
    assert plain.rollout_logprobs is None and torch.equal(plain.completion_ids, ro.completion_ids)
    copy = SamplingCopy(policy, "bfloat16")
    assert next(copy.sync().parameters()).dtype == torch.bfloat16 and next(policy.parameters()).dtype == torch.float32
    bf = sample(policy, tok, rows, sampler=copy.sync())
    gap = diagnostics.logprob_gap(bf.old_logprobs, bf.rollout_logprobs, bf.completion_mask)
    assert 1e-4 < gap["mismatch_logp_gap_mean"] < 0.05 and gap["mismatch_logp_gap_max"] < 1.0, gap
    nucleus = sample(
        policy, tok, rows, top_p=0.9
    )  # top-p renormalises: the sampler's log-probs are never below the trainer's
    assert (nucleus.rollout_logprobs >= nucleus.old_logprobs - 1e-4)[nucleus.completion_mask > 0].all()
    with torch.no_grad():  # the copy follows the policy's weights on every sync
        p = next(policy.parameters())
        p.add_(1.0)
        try:
            assert torch.equal(next(copy.sync().parameters()), p.to(torch.bfloat16))
        finally:
            p.sub_(1.0)


def test_workbook_frame_of_token_gaps(base):
    from rlalgos.workbook.mismatch import logprob_gaps

    policy, tok = base
    task = get_task("addition")
    df = logprob_gaps(policy, tok, task, task.train[:4], dtype="bfloat16", group_size=2)
    assert list(df.columns) == ["answer", "position", "token", "rollout_logprob", "trainer_logprob", "gap", "correct"]
    assert len(df) > 20 and df.answer.nunique() == 8
    assert (df.gap - (df.trainer_logprob - df.rollout_logprob)).abs().max() < 1e-6
    assert df.gap.abs().mean() > 0


TINY = [
    "--steps",
    "2",
    "--prompts-per-step",
    "4",
    "--group-size",
    "4",
    "--max-new-tokens",
    "24",
    "--eval-every",
    "0",
    "--eval-prompts",
    "4",
    "--eval-samples",
    "1",
    "--save-every",
    "0",
    "--device",
    "cpu",
    "--no-progress",
]


def test_bf16_rollouts_with_tis_log_the_gap_and_weights(tmp_path):
    out = tmp_path / "run"
    assert (
        cli.main(
            [
                "train",
                "grpo",
                *TINY,
                "--rollout-dtype",
                "bfloat16",
                "--rollout-correction",
                "token_truncate",
                "--out-dir",
                str(out),
            ]
        )
        == 0
    )
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()][1:]
    assert len(rows) == 2
    for r in rows:
        assert 0 < r["mismatch_logp_gap_mean"] < 0.05 and r["mismatch_logp_gap_mean"] <= r["mismatch_logp_gap_max"]
        assert 0 <= r["mismatch_ratio_beyond_2"] <= 1 and 0 <= r["rollout_is_clip_frac"] <= 1
        assert r["rollout_is_mean"] == pytest.approx(1.0, abs=0.05)
    saved = json.loads((out / "config.json").read_text())["train"]
    assert (saved["rollout_dtype"], saved["rollout_correction"], saved["rollout_correction_threshold"]) == (
        "bfloat16",
        "token_truncate",
        2.0,
    )


def test_a_stale_sampler_lags_between_syncs(tmp_path):
    """rollout_sync_every 3 (float32): the sampler is the policy at steps 1 and 4 (just synced: no gap),
    and one or two updates old at steps 2 and 3 (a gap that the trainer's recompute sees)."""
    out = tmp_path / "run"
    argv = ["train", "grpo", *TINY, "--steps", "4", "--lr", "3e-3", "--rollout-sync-every", "3", "--out-dir", str(out)]
    assert cli.main(argv) == 0
    gap = {
        r["step"]: r["mismatch_logp_gap_mean"]
        for r in map(json.loads, (out / "metrics.jsonl").read_text().splitlines())
        if r["step"] > 0
    }
    assert gap[1] < 1e-5 and gap[4] < 1e-5, gap
    assert gap[2] > 100 * max(gap[1], 1e-7) and gap[3] > 100 * max(gap[4], 1e-7), gap


@pytest.mark.parametrize(
    "argv,msg",
    [
        (
            ["--rollout-correction-threshold", "0.5", "--rollout-correction", "token_mask"],
            "rollout_correction_threshold must be >= 1",
        ),
        (["--rollout-correction", "tis"], "unknown rollout_correction 'tis'"),
        (["--rollout-dtype", "int8"], "unknown rollout_dtype 'int8'"),
        (["--rollout-sync-every", "0"], "rollout_sync_every must be >= 1"),
        (["--top-p", "1.5"], "top_p must be in (0, 1]"),
        (["--top-p", "0"], "top_p must be in (0, 1]"),
    ],
)
def test_bad_mismatch_settings_are_one_line_exit_2(tmp_path, capsys, argv, msg):
    out = tmp_path / "run"
    assert cli.main(["train", "grpo", *TINY, "--out-dir", str(out), *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert msg in err and err.count("\n") == 0 and "Traceback" not in err, err
    assert not out.exists()


def test_export_rows(tmp_path):
    cfg = TrainConfig(
        algo="grpo", rollout_dtype="bfloat16", rollout_correction="token_mask", rollout_correction_threshold=3.0
    )
    _, config, _ = trl_settings(cfg, make_config("grpo"))
    assert (
        config["vllm_importance_sampling_correction"],
        config["vllm_importance_sampling_mode"],
        config["vllm_importance_sampling_clip_max"],
    ) == (True, "token_mask", 3.0)
    trl = pytest.importorskip("trl")
    args = trl.GRPOConfig(
        output_dir=str(tmp_path), use_cpu=True, **{k: v for k, v in config.items() if k.startswith("vllm_")}
    )
    assert args.vllm_importance_sampling_mode == "token_mask" and args.vllm_importance_sampling_clip_max == 3.0
    _, config, _ = trl_settings(TrainConfig(algo="grpo"), make_config("grpo"))
    assert config["vllm_importance_sampling_correction"] is False  # TRL's default is on
    values, _ = verl_overrides(cfg, make_config("grpo"))
    assert values["actor_rollout_ref.rollout.dtype"] == "bfloat16"
    assert (
        values["algorithm.rollout_correction.rollout_is"],
        values["algorithm.rollout_correction.rollout_is_threshold"],
    ) == ("token", "1e-09_3")
    if (
        importlib.util.find_spec("hydra") is not None and verl_config_dir() is not None
    ):  # the keys exist in verl's config and the string survives Hydra
        from omegaconf import OmegaConf

        keys = [k for k in values if "rollout_correction" in k or k.endswith("rollout.dtype")]
        composed = compose_verl([f"{k}={hydra_value(values[k])}" for k in keys])
        assert [OmegaConf.select(composed, k) for k in keys] == [values[k] for k in keys]
    values, _ = verl_overrides(TrainConfig(algo="grpo", rollout_correction="sequence_truncate"), make_config("grpo"))
    assert (
        values["algorithm.rollout_correction.rollout_is"],
        values["algorithm.rollout_correction.rollout_is_threshold"],
    ) == ("sequence", 2.0)
    _, config, mapping = trl_settings(
        TrainConfig(algo="rloo", rollout_correction="token_truncate"), make_config("rloo")
    )
    assert not any(k.startswith("vllm_importance") for k in config) and any(
        "RLOOTrainer has no importance-sampling" in n for n in mapping.notes
    )
