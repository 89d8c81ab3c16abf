"""`rlalgos export --to trl|verl`: the mapping table against the installed TRL and
verl, the TRL exports really training, the verl overrides composing with verl's
own packaged config, and the one-line errors.

The TRL runs start `bash run.sh` (accelerate launch) in a subprocess without
rlalgos on the path: the export folder must stand on its own. The verl checks
need `pip install --no-deps verl` (verl's config files; its dependencies are
not needed) and hydra-core; without them they are skipped.
"""

import dataclasses
import functools
import importlib.util
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from rlalgos.tools.cli import main
from rlalgos.config import TrainConfig, make_config
from rlalgos.tools.export import ENGINES, mapping_table
from rlalgos.tools.export.fields import FIELDS
from rlalgos.tools.export.trl import TRL_SCRIPT_KEYS, trl_settings
from rlalgos.tools.export.verl import NO_DUAL_CLIP, verl_overrides
from rlalgos.tools.export.verl_files import compose_verl, verl_config_dir

ALGOS = ["reinforce", "ppo", "grpo", "dapo", "drgrpo", "rloo", "dualclip", "gspo", "clipcov", "klcov", "cispo", "sapo"]
TRL_ALGOS = [a for a in ALGOS if a != "ppo"]
TINY = [
    "--steps",
    "2",
    "--prompts-per-step",
    "2",
    "--group-size",
    "2",
    "--max-new-tokens",
    "16",
    "--eval-every",
    "0",
    "--save-every",
    "0",
    "--device",
    "cpu",
    "--no-progress",
]


def export_cli(engine, out, *source, gpus=1):
    return main(["export", "--to", engine, "--export-dir", str(out), "--gpus", str(gpus), *source])


# --------------------------------------------------------------------------- #
# The table
# --------------------------------------------------------------------------- #


def test_the_table_renders_one_line_per_field_and_a_column_per_engine():
    table = mapping_table().splitlines()
    assert len(table) == len(FIELDS) + 2 and all(line.count("|") == 4 + len(ENGINES) for line in table)
    assert "| `minibatches` | `steps_per_generation` | `actor.ppo_mini_batch_size` |" in mapping_table()
    assert f"verl {NO_DUAL_CLIP:g}" in next(f.conversion for f in FIELDS if f.name == "clip_c")


@pytest.mark.parametrize("algo", TRL_ALGOS)
def test_trl_fields_exist_and_the_config_holds_the_table_values(algo, tmp_path):
    trl = pytest.importorskip("trl")
    over = {"dapo": {"entropy_threshold": 0.2}, "grpo": {"clip_c": 3.0, "epochs": 2}}.get(algo, {})
    cfg, algo_cfg = TrainConfig(algo=algo, device="cpu"), make_config(algo, **over)
    script, config, mapping = trl_settings(cfg, algo_cfg)
    cls = getattr(trl, script["trainer"].replace("Trainer", "Config"))
    names = {f.name for f in dataclasses.fields(cls)}
    assert set(config) <= names, f"not {cls.__name__} fields: {set(config) - names}"
    assert set(script) <= set(TRL_SCRIPT_KEYS)
    args = cls(**{**config, "output_dir": str(tmp_path)})
    for key, value in config.items():
        if key != "output_dir":
            assert getattr(args, key) == ([] if (key, value) == ("report_to", "none") else value), (
                key
            )  # [] is TrainingArguments' "none"
    # what the table means, checked by hand for each algorithm
    expect = {
        "grpo": {
            "beta": 0.04,
            "loss_type": "grpo",
            "scale_rewards": "group",
            "epsilon": 0.2,
            "epsilon_high": 0.2,
            "delta": 3.0,
            "num_iterations": 2,
            "use_bias_correction_kl": False,
        },
        "dapo": {
            "beta": 0.0,
            "loss_type": "dapo",
            "epsilon_high": 0.28,
            "mask_truncated_completions": False,
            "use_adaptive_entropy": True,
            "entropy_target": 0.2,
            "entropy_coef": 0.01,
        },
        "drgrpo": {"loss_type": "dr_grpo", "scale_rewards": "none", "max_completion_length": 48},
        "dualclip": {"delta": 3.0},
        "gspo": {
            "importance_sampling_level": "sequence",
            "loss_type": "grpo",
            "epsilon": 3e-4,
            "epsilon_high": 4e-4,
            "steps_per_generation": 4,
            "max_steps": 240,
        },
        "rloo": {"beta": 0.0, "normalize_advantages": False},
        "reinforce": {"beta": 0.0},
        "clipcov": {"loss_type": "grpo", "epsilon": 0.2, "epsilon_high": 0.2},
        "klcov": {"loss_type": "grpo"},  # no equivalent: the clipped loss
        "cispo": {
            "loss_type": "cispo",
            "epsilon": 0.2,
            "epsilon_high": 1.2,
        },  # TRL's cispo bounds the ratio itself: 1 + clip_high
        "sapo": {"loss_type": "sapo", "sapo_temperature_pos": 1.0, "sapo_temperature_neg": 1.05},
    }[algo]
    assert {k: config[k] for k in expect} == expect
    assert (
        config["learning_rate"] == 1e-4 and config["lr_scheduler_type"] == "constant" and config["num_generations"] == 8
    )
    assert script["trainer"] == ("RLOOTrainer" if algo in ("reinforce", "rloo") else "GRPOTrainer")
    assert script["reward_funcs"] == ["correctness_reward", "format_reward"] + (
        ["overlong_penalty"] if algo == "dapo" else []
    )
    assert config["reward_weights"] == [1.0, 0.0] + ([1.0] if algo == "dapo" else [])
    assert any("learning rate" in n or "1e-06" in n for n in mapping.notes)


def test_batch_sizes_convert_counts_to_sizes():
    cfg = TrainConfig(algo="grpo", prompts_per_step=32, group_size=8)
    algo = make_config("grpo", minibatches=4, micro_batch_size=8)
    _, config, _ = trl_settings(cfg, algo, gpus=2)  # 256 sequences, minibatches of 64, 32 per GPU, passes of 8
    assert (
        config["per_device_train_batch_size"],
        config["gradient_accumulation_steps"],
        config["steps_per_generation"],
    ) == (8, 4, 16)
    assert (
        config["per_device_train_batch_size"] * 2 * config["steps_per_generation"] == 256
        and config["max_steps"] == 60 * 4
    )
    values, _ = verl_overrides(cfg, algo, gpus=2)
    assert values["actor_rollout_ref.actor.ppo_mini_batch_size"] == 8  # a size in prompts: 32 / 4
    assert values["actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu"] == 8 and values["data.train_batch_size"] == 32
    with pytest.raises(ValueError, match="counts prompts"):
        verl_overrides(TrainConfig(algo="grpo", prompts_per_step=6, group_size=8), make_config("grpo", minibatches=4))


def test_kl_and_defaults_that_differ_are_named():
    _, config, mapping = trl_settings(TrainConfig(algo="grpo"), make_config("grpo"))
    assert config["beta"] == 0.04
    assert any("TRL's default beta is 0.0" in n for n in mapping.notes)
    values, vmap = verl_overrides(TrainConfig(algo="grpo"), make_config("grpo"))
    assert (
        values["actor_rollout_ref.actor.use_kl_loss"] is True and values["actor_rollout_ref.actor.kl_loss_coef"] == 0.04
    )
    assert (
        values["actor_rollout_ref.actor.kl_loss_type"] == "k3"
        and values["actor_rollout_ref.actor.clip_ratio_c"] == NO_DUAL_CLIP
    )
    values, _ = verl_overrides(TrainConfig(algo="reinforce"), make_config("reinforce", kl_coef=0.1))
    assert (
        values["algorithm.use_kl_in_reward"] is True
        and values["algorithm.kl_ctrl.kl_coef"] == 0.1
        and values["algorithm.kl_penalty"] == "k1"
    )
    assert any(n.startswith("differs: `lr` = 0.0001") for n in vmap.notes)


# --------------------------------------------------------------------------- #
# TRL: the exported folder trains
# --------------------------------------------------------------------------- #


# One run per trainer and reward set: GRPOTrainer with eval (grpo), with the overlong reward (dapo), and
# RLOOTrainer. drgrpo and the other GRPOTrainer presets differ from grpo only in GRPOConfig values, which
# test_trl_fields_exist_and_the_config_holds_the_table_values builds against the installed TRL.
@pytest.mark.parametrize("algo", ["grpo", "dapo", "rloo"])
def test_trl_export_trains_two_steps(algo, tmp_path):
    pytest.importorskip("trl")
    out = tmp_path / "export"
    extra = ["--eval-every", "1", "--eval-prompts", "2", "--eval-samples", "2"] if algo == "grpo" else []
    assert export_cli("trl", out, algo, *TINY, *extra) == 0
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # the folder must run without rlalgos
    env.update(
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
        OMP_NUM_THREADS="1",
        HF_HUB_OFFLINE="1",
        TOKENIZERS_PARALLELISM="false",
    )
    proc = subprocess.run(
        ["bash", str(out / "run.sh")], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log[-3000:]
    assert log.count("'loss':") == 2, log[-3000:]  # two optimizer steps, one per rlalgos step
    assert "'rewards/correctness_reward/mean'" in log
    if algo == "dapo":
        assert "'rewards/overlong_penalty/mean'" in log
    if algo == "grpo":
        assert "'eval_rewards/correctness_reward/mean'" in log
    assert (out / "output" / "model.safetensors").is_file()


def test_ppo_to_trl_is_one_line_and_writes_nothing(tmp_path, capsys):
    assert export_cli("trl", tmp_path / "x", "ppo") == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--to verl" in err and "ppo" in err
    assert not (tmp_path / "x").exists()


def test_export_folder_rule_and_from_run_folder(tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    cfg, algo = TrainConfig(algo="dapo", out_dir=str(run)), make_config("dapo", lr=3e-4, minibatches=4)
    (run / "config.json").write_text(json.dumps({"train": dataclasses.asdict(cfg), "algo": dataclasses.asdict(algo)}))
    out = tmp_path / "export"
    assert export_cli("verl", out, "run", str(run)) == 0
    assert "actor_rollout_ref.actor.optim.lr=0.0003" in (out / "run.sh").read_text()
    printed = capsys.readouterr().out
    assert (
        "no equivalent: `degenerate_weight`" in printed
        and "no equivalent: `degenerate_weight`" in (out / "README.md").read_text()
    )
    assert export_cli("verl", out, "run", str(run)) == 2  # an export is there: only with --overwrite
    (out / "mine.txt").write_text("keep")
    assert main(["export", "--to", "trl", "--export-dir", str(out), "--overwrite", "run", str(run)]) == 0
    assert (
        (out / "mine.txt").read_text() == "keep"
        and not (out / "data" / "train.parquet").exists()
        and (out / "trl_config.yaml").is_file()
    )
    assert export_cli("trl", tmp_path / "run", "grpo") == 2  # a folder that is not an export is never touched
    assert "is not empty and holds no export" in capsys.readouterr().err


# --------------------------------------------------------------------------- #
# verl: the overrides against verl's packaged config
# --------------------------------------------------------------------------- #


def has_key(cfg, key: str) -> bool:
    """``key`` is in the config's structure (its value may be ??? , verl's "must be set")."""
    from omegaconf import OmegaConf

    parent, _, leaf = key.rpartition(".")
    node = OmegaConf.select(cfg, parent) if parent else cfg
    return node is not None and leaf in list(node.keys())  # `in` is False for a ??? value


@functools.cache
def verl_base():
    """verl's packaged config with no overrides, composed once (Hydra takes ~2 s a compose; the tests only read it)."""
    return compose_verl([])


def verl_words(out: Path) -> list[str]:
    text = (out / "run.sh").read_text().replace("\\\n", " ").replace("$HERE", str(out))
    return shlex.split(text.split("verl.trainer.main_ppo", 1)[1])


@pytest.mark.parametrize("algo", ALGOS)
def test_verl_overrides_resolve_and_round_trip(algo, tmp_path):
    pytest.importorskip("hydra")
    if verl_config_dir() is None:
        pytest.skip("verl is not installed (pip install --no-deps verl)")
    from omegaconf import OmegaConf

    over = {
        "grpo": {"kl_estimator": "k2", "minibatches": 4, "micro_batch_size": 16},
        "dapo": {"dynamic_sampling": "downweight"},
        "reinforce": {"kl_coef": 0.05, "kl_estimator": "k3"},
    }.get(algo, {})
    out = tmp_path / "export"
    assert (
        export_cli(
            "verl", out, algo, *[w for k, v in over.items() for w in (f"--{k.replace('_', '-')}", str(v))], gpus=2
        )
        == 0
    )
    words = verl_words(out)
    cfg, base = compose_verl(words), verl_base()
    values, _ = verl_overrides(TrainConfig(algo=algo), make_config(algo, **over), gpus=2)
    assert len(words) == len(values)
    for key, value in values.items():
        plain = key.lstrip("+")
        if key.startswith("+"):  # added keys: absent from the packaged config, read by verl's dapo reward manager
            assert not has_key(base, plain)
        else:
            assert has_key(base, plain), key
        got = OmegaConf.select(cfg, plain)
        got = OmegaConf.to_container(got) if OmegaConf.is_config(got) else got
        assert got == (value.replace("@HERE@", str(out)) if isinstance(value, str) else value), key
    if algo == "dapo":
        src = (
            verl_config_dir().parent.parent / "experimental" / "reward_loop" / "reward_manager" / "dapo.py"
        ).read_text()
        assert 'get("reward_kwargs", {}).get("overlong_buffer_cfg"' in src and "max_resp_len" in src
        assert cfg.algorithm.filter_groups.enable is False  # downweight: no equivalent, noted
    expected = {"ppo": "gae", "reinforce": "rloo", "rloo": "rloo"}.get(algo, "grpo")
    assert cfg.algorithm.adv_estimator == expected
    assert cfg.actor_rollout_ref.actor.policy_loss.loss_mode == {
        "gspo": "gspo",
        "clipcov": "clip_cov",
        "klcov": "kl_cov",
        "cispo": "cispo",
        "sapo": "sapo",
    }.get(algo, "vanilla")


def test_loss_modes_map_to_both_engines():
    """loss_mode: verl's policy_loss.loss_mode and its parameters; TRL's loss_type cispo / sapo;
    Clip-Cov and KL-Cov have no TRL equivalent, and the note names TRL's nearest options."""
    cfg = TrainConfig(algo="grpo")
    values, vmap = verl_overrides(cfg, make_config("clipcov", clip_cov_ratio=1e-3, clip_cov_lb=0.5, clip_cov_ub=4.0))
    pl = "actor_rollout_ref.actor.policy_loss."
    assert {k: values[pl + k] for k in ("loss_mode", "clip_cov_ratio", "clip_cov_lb", "clip_cov_ub")} == {
        "loss_mode": "clip_cov",
        "clip_cov_ratio": 1e-3,
        "clip_cov_lb": 0.5,
        "clip_cov_ub": 4.0,
    }
    assert (
        pl + "kl_cov_ratio" not in values and "actor_rollout_ref.actor.tau_pos" not in values
    )  # another mode's parameters: not set
    values, _ = verl_overrides(cfg, make_config("klcov", kl_cov_ratio=5e-4, kl_cov_coef=1.0))
    assert (values[pl + "loss_mode"], values[pl + "kl_cov_ratio"], values[pl + "ppo_kl_coef"]) == ("kl_cov", 5e-4, 1.0)
    values, vmap = verl_overrides(cfg, make_config("sapo", sapo_tau_pos=0.9, loss_agg="token-mean"))
    assert (
        values[pl + "loss_mode"],
        values["actor_rollout_ref.actor.tau_pos"],
        values["actor_rollout_ref.actor.tau_neg"],
    ) == ("sapo", 0.9, 1.05)
    assert any("verl's sapo always aggregates seq-mean-token-mean" in n for n in vmap.notes)
    for name in ("clipcov", "klcov"):
        _, config, mapping = trl_settings(cfg, make_config(name))
        assert config["loss_type"] == "grpo"  # the clipped loss, from loss_agg
        note = next(n for n in mapping.notes if n.startswith("no equivalent: `loss_mode`"))
        assert "epsilon_high" in note and "top_entropy_quantile" in note
    _, config, mapping = trl_settings(cfg, make_config("cispo", clip_high=0.28))
    assert config["loss_type"] == "cispo" and config["epsilon_high"] == pytest.approx(1.28)
    assert any("no lower bound" in n for n in mapping.notes) and any(
        "always aggregates token-mean" in n for n in mapping.notes
    )
    _, config, mapping = trl_settings(cfg, make_config("cispo", loss_agg="token-mean"))
    assert not any("always aggregates" in n for n in mapping.notes)
    _, config, _ = trl_settings(cfg, make_config("sapo", sapo_tau_neg=2.0))
    assert (config["loss_type"], config["sapo_temperature_pos"], config["sapo_temperature_neg"]) == ("sapo", 1.0, 2.0)
    _, config, mapping = trl_settings(cfg, make_config("grpo"))
    assert "sapo_temperature_pos" not in config and not any(
        "loss_mode" in n for n in mapping.notes
    )  # the default mode: nothing added


def test_verl_data_layout_and_compute_score(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    out = tmp_path / "export"
    assert export_cli("verl", out, "dapo", "--eval-prompts", "5") == 0
    rows = pq.read_table(out / "data" / "train.parquet").to_pylist()
    assert len(pq.read_table(out / "data" / "test.parquet").to_pylist()) == 5
    r = rows[0]
    assert r["data_source"] == "rlalgos/addition" and r["prompt"] == [
        {"role": "user", "content": r["extra_info"]["prompt"]}
    ]
    spec = importlib.util.spec_from_file_location("exported_rewards", out / "rewards.py")
    rewards = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(rewards)
    gt = r["reward_model"]["ground_truth"]
    assert rewards.compute_score(r["data_source"], r["extra_info"]["target"], gt, r["extra_info"]) == 1.0
    assert rewards.compute_score(r["data_source"], f"#{int(gt) + 1}", gt, r["extra_info"]) == 0.0
    # TRL's side of the same file: the overlong penalty ramps over the last 8 of 48 tokens
    assert rewards.overlong_penalty([""] * 3, [""] * 3, [[0] * 40, [0] * 44, [0] * 48]) == [0.0, -0.5, -1.0]


def test_the_table_imports_neither_torch_nor_transformers():
    code = "import sys, rlalgos.tools.export; rlalgos.tools.export.mapping_table(); print(sorted(m for m in ('torch', 'transformers') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"
