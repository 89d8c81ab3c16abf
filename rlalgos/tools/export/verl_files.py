"""What the verl export writes (``run.sh`` with its Hydra overrides, ``data/*.parquet`` in verl's
layout), and verl's own packaged config, composed offline to check the overrides against."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from .base import Ctx, Mapping, write_run_sh


def hydra_value(v) -> str:
    """A value as a Hydra override writes it (strings quoted, so any text survives)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return "null"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, list):
        return "[" + ",".join(hydra_value(x) for x in v) + "]"
    s = str(v)
    if "'" in s or "\\" in s:
        raise ValueError(f"cannot write {s!r} as a Hydra override (a quote or backslash in it)")
    return f"'{s}'"


def shell_word(override: str) -> str:
    """One override as a double-quoted shell word: only ``$HERE`` expands."""
    escaped = override.replace("\\", "\\\\").replace('"', '\\"').replace("`", "\\`").replace("$", "\\$")
    return '"' + escaped.replace("@HERE@", "$HERE") + '"'


def verl_config_dir() -> Path | None:
    """verl's packaged trainer config folder, found without importing verl (which needs ray)."""
    spec = importlib.util.find_spec("verl")
    if spec is None or not spec.submodule_search_locations:
        return None
    d = Path(list(spec.submodule_search_locations)[0]) / "trainer" / "config"
    return d if (d / "ppo_trainer.yaml").is_file() else None


def compose_verl(overrides: list[str]):
    """verl's ppo_trainer config composed by Hydra with ``overrides`` (offline; needs verl's package files and hydra-core)."""
    from hydra import compose, initialize_config_dir

    d = verl_config_dir()
    if d is None:
        raise FileNotFoundError(
            "verl is not installed (pip install --no-deps verl): its packaged trainer config is needed"
        )
    with initialize_config_dir(config_dir=str(d), version_base=None):
        return compose("ppo_trainer", overrides=overrides)


def defaults_differ(values: dict) -> list[str]:
    try:
        from omegaconf import OmegaConf

        base = compose_verl([])
    except (ImportError, FileNotFoundError) as e:
        return [f"(verl's defaults were not compared: {e})"]
    out = []
    for key, v in values.items():
        if key.startswith("+"):
            continue
        default = OmegaConf.select(base, key, throw_on_missing=False)
        default = OmegaConf.to_container(default) if OmegaConf.is_config(default) else default
        if default != v and "@HERE@" not in str(v):
            out.append(f"`{key}`: {v!r} (verl's default {default!r})")
    return out


def _rows(rows: list[dict], split: str, task) -> list[dict]:
    """verl's layout: chat-message prompt, data_source, the task's ability, reward_model.ground_truth (the
    task's answer column), extra_info (every other column)."""
    key = task.answer_key
    return [
        {
            "data_source": f"rlalgos/{task.name}",
            "prompt": [{"role": "user", "content": r["prompt"]}],
            "ability": task.ability,
            "reward_model": {"style": "rule", "ground_truth": str(r[key])},
            "extra_info": {"split": split, "index": i, **{k: v for k, v in r.items() if k != key}},
        }
        for i, r in enumerate(rows)
    ]


def write(out: Path, ctx: Ctx, mapping: Mapping, train: list[dict], test: list[dict]) -> tuple[str, list[str]]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    (out / "data").mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(_rows(train, "train", ctx.task)), out / "data" / "train.parquet")
    pq.write_table(pa.Table.from_pylist(_rows(test, "test", ctx.task)), out / "data" / "test.parquet")
    words = [shell_word(f"{k}={hydra_value(v)}") for k, v in mapping.values.items()]
    write_run_sh(
        out, ["python -m verl.trainer.main_ppo \\"] + [f"    {w} \\" for w in words[:-1]] + [f"    {words[-1]}"]
    )
    return f"python -m verl.trainer.main_ppo with {len(words)} overrides", defaults_differ(mapping.values)
