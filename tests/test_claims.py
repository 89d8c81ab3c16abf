"""The claims scorecard as code (rlalgos/workbook/claims/): the generated pages match
the committed JSON, the JSON matches the notebooks' committed outputs, every claim is
well formed, one claim runs end to end, and the CLI's bad inputs are one line."""

import json
from dataclasses import replace
from pathlib import Path

import pytest

from rlalgos.tools.cli import main
from rlalgos.workbook import claims

CHECKOUT = claims.Layout(Path(__file__).resolve().parents[1])  # this repository, whose files the claims read
ROOT = CHECKOUT.root


@pytest.mark.parametrize("claim", claims.CLAIMS, ids=lambda c: c.id)
def test_published_numbers_are_still_in_the_committed_outputs(claim):
    """docs/claims/<id>.json is what extract_published reads from the notebooks now: a number that
    is no longer printed (or printed differently) fails here. Fix: python docs/extract_claims.py."""
    committed = json.loads((CHECKOUT.json_dir / f"{claim.id}.json").read_text(encoding="utf-8"))
    if committed["numbers_from"] != "committed outputs":  # published by `rlalgos claims run --publish`
        pytest.skip(f"{claim.id}: numbers from {committed['numbers_from']}")
    assert claims.extract_published(claim, ROOT) == committed


def test_pages_are_generated_from_the_json_no_hand_edits():
    records = claims.load_published(CHECKOUT.json_dir)
    assert list(records) == [c.id for c in claims.CLAIMS], (
        "every claim has docs/claims/<id>.json (python docs/extract_claims.py)"
    )
    assert CHECKOUT.page.read_text(encoding="utf-8") == claims.render_page(records), (
        "docs/claims.md differs from `rlalgos claims report`"
    )
    readme = CHECKOUT.readme.read_text(encoding="utf-8")
    assert readme == claims.readme_with_block(readme, claims.render_readme_block(records)), (
        "README.md's claims block differs from `rlalgos claims report`"
    )
    assert len(readme.splitlines()) < 250


def test_every_claim_is_well_formed():
    assert len({c.id for c in claims.CLAIMS}) == len(claims.CLAIMS)
    for c in claims.CLAIMS:
        assert c.kind in claims.KINDS and c.id == c.id.lower() and " " not in c.id, c.id
        if c.kind == "exact":
            assert c.test and not c.arms and (ROOT / c.test.split("::")[0]).exists(), c.id
            continue
        assert len(c.seeds) >= claims.MIN_SEEDS, f"{c.id}: {len(c.seeds)} seeds"
        assert c.figure, f"{c.id}: no figure"
        path, _, cell = c.figure.partition("#cell-")
        assert (ROOT / path).exists(), f"{c.id}: {path} does not exist"
        if cell:
            nb = json.loads((ROOT / path).read_text(encoding="utf-8"))
            outs = nb["cells"][int(cell)].get("outputs", [])
            assert any("image/png" in o.get("data", {}) for o in outs), f"{c.id}: {c.figure} holds no figure"
        if c.arms:
            assert (c.base in c.arms or c.fit) and c.run_dir, (
                c.id
            )  # a fit (pass@k against the base model) may have no base arm
            assert set(c.train) <= set(c.arms), f"{c.id}: train settings for arms it does not have"
            for e in (
                c.expects
            ):  # `claims run` computes every comparison the claim makes: none may name an arm it does not train
                assert e.arm in c.arms and (e.base or c.base) in c.arms, (
                    f"{c.id}: {e.arm} vs {e.base or c.base} names an arm not in its arms"
                )
        for e in c.expects:
            assert e.direction in (1, -1), c.id


def test_a_claim_with_too_few_seeds_or_no_figure_fails_the_check(monkeypatch):
    bad = replace(claims.get_claim("rloo-matches-grpo"), seeds=(0, 1), figure="docs/figures/nope.png")
    monkeypatch.setattr(claims, "CLAIMS", (bad,))
    with pytest.raises(AssertionError):
        test_every_claim_is_well_formed()


def test_directed_verdicts():
    assert claims.directed_verdict(0.1, 0.3, +1, 3) == "shown"
    assert claims.directed_verdict(0.1, 0.3, -1, 3) == "opposite"
    assert claims.directed_verdict(-0.1, 0.3, -1, 3) == "within noise"
    assert claims.directed_verdict(float("nan"), float("nan"), 1, 1) == "one seed"


def test_run_claim_end_to_end_at_tiny_settings(tmp_path):
    """Two arms, one seed, two steps, in a tmp folder; a second call reuses the finished runs."""
    kw = dict(
        seeds=[0],
        out_dir=tmp_path / "out",
        runs_dir=tmp_path / "runs",
        progress=False,
        steps=2,
        prompts_per_step=2,
        group_size=2,
        eval_prompts=2,
        eval_samples=1,
        eval_every=0,
    )
    with pytest.warns(UserWarning, match="a verdict needs at least 3"):
        record = claims.run_claim("rloo-matches-grpo", **kw)
    assert record["verdict"] == "one seed" and record["numbers_from"] == "rlalgos claims run"
    assert (
        json.loads((tmp_path / "out" / "rloo-matches-grpo.json").read_text())["effects"][0]["metric"] == "eval_accuracy"
    )
    assert (tmp_path / "runs" / "rloo-matches-grpo" / "rloo" / "seed0" / "metrics.jsonl").exists()
    before = (tmp_path / "runs" / "rloo-matches-grpo" / "grpo" / "seed0" / "metrics.jsonl").stat().st_mtime
    with pytest.warns(UserWarning):
        again = claims.run_claim("rloo-matches-grpo", **kw)
    assert (tmp_path / "runs" / "rloo-matches-grpo" / "grpo" / "seed0" / "metrics.jsonl").stat().st_mtime == before
    assert again["effects"] == record["effects"]
    with (
        pytest.raises(ValueError, match="holds another run"),
        pytest.warns(UserWarning),
    ):  # other settings, same folders: never overwritten silently
        claims.run_claim("rloo-matches-grpo", **{**kw, "steps": 3})


def test_the_passk_claim_samples_each_checkpoint_and_the_base_model(tmp_path, monkeypatch):
    """rl-sharpens at tiny settings: two arms, one seed, one step; pass@1 and pass@n of each checkpoint
    against the base model on the same prompts, the samples cached next to each model and read back."""
    from rlalgos.workbook import measures

    monkeypatch.setattr(measures, "PASSK_N", 4)
    monkeypatch.setattr(measures, "PASSK_PROMPTS", 2)
    kw = dict(
        seeds=[0],
        out_dir=tmp_path / "out",
        runs_dir=tmp_path / "runs",
        progress=False,
        steps=1,
        prompts_per_step=2,
        group_size=2,
        eval_prompts=2,
        eval_samples=1,
    )
    with pytest.warns(UserWarning, match="a verdict needs at least 3"):
        record = claims.run_claim("rl-sharpens", **kw)
    rows = {(e["arm"], e["metric"]): e for e in record["effects"]}
    assert set(rows) == {(a, m) for a in ("grpo", "dapo") for m in ("pass@1", "pass@4")}
    for (_, metric), e in rows.items():
        assert (
            e["base"] == measures.BASE_MODEL
            and e["headline"] == (metric == "pass@1")
            and e["direction"] == (1 if metric == "pass@1" else -1)
        )
        assert (
            0 <= e["arm_mean"] <= 1
            and 0 <= e["base_mean"] <= 1
            and abs(e["diff"] - (e["arm_mean"] - e["base_mean"])) < 1e-6
        )
    run = tmp_path / "runs" / "rl-sharpens" / "grpo" / "seed0"
    assert (run / "passk_n4_p2.csv").exists() and (run.parent / "base_passk_n4_p2.csv").exists()
    assert not (
        tmp_path / "runs" / "rl-sharpens" / "dapo" / "base_passk_n4_p2.csv"
    ).exists()  # the base model is sampled once, not once per arm
    assert rows["grpo", "pass@1"]["base_mean"] == rows["dapo", "pass@1"]["base_mean"]
    with pytest.warns(UserWarning):
        assert claims.run_claim("rl-sharpens", **kw)["effects"] == record["effects"]  # runs and samples read back


def test_a_claim_measured_on_rollouts_runs_without_training(tmp_path):
    """The truncation census on one seed: sampled again from the base model, paired against "a
    truncated answer is wrong" (0), with no run folder written; training overrides are refused."""
    with pytest.warns(UserWarning, match="a verdict needs at least 3"):
        record = claims.run_claim("truncated-not-wrong", seeds=[0], out_dir=tmp_path / "out")
    (effect,) = record["effects"]
    assert effect["metric"] == "truncated_correct_frac" and effect["base_mean"] == 0 and 0 < effect["arm_mean"] < 1
    assert (
        effect["diff"] == effect["arm_mean"]
        and record["verdict"] == "one seed"
        and record["measure"].startswith("rlalgos.workbook.measures.truncation")
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    with pytest.raises(ValueError, match="takes no training overrides"), pytest.warns(UserWarning):
        claims.run_claim("truncated-not-wrong", seeds=[0], out_dir=tmp_path / "out", steps=2)


@pytest.mark.parametrize(
    "argv, msg",
    [
        (["claims", "run", "no-such-claim"], "unknown claim 'no-such-claim'"),
        (["claims", "run", "rloo-matches-grpo", "--seeds", "1,,x"], "--seeds must be comma-separated"),
        (["claims", "run", "rloo-matches-grpo", "--seeds", "1,1,2"], "names a seed twice"),
        (["claims", "run", "truncated-not-wrong", "--steps", "2"], "takes no training overrides"),
    ],
)
def test_cli_bad_inputs_are_one_line_exit_2(argv, msg, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and msg in err, err


def test_cli_list_prints_every_claim(capsys):
    assert main(["claims", "list"]) == 0
    out = capsys.readouterr().out
    assert all(c.id in out for c in claims.CLAIMS)


def test_full_mode_minutes_are_the_committed_runs_own():
    """README's and the book's "fast / full" minutes: for a notebook without a star, the full number is the
    committed run's wall time, first cell to last, from the cells' execution timestamps (within 0.15 min)."""
    import datetime
    import re

    def wall_minutes(path) -> float:
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        marks = [c["metadata"].get("execution", {}) for c in cells if c["cell_type"] == "code"]
        start = min(m["iopub.execute_input"] for m in marks if "iopub.execute_input" in m)
        end = max(m["shell.execute_reply"] for m in marks if "shell.execute_reply" in m)
        at = lambda t: datetime.datetime.fromisoformat(t.replace("Z", "+00:00"))  # noqa: E731
        return (at(end) - at(start)).total_seconds() / 60

    for page in (CHECKOUT.readme, ROOT / "docs" / "index.md"):
        rows = re.findall(
            r"^\| \[`(\d\d[a-z]?_[a-z_]+)`\]\([^)]*\) \| [\d.]+ / ([\d.]+)(\\\*)? \|",
            page.read_text(encoding="utf-8"),
            re.M,
        )
        assert len(rows) == len(list((ROOT / "notebooks").glob("[0-9][0-9]*_*.ipynb"))), page
        for name, full, star in rows:
            if not star:
                got = wall_minutes(ROOT / "notebooks" / f"{name}.ipynb")
                assert abs(got - float(full)) <= 0.15, (
                    f"{page.name}: {name} says {full} min, its committed run took {got:.1f}"
                )


class _Captured(Exception):
    pass


def notebook_jobs(notebook: str, cells: list[str], monkeypatch) -> dict:
    """The runs a notebook's full mode trains, as {resolved run folder: (TrainConfig, algo config)}: its settings,
    imports and job cells (by cell id, which survives cells added or merged around them) executed with ``run_many`` / ``run_or_reuse`` replaced by a stub that records the
    runs and stops (nothing is trained)."""
    import os

    monkeypatch.delenv("RLALGOS_FAST", raising=False)
    monkeypatch.chdir(CHECKOUT.notebooks)
    nb = json.loads((CHECKOUT.notebooks / notebook).read_text(encoding="utf-8"))
    seen: dict = {}

    def stub(runs, *args, **kwargs):
        for cfg, algo_cfg in runs:
            seen[os.path.normpath(CHECKOUT.notebooks / cfg.out_dir)] = (cfg, algo_cfg)
        raise _Captured

    def train_stub(
        cfg, algo_cfg=None, **kwargs
    ):  # a notebook that trains one run at a time (05): record it, hand back a stand-in
        import pandas as pd

        seen[os.path.normpath(CHECKOUT.notebooks / cfg.out_dir)] = (cfg, algo_cfg)
        return pd.DataFrame({"step": [0, cfg.steps], "eval_accuracy": [0.0, 0.0], "step_seconds": [0.0, 0.0]})

    stubs = dict(run_many=stub, run_or_reuse=stub, train=train_stub)
    from rlalgos.workbook import exploration

    monkeypatch.setattr(exploration, "run_or_reuse", stub)  # notebooks 09 and 09b call it as ex.run_or_reuse
    g = {"display": lambda *a, **k: None}
    by_id = {c.get("id"): c for c in nb["cells"]}
    assert set(cells) <= set(by_id), f"{notebook}: no cell with id {sorted(set(cells) - set(by_id))}"
    for i in cells:
        src = "".join(by_id[i]["source"])
        g.update(stubs)
        try:
            exec(compile(src, f"{notebook}[{i}]", "exec"), g)
        except _Captured:
            pass
        g.update(stubs)  # after an imports cell has bound the real ones
    return seen


@pytest.mark.parametrize(
    "notebook, cells",
    [
        ("04b_dapo_where_it_helps.ipynb", ["a24d4347", "7dc0cf21", "631d7250"]),
        ("08_after_dapo.ipynb", ["1f5b4caf", "37af6a1c", "fc4e515d"]),
        ("07_reward_model.ipynb", ["d3ab3622", "b56ce187", "f302f136"]),
        ("10_engines.ipynb", ["nb10-01", "nb10-02", "nb10-09", "nb10-21"]),
        ("05_side_by_side.ipynb", ["62e9843e", "1cd6cea4", "c9083121"]),
        ("09_exploration.ipynb", ["8c447a57", "a95db702", "a5f849da"]),
        ("09b_pass_at_k_and_dapo.ipynb", ["70df615e", "e4c14846", "501ae0a1"]),
    ],
)
def test_the_registry_runs_are_the_notebooks_runs(notebook, cells, monkeypatch):
    """Every claim measured in these notebooks names exactly the runs the notebook trains: the same folder, the same
    TrainConfig (all but out_dir / overwrite / progress) and the same algorithm config. So `claims run` on the
    published seeds reads the notebook's own runs back, and a change of either side fails here."""
    from dataclasses import asdict

    from rlalgos.workbook.exploration import IGNORED

    import os

    jobs = notebook_jobs(notebook, cells, monkeypatch)
    assert jobs, f"{notebook}: no runs captured"
    mine = [c for c in claims.CLAIMS if c.notebook == notebook and c.arms]
    assert mine, notebook
    for claim in mine:
        for arm, seed, cfg, algo_cfg in claim.train_configs(claim.seeds, root=ROOT):
            key = os.path.normpath(cfg.out_dir)
            assert key in jobs, f"{claim.id}: {arm} seed {seed} ({key}) is not a run of {notebook}"
            nb_cfg, nb_algo = jobs[key]
            strip = lambda c: {k: v for k, v in asdict(c).items() if k not in IGNORED}  # noqa: E731
            assert strip(cfg) == strip(nb_cfg), f"{claim.id}: {arm} seed {seed}: TrainConfig differs from {notebook}'s"
            assert asdict(algo_cfg) == asdict(nb_algo) and type(algo_cfg) is type(nb_algo), (
                f"{claim.id}: {arm}: algorithm config differs from {notebook}'s"
            )


def test_the_learning_benchmark_trains_the_registry_runs_of_its_claim():
    """dapo-default-regime's runs are benchmarks/learning_efficiency.py's at its defaults: the same folders
    and settings, so the benchmark's finished runs are what `claims run dapo-default-regime` reads back."""
    import importlib.util
    import os
    from dataclasses import asdict

    from rlalgos.workbook.exploration import IGNORED

    import sys

    spec = importlib.util.spec_from_file_location("learning_efficiency", ROOT / "benchmarks" / "learning_efficiency.py")
    bench = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(ROOT / "benchmarks"))  # its _common
    try:
        spec.loader.exec_module(bench)
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    args = bench.parser().parse_args([])
    claim = claims.get_claim("dapo-default-regime")
    strip = lambda c: {k: v for k, v in asdict(c).items() if k not in IGNORED}  # noqa: E731
    for arm, seed, cfg, algo_cfg in claim.train_configs(claim.seeds, root=ROOT):
        b_cfg, b_algo = bench.config_for(claim.folders[arm].replace("-", ":"), seed, args)
        assert os.path.normpath(ROOT / b_cfg.out_dir) == os.path.normpath(cfg.out_dir), arm
        assert strip(b_cfg) == strip(cfg) and asdict(b_algo) == asdict(algo_cfg), f"{arm} seed {seed}"


def test_notebook_06s_runs_are_the_registrys(monkeypatch):
    """Notebook 06 trains through its own helpers (``run`` on its named tasks, ``run_side_by_side``): its
    settings cells and every line of its job cells that calls them or sets a constant, executed with the
    helpers replaced by a recorder (nothing is trained), give exactly the registry's runs. The entropy
    monitor's threshold is the one setting computed from the notebook's own baseline runs: the registry
    holds the value the committed run printed."""
    import ast
    import os
    from dataclasses import asdict

    import pandas as pd

    from rlalgos.workbook.experiments import NB06_MONITOR_THRESHOLD
    from rlalgos.workbook.exploration import IGNORED

    monkeypatch.delenv("RLALGOS_FAST", raising=False)
    monkeypatch.chdir(CHECKOUT.notebooks)
    nb = json.loads((CHECKOUT.notebooks / "06_troubleshooting.ipynb").read_text(encoding="utf-8"))
    g: dict = {"display": lambda *a, **k: None}
    for i in (1, 2):
        exec(compile("".join(nb["cells"][i]["source"]), f"06[{i}]", "exec"), g)
    seen: dict = {}

    def record(label, algo, algo_cfg, **kw):
        for s in g["SEEDS"]:
            cfg = g["_config"](label, algo, s, **kw)
            seen[os.path.normpath(CHECKOUT.notebooks / cfg.out_dir)] = (cfg, algo_cfg)

    g["run"] = lambda label, algo, algo_cfg, task: record(label, algo, algo_cfg, task=task)
    g["run_side_by_side"] = lambda arms: [record(label, algo, cfg, **kw) for label, (algo, cfg, kw) in arms.items()]
    g["RUNS"]["baseline"] = [
        pd.DataFrame({"step": [0, 1], "entropy": [0.0, 0.0]})
    ]  # for the threshold line (not compared)
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] != "code" or i in (1, 2):
            continue
        for stmt in ast.parse("".join(cell["source"])).body:
            text = ast.unparse(stmt)
            constant = isinstance(stmt, ast.Assign) and all(
                isinstance(t, ast.Name) and t.id.isupper() for t in stmt.targets
            )
            if constant or text.startswith(("run(", "run_side_by_side(")):
                exec(compile(text, f"06[{i}]", "exec"), g)
    strip = lambda c: {k: v for k, v in asdict(c).items() if k not in IGNORED}  # noqa: E731
    mine = [c for c in claims.CLAIMS if c.notebook == "06_troubleshooting.ipynb"]
    assert len(mine) == 5
    for claim in mine:
        for arm, seed, cfg, algo_cfg in claim.train_configs(claim.seeds, root=ROOT):
            key = os.path.normpath(cfg.out_dir)
            assert key in seen, f"{claim.id}: {arm} seed {seed} is not a run of notebook 06"
            nb_cfg, nb_algo = seen[key]
            assert strip(cfg) == strip(nb_cfg), f"{claim.id}: {arm} seed {seed}: TrainConfig differs from notebook 06's"
            mine_algo, theirs = asdict(algo_cfg), asdict(nb_algo)
            if arm == "e_monitor":
                assert mine_algo.pop("entropy_threshold") == NB06_MONITOR_THRESHOLD
                theirs.pop("entropy_threshold")
            assert mine_algo == theirs and type(algo_cfg) is type(nb_algo), (
                f"{claim.id}: {arm}: algorithm config differs from notebook 06's"
            )


def test_every_claim_can_be_run_on_new_seeds(monkeypatch):
    """`claims run ID --seeds 20,21,22` for every claim, checked without training: every run it would
    train validates (its TrainConfig and algorithm config, on the seeds' folders), every task and model
    it names loads, every measure or fit it names exists, and an exact claim's test exists (the tiny
    end-to-end runs above train some of them for real)."""
    from rlalgos.tasks import get_task
    from rlalgos.workbook import measures, troubleshooting

    monkeypatch.setattr(
        troubleshooting, "medium_pool", lambda seed=0, pool=256, pool_g=8: ([{"prompt": "1+1=", "answer": "2"}], [0.5])
    )  # no sampling here
    tasks: dict = {}
    for c in claims.CLAIMS:
        if c.kind == "exact":
            path, _, name = c.test.partition("::")
            assert f"def {name.split('[')[0]}(" in (ROOT / path).read_text(encoding="utf-8"), c.id
            continue
        assert c.arms or c.measure, f"{c.id}: nothing to train or measure"
        assert not c.measure or c.measure in measures.MEASURES, c.id
        assert not c.fit or c.fit in measures.FITS, c.id
        from rlalgos.workbook import emergence

        built_first = {str(emergence.model_cfg(*m, fast=False).folder()) for m in c.prepare}  # claims run builds these
        for kind, share in c.prepare:
            emergence.check_config(emergence.model_cfg(kind, share, fast=False))
        for _, _, cfg, algo_cfg in c.train_configs((20, 21, 22), root=ROOT):
            cfg.validate()
            algo_cfg.validate(cfg.group_size, cfg.prompts_per_step * cfg.group_size)
            assert (
                cfg.model == ""
                or cfg.model in built_first
                or (ROOT / cfg.model / "config.json").exists()
                or (Path(cfg.model) / "config.json").exists()
            ), f"{c.id}: {cfg.model}"
            assert not cfg.reward_model or (Path(cfg.reward_model) / "config.json").exists(), (
                f"{c.id}: {cfg.reward_model}"
            )
            if cfg.task not in tasks:
                tasks[cfg.task] = get_task(cfg.task)


def test_a_verdict_line_wrapped_for_the_page_is_read_back_whole():
    """Notebooks wrap long verdict lines at 88 characters; the scraper joins them back, so a claim's effect is
    read from a wrapped line exactly as from the one-line print, and lines around it stay as they are."""
    import textwrap

    from rlalgos.workbook.claims.scrape import effect_lines_in, unwrapped

    line = (
        "eval_accuracy  rm + KL - rm only = +20.7 points (0.291 vs 0.084; 95% CI +4.5..+36.8, 3 seeds; "
        "detectable >= 16.1) -> shown"
    )
    wrapped = "the fixes:\n" + textwrap.fill(line, 88, subsequent_indent="    ") + "\n    an indented note\n"
    assert len(wrapped.splitlines()) == 4
    assert unwrapped(wrapped) == ["the fixes:", line, "    an indented note"]
    (one,) = effect_lines_in([line])
    (back,) = effect_lines_in([wrapped])
    assert back == one and back["line"] == line and back["seeds"] == 3 and back["diff"] == pytest.approx(0.207)
