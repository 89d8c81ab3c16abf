"""What matters when: the facts behind the table, one :class:`Trick` per row.

Each trick holds what does not change with a run: what triggers it (the condition under which
it changes the gradient), which claims of :mod:`rlalgos.workbook.claims` tested it, and what its
paper reports at what scale. What does change with a run is read, never typed: the tested
effects from the published records, and how often the trigger fired from a
:class:`~rlalgos.workbook.matters_sources.Measured` source (a test checks that each is still there).

:mod:`rlalgos.workbook.matters_page` builds the table from these facts and writes
``docs/what_matters.md`` (``python docs/make_what_matters.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

from .matters_sources import Measured


# --------------------------------------------------------------------------- #
# The tricks
# --------------------------------------------------------------------------- #


@dataclass(frozen=True)
class Tested:
    """Effects of one claim to show: ``arm`` and/or ``metric`` select among its effects (headline
    and supporting); neither: its headline effects, or its verdict when it has no paired number."""

    claim: str
    arm: str = ""
    metric: str = ""
    context: str = ""  # non-empty: a line shown for context, not counted as a test of the trick (says why)


@dataclass(frozen=True)
class Trick:
    """One row of the table: a trick, its trigger, where that trigger's frequency was measured,
    the claims that tested it and its paper's result at its own scale."""

    name: str
    knobs: tuple[str, ...]  # the rlalgos settings that switch it (the export table's rows)
    trigger: str
    measured: tuple[Measured, ...]
    tested: tuple[Tested, ...]
    paper: str
    unmeasured: str = ""  # why there is no measured frequency (it acts on every step, or was never printed)
    fires: str = ""  # how often the trigger fired here, in a word: a key of FIRES, read off ``measured``
    read: str = ""  # the logged metric(s) to read in your own run before turning it on (docs/metrics.md)
    when: str = ""  # the decision this project's lines support: turn it on when ...


NB04 = "notebook 04b's regime (2-6-term sums, 4 minibatches), 3 seeds"
NB04_BASE = "the base model's rollouts, 2-6-term sums, 3 seeds"
NB09 = "notebook 09's trap regime, vanilla GRPO, 6 seeds"
NB09_ARMS = "notebook 09's trap regime, its own arm, 6 seeds"
NB09_NB = "notebooks/09_exploration.ipynb"
NB10_PUSH = "notebook 08's push settings (16 updates per rollout) on 2-6-term sums, 3 seeds"
NB10_MM = "notebook 10: a sampler 3 updates stale, 3 seeds"
NB10_NB = "notebooks/10_engines.ipynb"
BENCH_PUSH = "docs/bench/regimes_entropy_push.jsonl"
BENCH_ZS = "docs/bench/regimes_zero_signal_truncation.jsonl"

FIRES = {  # the words of Trick.fires, each read off the trick's measured frequencies
    "common": "0.01 or more of the tokens, answers or groups it acts on, in every regime where it was measured",
    "rare": "under 0.01 of the tokens or answers it acts on, in every regime where it was measured",
    "by regime": "rare in one regime, common in another",
    "every step": "acts on every step (or every token) whenever it is switched on: not a trigger that can be rare",
    "not measured": "how often it fired was never printed",
    "its switches'": "DAPO as a whole: see the rows of its switches",
}

REGIME_DEFS = {  # each short name of REGIMES, in words (the records' ``regime`` fields say them in full)
    "nb04b": "notebook 04b's regime: 2-6-term sums, a 64-token budget, 4 minibatches, 40 steps",
    "nb04b, base model's rollouts": "a census of the base model's own answers on nb04b's task, no training",
    "default task": "2-4-term sums, a 48-token budget, 32 prompts per step, 4 minibatches, 60 steps",
    "nb05": "notebook 05's runs: the default task, 1 minibatch, 40 steps",
    "nb08": "notebook 08's regime: the default task, 4 minibatches, 40 steps",
    "hard push": "the default task at lr 2e-4, no KL, 4 minibatches, 60 steps (a benchmark run)",
    "hard push, 30 steps (nb06)": "notebook 06's shorter run of the hard push settings",
    "16-update push": "notebook 08's push: the default task, lr 3e-4, 2 epochs x 8 minibatches"
    " = 16 updates per rollout, 15 steps",
    "16-update push, 2-6 terms": "the same push on 2-6-term sums (notebook 10)",
    "zero-signal regime": "2-6-term sums, 4 minibatches, 40 steps: many all-wrong groups,"
    " made for dynamic sampling (a benchmark run)",
    "24-token budget": "3-4-term sums with answers cut at 24 tokens, 4 minibatches, 40 steps:"
    " correct working is often cut (a benchmark run)",
    "nb09 trap": "notebook 09's trap task: easy prompts a direct answer solves beside hard ones only"
    " the rare scratchpad solves; lr 1e-4, no KL, 8 minibatches, 30 steps",
    "nb06 gamed reward": "notebook 06: the default task paid for a right answer and, equally, for a short one; 30 steps",
    "nb06 length-biased reward": "notebook 06: a judge that pays for length only, lr 3e-4, 30 steps",
    "lr 3e-4": "the default task at lr 3e-4, 40 steps, KL coefficient beta 0, 0.04 or 0.4",
    "nb10 stale sampler": "notebook 10: the default task, the sampler 3 updates behind the trainer, 30 steps",
    "nb10 bf16 sampler": "notebook 10: the default task, answers sampled in bf16 for an fp32 trainer, 30 steps",
    "exact": "proved by a test, no runs",
}

REGIMES = {  # a short name for each claim's regime (REGIME_DEFS says each in words)
    "dynamic-sampling-speed": "nb04b",
    "token-mean-learning": "nb04b",
    "overlong-shaping": "nb04b",
    "clip-higher-entropy": "nb04b",
    "kl-penalty-drift": "nb04b",
    "dapo-nb04": "nb04b",
    "aggregation-long-answer": "nb04b, base model's rollouts",
    "zero-variance-no-signal": "nb04b, base model's rollouts",
    "dynamic-sampling-keeps-easy": "nb04b, base model's rollouts",
    "truncated-not-wrong": "nb04b, base model's rollouts",
    "token-mean-drgrpo-constant": "exact",
    "dapo-entropy-push": "hard push",
    "dapo-zero-signal": "zero-signal regime",
    "dapo-truncation": "24-token budget",
    "dapo-default-regime": "default task",
    "clip-higher-trap": "nb09 trap",
    "clip-cov-kl-cov": "nb09 trap",
    "entropy-bonus-trap": "nb09 trap",
    "dapo-trap": "nb09 trap",
    "dynamic-sampling-carries-dapo": "nb09 trap",
    "entropy-covariance": "nb09 trap",
    "gspo-clip": "nb08",
    "drgrpo-length": "nb08",
    "rloo-matches-grpo": "nb08",
    "dual-clip": "16-update push",
    "cispo-push": "16-update push, 2-6 terms",
    "sapo-push": "16-update push, 2-6 terms",
    "cispo-sapo-exact": "exact",
    "stale-sampler": "nb10 stale sampler",
    "rollout-correction": "nb10 stale sampler",
    "bf16-mismatch": "nb10 bf16 sampler",
    "kl-penalty-high-lr": "lr 3e-4",
    "reward-hacking": "nb06 gamed reward",
    "length-runaway": "nb06 length-biased reward",
    "entropy-monitor": "hard push, 30 steps (nb06)",
    "critic-cost": "nb05",
    "normalisation-no-signal": "exact",
}

TRICKS: tuple[Trick, ...] = (
    Trick(
        "dynamic sampling",
        ("dynamic_sampling",),
        "a group whose G rewards are all equal (advantage 0 for every answer): it is dropped and more prompts are sampled",
        (
            Measured(
                "{0} of groups carry signal (the rest trigger it)",
                NB04_BASE,
                claim="zero-variance-no-signal",
                line="groups that carry signal: 0.46 (per seed 0.52, 0.45, 0.42; 3 seeds x 64 prompts x 8)",
                pattern=r"signal: ([\d.]+)",
            ),
            Measured(
                "{0:.3f} of groups all-equal (vanilla GRPO, last steps)",
                "the zero-signal regime, 6 seeds",
                file=BENCH_ZS,
                match={"measure": "regime_effect", "regime": "zero_signal", "arm": "dapo", "metric": "zero_std_frac"},
                fields=("base_mean",),
            ),
            Measured(
                "{0} of groups all-equal at the end of GRPO's runs",
                "the default task, 3 seeds",
                file="notebooks/05_side_by_side.ipynb",
                line="zero_std_end         0.329  0.404  0.392  0.316",
                pattern=r"^zero_std_end\s+\S+\s+\S+\s+(\S+)",  # the columns: reinforce, ppo, grpo, dapo
            ),
        ),
        (
            Tested("dynamic-sampling-speed"),
            Tested("dapo-entropy-push", "dynamic_sampling"),
            Tested("dynamic-sampling-carries-dapo", "dynamic_only", "eval_accuracy"),
            Tested("dynamic-sampling-carries-dapo", "dapo_no_dynamic", "eval_accuracy"),
            Tested(
                "dynamic-sampling-carries-dapo",
                "dapo",
                "eval_accuracy",
                context="DAPO against vanilla at matched answers: dynamic sampling is not switched alone",
            ),
            Tested("zero-variance-no-signal"),
            Tested("dynamic-sampling-keeps-easy"),
        ),
        "DAPO (arXiv:2503.14476): the last switch added, +8 AIME 2024 points (42 -> 50), Qwen2.5-32B",
        fires="common",
        read="zero_std_frac",
        when="many groups are all-right or all-wrong and you can afford the extra draws: shown in two regimes,"
        " but in the trap a gain from more samples alone is not ruled out",
    ),
    Trick(
        "clip-higher",
        ("clip_high",),
        "a token with A > 0 whose ratio passed 1 + 0.2 but not 1 + 0.28 keeps its gradient; needs more than one update per rollout (ratio != 1)",
        (
            Measured(
                "{0} of tokens clipped on the high side (GRPO)",
                NB04,
                claim="clip-higher-entropy",
                line="grpo         clip_frac 0.0024 (high 0.0006, low 0.0018)",
                pattern=r"high ([\d.]+)",
            ),
            Measured(
                "{0:.4f} of tokens clipped on the high side (GRPO)",
                "the hard push, 6 seeds",
                file=BENCH_PUSH,
                match={"measure": "regime_effect", "arm": "clip_higher", "metric": "clip_frac_high"},
                fields=("base_mean",),
            ),
            Measured(
                "the upper clip cut {2} of all tokens; rare rewarded tokens are {0} of tokens, and it cut {1} of them",
                NB09,
                file="notebooks/09_exploration.ipynb",
                line="vanilla        0.0016     0.0076    0.0066  0.0367    0.0698",
                pattern=r"^vanilla\s+(\S+)\s+(\S+)\s+(\S+)",
            ),
        ),
        (
            Tested("clip-higher-entropy"),
            Tested("dapo-entropy-push", "clip_higher"),
            Tested("clip-higher-trap", "clip_higher", "eval_scratchpad_frac/hard"),
        ),
        "DAPO (arXiv:2503.14476): +2 AIME 2024 points (36 -> 38) and entropy kept from collapsing, Qwen2.5-32B",
        fires="rare",
        read="clip_frac_high, clip_frac_high_rare",
        when="the high-side clip binds often (several updates per rollout); here it bound rarely, gave no gain"
        " shown and cut the trap's hard-prompt scratchpad share: test it on your task first",
    ),
    Trick(
        "token-mean loss",
        ("loss_agg",),
        "answers of different lengths with A != 0 in one batch: each token weighs the same, not 1 / its answer's length",
        (
            Measured(
                "a long wrong answer's token weighs {0} of a short one's per answer, {1} per token",
                NB04_BASE,
                claim="aggregation-long-answer",
                line="weight of one token of the long wrong answer / of a short wrong answer: 0.157 (seq-mean-token-mean) vs 1.000 (token-mean)",
                pattern=r": ([\d.]+) \(seq-mean-token-mean\) vs ([\d.]+)",
            ),
        ),
        (
            Tested("aggregation-long-answer"),
            # not the record's headline: docs/claims/token-mean-learning.json took its eval_accuracy line from
            # notebook 04b cell 4 (the hard push's 6-seed line, shown below) instead of cell 30; until the record
            # is re-extracted, only its two effects read from cell 30
            Tested("token-mean-learning", "token_mean", "eval_entropy"),
            Tested("token-mean-learning", "token_mean", "eval_completion_len"),
            Tested("dapo-entropy-push", "token_mean"),
        ),
        "DAPO (arXiv:2503.14476): +1 AIME 2024 point (41 -> 42) and steadier length and entropy, Qwen2.5-32B",
        fires="every step",
        read="completion_len_wrong (answer lengths differ a lot)",
        when="long wrong answers are common: its push on them is shown, no accuracy gain shown here",
    ),
    Trick(
        "overlong penalty",
        ("overlong_penalty", "overlong_buffer"),
        "an answer longer than L_max - L_c: its reward falls linearly to -1 at L_max",
        (
            Measured(
                "a penalty in {1} of steps, {0} per answer on average",
                "notebook 04b's regime (64-token budget), 3 seeds",
                claim="overlong-shaping",
                line="mean overlong penalty per answer: -0.0003; steps with any penalty: 0.050; truncated share: 0.0003",
                pattern=r"per answer: ([-\d.]+); steps with any penalty: ([\d.]+)",
            ),
            Measured(
                "{0} of answers cut at the limit (the penalty starts before it)",
                "notebook 06's length-biased reward, 3 seeds",
                file="notebooks/06_troubleshooting.ipynb",
                line="truncated_frac  c_verbose - baseline = +33.8 points (0.338 vs 0.000; 95% CI +15.6..+51.9, 3 seeds; detectable >= 18.1) -> shown",
                pattern=r"points \(([\d.]+) vs",
            ),
        ),
        (Tested("overlong-shaping"), Tested("length-runaway", "c_verbose_overlong")),
        "DAPO (arXiv:2503.14476): +3 AIME 2024 points (38 -> 41), answers up to 20k tokens, Qwen2.5-32B",
        fires="by regime",
        read="truncated_frac, overlong_penalty",
        when="answers run into the limit and the reward pays for length: under nb06's length-biased reward it cut the cut-off answers"
        " (notebook 06, shown), but its hold on length and its accuracy gain are within noise",
    ),
    Trick(
        "overlong filter",
        ("overlong_filter",),
        "a truncated answer (no end token): it is masked out of the loss",
        (
            Measured(
                "{0} of answers truncated",
                "notebook 04b's regime (64-token budget), 3 seeds",
                claim="overlong-shaping",
                line="mean overlong penalty per answer: -0.0003; steps with any penalty: 0.050; truncated share: 0.0003",
                pattern=r"truncated share: ([\d.]+)",
            ),
            Measured(
                "{0} of answers truncated at 24 tokens, {1} of those right",
                NB04_BASE,
                claim="truncated-not-wrong",
                line="24              0.495  0.024                  0.170  0.017",
                pattern=r"^24\s+(\S+)\s+\S+\s+(\S+)",
            ),
            Measured(
                "{0:.3f} of GRPO's training answers truncated",
                "the truncation regime (24 tokens), 3 seeds",
                file=BENCH_ZS,
                match={
                    "measure": "regime_effect",
                    "regime": "truncation",
                    "arm": "overlong_filter",
                    "metric": "truncated_frac",
                },
                fields=("base_mean",),
            ),
        ),
        (Tested("dapo-truncation", "overlong_filter"), Tested("truncated-not-wrong")),
        "DAPO (arXiv:2503.14476): the first switch added, +6 AIME 2024 points (30 -> 36), Qwen2.5-32B",
        fires="by regime",
        read="truncated_frac, and how many cut answers were right",
        when="cut answers are rarely right; at 24 tokens, where many cut answers were right, no gain shown",
    ),
    Trick(
        "KL penalty",
        ("kl_coef", "kl_estimator"),
        "every token once the policy leaves the reference (k3's gradient is 0 at the reference); always on when kl_coef > 0",
        (
            Measured(
                "KL to the reference {0:.3f} at beta 0.04, {1:.3f} at beta 0",
                NB04,
                claim="kl-penalty-drift",
                effect=("kl_off", "kl"),
                fields=("base_mean", "arm_mean"),
            ),
        ),
        (
            Tested("kl-penalty-drift"),
            Tested("kl-penalty-drift", "kl_0.4", "eval_accuracy"),
            Tested("kl-penalty-high-lr"),
            Tested("reward-hacking", "a_concise_kl"),
            Tested("entropy-bonus-trap", "kl"),
        ),
        "GRPO (arXiv:2402.03300): k3 in the loss, beta 0.04, DeepSeekMath 7B; DAPO (arXiv:2503.14476) drops it for long reasoning, Qwen2.5-32B",
        fires="every step",
        read="kl",
        when="the reward can be gamed or drift must stay small: it held drift, and under the gamed reward kept more accuracy than"
        " without it, still far below the baseline's",
    ),
    Trick(
        "entropy bonus",
        ("entropy_threshold", "entropy_action", "entropy_coef"),
        "while the monitor fires (mean entropy below entropy_threshold): + entropy_coef x entropy on every token",
        (),
        (Tested("entropy-bonus-trap", "entropy_bonus"),),
        "PPO's entropy bonus (arXiv:1707.06347, Atari); Cui et al. (arXiv:2505.22617) find it sensitive to its coefficient in LLM reasoning",
        unmeasured="every step in notebook 09's arm (threshold 1e9: always on)",
        fires="every step",
        read="eval_entropy, entropy_bonus_active",
        when="entropy collapses and you will tune its coefficient: here no line shown either way",
    ),
    Trick(
        "temperature monitor",
        ("entropy_threshold", "entropy_action", "temperature_step", "max_temperature"),
        "mean entropy below entropy_threshold: the sampling temperature rises by temperature_step (up to max_temperature)",
        (),
        (Tested("entropy-bonus-trap", "temperature"), Tested("entropy-monitor", "e_monitor")),
        "no paper result of its own: a heuristic for DAPO's (arXiv:2503.14476) entropy collapse",
        unmeasured="how often it fired was logged (entropy_monitor_fired), never printed",
        fires="not measured",
        read="entropy_monitor_fired, sampling_temperature",
        when="not on this evidence: in the trap it cut the hard prompts' scratchpad share and accuracy",
    ),
    Trick(
        "Clip-Cov",
        ("clip_cov_ratio", "clip_cov_lb", "clip_cov_ub"),
        "a random clip_cov_ratio share of tokens whose log-prob x advantage covariance is in (lb, ub): their gradient is cut",
        (
            Measured(
                "its mask cut {0} of the tokens, about {1} a step (clip_cov_ratio {2}: the floor of one token per forward pass sets it)",
                NB09_ARMS,
                file=NB09_NB,
                line="  clip_cov 0.0073 of the tokens (seeds 0.0058-0.0083), about 8 a step; rho = 0.0002",
                pattern=r"clip_cov ([\d.]+) of the tokens .*about (\d+) a step; rho = ([\d.]+)",
            ),
        ),
        (Tested("clip-cov-kl-cov", "clip_cov"), Tested("entropy-covariance")),
        "Cui et al. (arXiv:2505.22617): entropy kept up and math scores above GRPO's, Qwen2.5 7B/32B",
        fires="rare",
        read="cov_selected_frac, eval_entropy",
        when="entropy collapses at scale (its paper's case): here its lines are within noise",
    ),
    Trick(
        "KL-Cov",
        ("kl_cov_ratio", "kl_cov_coef"),
        "the kl_cov_ratio share of tokens with the largest covariance: a |log ratio| penalty on them",
        (
            Measured(
                "its mask penalised {0} of the tokens, about {1} a step (kl_cov_ratio {2}: the floor of one token per forward pass sets it)",
                NB09_ARMS,
                file=NB09_NB,
                line="  kl_cov   0.0433 of the tokens (seeds 0.0270-0.0509), about 53 a step; rho = 0.0002",
                pattern=r"kl_cov\s+([\d.]+) of the tokens .*about (\d+) a step; rho = ([\d.]+)",
            ),
        ),
        (Tested("clip-cov-kl-cov", "kl_cov"),),
        "Cui et al. (arXiv:2505.22617): entropy kept up and math scores above GRPO's, Qwen2.5 7B/32B",
        fires="common",
        read="cov_selected_frac, eval_entropy",
        when="entropy collapses at scale (its paper's case): here its pass@4 came out lower",
    ),
    Trick(
        "GSPO",
        ("algo",),
        "an answer whose length-normalised sequence ratio leaves [1 - 3e-4, 1 + 4e-4]: every token of it is clipped",
        (
            Measured(
                "{0:.3f} of tokens in clipped answers, GRPO's token clip {1:.3f}",
                "notebook 08's regime (the default task, 4 minibatches), 3 seeds",
                claim="gspo-clip",
                effect=("gspo", "clip_frac"),
                fields=("arm_mean", "base_mean"),
            ),
        ),
        (
            Tested("gspo-clip", context="how often its clip fires: a trigger rate, not an outcome"),
            Tested("gspo-clip", "gspo", "eval_accuracy"),
        ),
        "Zheng et al. (arXiv:2507.18071): clips far more tokens than GRPO yet trains more stably, Qwen3 MoE models",
        fires="common",
        read="clip_frac",
        when="token ratios are noisy (its paper: MoE models); here its accuracy line is within noise",
    ),
    Trick(
        "dual clip",
        ("clip_c",),
        "a token with A < 0 whose ratio is above clip_c (3): its loss is held at -A x clip_c",
        (
            Measured(
                "{0:.4f} of tokens on average (max over steps {1:.4f})",
                "notebook 08's push (16 updates per rollout) on the default task, 3 seeds",
                claim="dual-clip",
                line="dual clip in force on 0.06136% of tokens on average (max over steps 0.43661%)",
                pattern=r"on ([\d.]+)% .* steps ([\d.]+)%",
                percent=(0, 1),
            ),
        ),
        (Tested("dual-clip"),),
        "Ye et al. (arXiv:1912.09729): stabilises large-scale off-policy PPO, Honor of Kings agents",
        fires="rare",
        read="clip_frac_dual",
        when="many updates per rollout push ratios far up: here it bound rarely, its line within noise",
    ),
    Trick(
        "Dr. GRPO",
        ("adv_scale", "loss_agg"),
        "every group with signal: no division by the group's std, and a constant length normaliser instead of each answer's length",
        (),
        (
            Tested("drgrpo-length"),
            Tested("drgrpo-length", "drgrpo", "eval_completion_len"),
            Tested("normalisation-no-signal"),
            Tested("token-mean-drgrpo-constant"),
        ),
        "Liu et al. (arXiv:2503.20783): same accuracy with shorter wrong answers, Qwen2.5-Math-7B (43.3% AIME 2024)",
        unmeasured="acts on every step (not a rare trigger)",
        fires="every step",
        read="completion_len_wrong",
        when="wrong answers grow long: here the length lines are within noise",
    ),
    Trick(
        "RLOO",
        ("baseline",),
        "every group with signal: each answer's baseline is the mean of the other G - 1 rewards",
        (),
        (Tested("rloo-matches-grpo"), Tested("rloo-matches-grpo", "rloo", "kl")),
        "Ahmadian et al. (arXiv:2402.14740): beats PPO and DPO in RLHF, Pythia 6.9B and Llama 7B",
        unmeasured="acts on every step (not a rare trigger)",
        fires="every step",
        read="(none: it acts on every group)",
        when="not on this evidence: its accuracy gap to GRPO is within noise here, a sizeable cost not excluded",
    ),
    Trick(
        "CISPO",
        ("loss_mode", "clip_low", "clip_high"),
        "a token whose ratio left [1 - eps_low, 1 + eps_high]: its weight is clipped but it keeps the gradient PPO's clip removes",
        (
            Measured(
                "PPO's clip removed the gradient of {0:.4f} of tokens",
                NB10_PUSH,
                file=NB10_NB,
                line="hard clip (grpo): gradient removed on 2.29% of tokens (1.90% low side, 0.40% high side), mean over steps and seeds",
                pattern=r"removed on ([\d.]+)%",
                percent=(0,),
            ),
            Measured(
                "CISPO clipped the weight of {0:.4f} of its tokens",
                NB10_PUSH,
                file=NB10_NB,
                line="cispo: weight clipped on 11.88% of tokens, each keeping its gradient",
                pattern=r"clipped on ([\d.]+)%",
                percent=(0,),
            ),
        ),
        (Tested("cispo-push"), Tested("cispo-push", "cispo", "approx_kl"), Tested("cispo-sapo-exact")),
        "MiniMax-M1 (arXiv:2506.13585): DAPO's AIME score in half the steps, Qwen2.5-32B; trained a 456B MoE",
        fires="common",
        read="clip_frac",
        when="not on this evidence: where the clip bound often it ended below GRPO",
    ),
    Trick(
        "SAPO",
        ("loss_mode", "sapo_tau_pos", "sapo_tau_neg"),
        "every token whose ratio moved off 1: a smooth gate f(r) replaces the hard clip",
        (
            Measured(
                "the gate's mean slope was {0} (1 = no change; min over steps {1})",
                NB10_PUSH,
                file=NB10_NB,
                line="sapo: mean gate slope f'(r) 0.986 (1 = REINFORCE's weight; min over steps 0.977)",
                pattern=r"f'\(r\) ([\d.]+) .* steps ([\d.]+)",
            ),
        ),
        (Tested("sapo-push"), Tested("cispo-sapo-exact")),
        "Gao et al. (arXiv:2511.20347): steadier training and higher scores than GSPO and GRPO, Qwen3 models",
        fires="every step",
        read="sapo_grad_weight",
        when="ratios move far from 1: here its gate barely moved and its line is within noise",
    ),
    Trick(
        "TIS (truncated IS)",
        ("rollout_correction", "rollout_correction_threshold"),
        "a token whose trainer / sampler probability ratio is above C: its weight is capped at C",
        (
            Measured(
                "{0} of the stale sampler's token ratios beyond 2 or below 1/2",
                NB10_MM,
                file=NB10_NB,
                line="stale        0.0086   0.9954    0.0016          -       -",
                pattern=r"^stale\s+\S+\s+\S+\s+(\S+)",
            ),
            Measured(
                "TIS capped {0} of tokens",
                NB10_MM,
                file=NB10_NB,
                line="stale_tis    0.0067   0.6877    0.0011     0.9997  0.0003",
                pattern=r"^stale_tis(?:\s+\S+){4}\s+(\S+)",
            ),
        ),
        (
            Tested("rollout-correction", "stale_tis"),
            Tested(
                "stale-sampler",
                "stale",
                "eval_accuracy",
                context="the stale sampler's own effect, TIS off in both arms: the gap TIS corrects",
            ),
            Tested("bf16-mismatch", context="bf16 sampling's own effect, TIS off in both arms: the gap TIS corrects"),
        ),
        "Yao et al. 2025 (blog, fengyao.notion.site/off-policy-rl): the vLLM / FSDP gap, truncated IS restores training at billion-parameter scale",
        fires="rare",
        read="mismatch_ratio_beyond_2, rollout_is_clip_frac",
        when="the sampler and the trainer disagree on many tokens (a separate inference engine): here they rarely did;"
        " its gain against the stale sampler was shown, narrowly; it capped 0.0003 of tokens, and how far it moved"
        " the other weights is not printed",
    ),
    Trick(
        "MIS (masked IS)",
        ("rollout_correction", "rollout_correction_threshold"),
        "an answer (sequence modes) or token whose ratio is above C: it is masked out of the loss",
        (
            Measured(
                "sequence masking dropped {0} of tokens",
                NB10_MM,
                file=NB10_NB,
                line="stale_mis    0.0071   0.7605    0.0012     0.9921  0.0070",
                pattern=r"^stale_mis(?:\s+\S+){4}\s+(\S+)",
            ),
        ),
        (Tested("rollout-correction", "stale_mis"),),
        "Liu et al. 2025 (blog, richardli.xyz/rl-collapse): masking mismatched answers prevents collapse in long runs",
        fires="rare",
        read="mismatch_ratio_beyond_2, rollout_is_clip_frac",
        when="the sampler and the trainer disagree on many tokens (a separate inference engine): here they rarely did",
    ),
    Trick(
        "PPO critic",
        ("critic_lr", "value_clip", "gamma", "lam"),
        "every token: its advantage is GAE from a learned value model, trained alongside the policy",
        (
            Measured(
                "{0}x GRPO's time per step",
                "the default task (notebook 05), 3 seeds",
                claim="critic-cost",
                line="x GRPO                      1.005     4.146     1.000     1.420",
                pattern=r"x GRPO\s+[\d.]+\s+([\d.]+)",
            ),
        ),
        (Tested("critic-cost"),),
        "PPO (arXiv:1707.06347); GRPO (arXiv:2402.03300) drops the critic to save its memory and compute, DeepSeekMath 7B",
        fires="every step",
        read="step_seconds, explained_variance",
        when="you need per-token credit and can pay for a second model: here it is a cost (its row's time per step)",
    ),
    Trick(
        "DAPO, all switches",
        (),
        "the union of its switches' triggers (dynamic sampling, clip-higher, token-mean, overlong penalty)",
        (),
        (
            Tested("dapo-default-regime"),
            Tested("dapo-nb04"),
            Tested("dapo-zero-signal"),
            Tested("dapo-entropy-push", "dapo"),
            Tested("dapo-truncation", "dapo"),
            Tested("dapo-trap", "dapo", "eval_accuracy"),
        ),
        "DAPO (arXiv:2503.14476): 50 AIME 2024 points against naive GRPO's 30, Qwen2.5-32B",
        unmeasured="see its switches' rows",
        fires="its switches'",
        read="its switches' metrics",
        when="its switches' triggers fire: shown under the hard push and in the trap, below GRPO at a 24-token budget",
    ),
)


def quoted_sources() -> list[tuple[str, str]]:
    """(file, line) of every measured number that exists only as a printed line (not in a record or a benchmark row)."""
    return [(m.file, m.line) for t in TRICKS for m in t.measured if m.file and m.line]


def claim_ids() -> set[str]:
    """Every claim id the table names."""
    return {s.claim for t in TRICKS for s in t.tested} | {m.claim for t in TRICKS for m in t.measured if m.claim}
