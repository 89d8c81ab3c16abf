"""Bad input, non-finite numbers, interrupts and resume: clear errors, no lost rows."""

import json

import pandas as pd
import pytest
import torch

from rlalgos.tools import cli
from rlalgos.algorithms import make_config
from rlalgos.tasks import RewardSet, Task, addition_task, correctness_reward
from rlalgos.train import TrainConfig, load_metrics, resume, train

TRAIN_COLS = ["reward_mean", "accuracy", "entropy", "kl", "grad_norm", "completion_len", "loss"]


def cfg_for(tmp_path, tiny_dir, name="run", **kw):
    base = dict(
        model=str(tiny_dir),
        steps=4,
        prompts_per_step=4,
        group_size=4,
        max_new_tokens=8,
        eval_every=0,
        eval_prompts=4,
        eval_samples=2,
        out_dir=str(tmp_path / name),
        progress=False,
    )
    base.update(kw)
    return TrainConfig(**base)


def task_with_reward(fn, name="custom"):
    base = addition_task()
    return Task("addition", base.train, base.test, RewardSet([("correct", correctness_reward, 1.0), (name, fn, 1.0)]))


@pytest.mark.parametrize(
    "kw,msg",
    [
        (dict(group_size=1, algo="grpo"), "group_size must be >= 2"),
        (dict(steps=0), "steps must be >= 1"),
        (dict(temperature=0.0), "temperature must be > 0"),
        (dict(max_new_tokens=-5), "max_new_tokens must be >= 0"),
        (dict(algo="ppo2"), "unknown algorithm 'ppo2'"),
        (dict(task="chess"), "unknown task 'chess'"),
    ],
)
def test_bad_train_config_fails_before_running(tmp_path, tiny_dir, kw, msg):
    with pytest.raises(ValueError, match=msg):
        train(cfg_for(tmp_path, tiny_dir, **kw))
    assert not (tmp_path / "run" / "metrics.jsonl").exists()


def test_reward_function_that_raises_is_named(tmp_path, tiny_dir):
    def broken(prompts, completions, **kw):
        raise KeyError("answer2")

    with pytest.raises(ValueError, match=r"reward function 'broken' raised KeyError.*on prompt '"):
        train(cfg_for(tmp_path, tiny_dir), task=task_with_reward(broken, "broken"))


def test_reward_function_wrong_length_or_nan(tmp_path, tiny_dir):
    with pytest.raises(ValueError, match=r"'short' returned 1 values for \d+ completions"):
        train(cfg_for(tmp_path / "a", tiny_dir), task=task_with_reward(lambda p, c, **k: [0.0], "short"))
    with pytest.raises(ValueError, match=r"'nan' returned nan for prompt .* rewards must be finite"):
        train(
            cfg_for(tmp_path / "b", tiny_dir), task=task_with_reward(lambda p, c, **k: [float("nan")] * len(c), "nan")
        )


def test_nonfinite_gradient_stops_and_keeps_rows_and_weights(tmp_path, tiny_dir, monkeypatch):
    from rlalgos.algorithms.reinforce import Reinforce

    orig = Reinforce.loss

    def poisoned(self, mb, out, adv, old):  # NaN in the update of step 3 (two updates done before it)
        loss, m = orig(self, mb, out, adv, old)
        return (loss * float("nan") if self.step_count == 2 else loss), m

    monkeypatch.setattr(Reinforce, "loss", poisoned)
    cfg = cfg_for(tmp_path, tiny_dir, save_every=1)
    with pytest.raises(FloatingPointError, match="step 3: non-finite loss"):
        train(cfg)
    rows = load_metrics(tmp_path / "run")
    assert rows["step"].tolist() == [0, 1, 2, 3]
    assert rows["stopped"].iloc[-1].startswith("non-finite")
    state = torch.load(tmp_path / "run" / "checkpoint" / "trainer_state.pt", weights_only=False)
    assert state["step"] == 2  # the last good checkpoint
    from rlalgos.model import load_policy

    model, _ = load_policy(tmp_path / "run" / "checkpoint", device="cpu")
    assert all(torch.isfinite(p).all() for p in model.parameters())


def test_nonfinite_skip_goes_on(tmp_path, tiny_dir, monkeypatch):
    from rlalgos.algorithms.reinforce import Reinforce

    orig = Reinforce.loss

    def poisoned(self, mb, out, adv, old):  # inf in the update of step 2
        loss, m = orig(self, mb, out, adv, old)
        return (loss * float("inf") if self.step_count == 1 else loss), m

    monkeypatch.setattr(Reinforce, "loss", poisoned)
    df = train(cfg_for(tmp_path, tiny_dir, on_nonfinite="skip"))
    assert df["step"].tolist() == [0, 1, 2, 3, 4] and df["nonfinite"].fillna(0).tolist() == [0, 0, 1, 0, 0]


def test_interrupt_keeps_rows_and_resume_matches_uninterrupted(tmp_path, tiny_dir, monkeypatch):
    from rlalgos.algorithms.dapo import DAPO

    full = train(cfg_for(tmp_path, tiny_dir, "full", steps=5, seed=7, algo="dapo"))

    orig = DAPO.update

    def ctrl_c_at_step_4(self, ro):
        if self.step_count == 3:  # steps 1..3 done: Ctrl-C arrives during step 4
            raise KeyboardInterrupt
        return orig(self, ro)

    monkeypatch.setattr(DAPO, "update", ctrl_c_at_step_4)
    cfg = cfg_for(tmp_path, tiny_dir, "cut", steps=5, seed=7, algo="dapo", save_every=2)
    with pytest.raises(KeyboardInterrupt):
        train(cfg)
    cut = load_metrics(tmp_path / "cut")
    assert cut["step"].tolist() == [0, 1, 2, 3]  # every row computed before the interrupt is there
    monkeypatch.setattr(DAPO, "update", orig)
    resumed = resume(tmp_path / "cut")  # continues from the step-2 checkpoint
    assert resumed["step"].tolist() == [0, 1, 2, 3, 4, 5]
    pd.testing.assert_frame_equal(
        resumed[TRAIN_COLS].iloc[1:].reset_index(drop=True), full[TRAIN_COLS].iloc[1:].reset_index(drop=True)
    )
    assert resumed["eval_accuracy"].iloc[-1] == pytest.approx(full["eval_accuracy"].iloc[-1])
    assert load_metrics(tmp_path / "cut")["step"].tolist() == [0, 1, 2, 3, 4, 5]  # no duplicated rows on disk


def test_resume_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="config.json not found"):
        resume(tmp_path)
    (tmp_path / "config.json").write_text(
        json.dumps({"train": TrainConfig(out_dir=str(tmp_path)).__dict__, "algo": make_config("reinforce").__dict__})
    )
    with pytest.raises(FileNotFoundError, match="no checkpoint in"):
        resume(tmp_path)
    (tmp_path / "checkpoint").mkdir()
    (tmp_path / "checkpoint" / "trainer_state.pt").write_bytes(b"garbage")
    with pytest.raises(ValueError, match="is corrupt"):
        resume(tmp_path)


def test_cli_errors_are_one_line_exit_2(tmp_path, capsys):
    cases = [
        (["train", "grpo", "--group-size", "1"], "group_size must be >= 2"),
        (["train", "grpo", "--clip-low", "1.5"], "clip_low must be in (0, 1)"),
        (["train", "reinforce", "--lr", "-0.1"], "lr must be > 0"),
        (["train", "ppo", "--minibatches", "3"], "do not split into 3 minibatches"),
        (["compare", "--algos", "reinforce:clip_high=0.3"], "reinforce has no option 'clip_high'"),
        (["resume", str(tmp_path / "none")], "not found"),
        (["eval", "--model", str(tmp_path / "missing")], "no such folder"),
        (["eval", "--top-p", "0"], "--top-p in (0, 1]"),
        (["compare", "--jobs", "-1"], "--jobs >= 0 (0 = auto)"),
        (["train", "dapo", "--kl-sample-rows", "-2"], "kl_sample_rows must be >= 0"),
        (["plot", str(tmp_path)], "holds no metrics.jsonl"),
        (["compare", "--algos", "reinforce,nope"], "unknown algorithm 'nope'"),
    ]
    for argv, msg in cases:
        assert cli.main(argv) == 2, argv
        err = capsys.readouterr().err.strip()
        assert msg in err and err.count("\n") == 0 and "Traceback" not in err, (argv, err)


def test_bad_files_via_cli(tmp_path, tiny_dir, capsys):
    import shutil

    corrupt = tmp_path / "corrupt"
    shutil.copytree(tiny_dir, corrupt)
    (corrupt / "model.safetensors").write_bytes(b"\x00" * 100)
    gsm = tmp_path / "gsm.jsonl"
    gsm.write_text('{"question": "1+1?", "answer": "#### 2"}\n{"question": "no answer"}\n')
    cases = [
        (["eval", "--model", str(corrupt)], "cannot load a model from"),
        (["eval", "--model", str(tiny_dir), "--task", f"gsm8k:{gsm}"], "gsm.jsonl:2: missing field(s) answer"),
        (["eval", "--model", str(tiny_dir), "--task", f"gsm8k:{tmp_path / 'nope.jsonl'}"], "is not a file"),
    ]
    for argv, msg in cases:
        assert cli.main(argv) == 2, argv
        err = capsys.readouterr().err.strip()
        assert msg in err and "\n" not in err, (argv, err)
