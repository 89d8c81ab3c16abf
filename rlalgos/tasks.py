"""Verifiable tasks: prompts, reference answers, and reward functions.

A task is a list of rows (dicts) with at least ``prompt`` and its answer column
(:attr:`Task.answer_key`, ``answer`` for the shipped tasks). Reward functions
follow TRL's convention::

    fn(prompts: list[str], completions: list[str], **columns) -> list[float]

where ``columns`` holds every other field of the rows, one list entry per
completion (so ``answer=[...]``). :class:`RewardSet` combines several with
weights and reports each on its own.

This module imports the standard library only (an optional package only inside a
function, in a ``try`` that catches ImportError): ``rlalgos export`` copies it verbatim
into every export (as ``rlalgos_tasks.py``), where the reward functions run without
rlalgos, torch or anything else installed (tests/test_export_engines.py checks its imports).
"""

from __future__ import annotations

import importlib.resources
import json
import math
import random
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Sequence


def _data_dir() -> Path:
    """Where the task splits and the shipped models are: the package ``rlalgos.data``,
    which pyproject.toml maps to the repo's ``data/``. A wheel installs it inside the
    package; an editable install resolves it to the repo's ``data/`` (so ``rlalgos sft``,
    ``rm`` and ``data`` write there); a checkout used without installing falls back to
    the repo's ``data/`` too."""
    try:
        return Path(str(importlib.resources.files("rlalgos.data")))
    except ModuleNotFoundError:
        return Path(__file__).resolve().parent.parent / "data"


DATA_DIR = _data_dir()

# --------------------------------------------------------------------------- #
# The default task: multi-term addition with a scratchpad
# --------------------------------------------------------------------------- #


def make_addition_problem(rng: random.Random, n_terms: int = 3, max_value: int = 99) -> dict:
    """One problem: ``46+76+82=`` with the scratchpad target ``46+76=122;122+82=204#204``.

    The scratchpad adds left to right, one partial sum per step separated by
    ``;``; the final answer follows ``#``. ``direct`` is the no-working form
    ``#204`` (used to build a base model that RL can visibly improve).
    """
    terms = [rng.randint(1, max_value) for _ in range(n_terms)]
    steps, acc = [], terms[0]
    for t in terms[1:]:
        steps.append(f"{acc}+{t}={acc + t}")
        acc += t
    return {
        "prompt": "+".join(map(str, terms)) + "=",
        "answer": str(acc),
        "target": ";".join(steps) + f"#{acc}",
        "direct": f"#{acc}",
        "n_terms": n_terms,
    }


def make_addition_split(n: int, seed: int, terms: Sequence[int] = (2, 3, 4), max_value: int = 99) -> list[dict]:
    """``n`` problems, the number of terms drawn uniformly from ``terms`` (the
    difficulty knob, together with ``max_value``)."""
    rng = random.Random(seed)
    return [make_addition_problem(rng, rng.choice(list(terms)), max_value) for _ in range(n)]


def write_jsonl(rows: Sequence[dict], path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    return path


def read_jsonl(path: str | Path, required: Sequence[str] = ()) -> list[dict]:
    """Read a jsonl file; a bad line or a missing field is a one-line error with its line number."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist")
    rows = []
    with open(path) as f:
        for i, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                raise ValueError(f"{path}:{i}: not valid JSON ({e.msg}); fix or remove that line") from None
            if not isinstance(row, dict):
                raise ValueError(f"{path}:{i}: expected a JSON object per line")
            missing = [k for k in required if k not in row]
            if missing:
                raise ValueError(
                    f"{path}:{i}: missing field(s) {', '.join(missing)}; every row needs {', '.join(required)}"
                )
            rows.append(row)
    return rows


def make_addition_data(
    out_dir: str | Path = DATA_DIR, n_train: int = 20000, n_test: int = 500, seed: int = 1234
) -> dict:
    """Write ``addition_train.jsonl`` and ``addition_test.jsonl`` (disjoint prompts)."""
    out_dir = Path(out_dir)
    test = make_addition_split(n_test, seed + 1)
    test_prompts = {r["prompt"] for r in test}
    train = [r for r in make_addition_split(n_train + n_test, seed) if r["prompt"] not in test_prompts][:n_train]
    return {
        "train": write_jsonl(train, out_dir / "addition_train.jsonl"),
        "test": write_jsonl(test, out_dir / "addition_test.jsonl"),
    }


# --------------------------------------------------------------------------- #
# Answer extraction and reward functions
# --------------------------------------------------------------------------- #

_SCRATCHPAD = re.compile(r"^(\d+\+\d+=\d+;)*\d+\+\d+=\d+#-?\d+$")
_DIRECT = re.compile(r"^#-?\d+$")
_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")


def extract_hash_answer(completion: str) -> str | None:
    """The text after the last ``#`` (``####`` in GSM8K), stripped; None if there is none."""
    if "#" not in completion:
        return None
    ans = completion.rsplit("#", 1)[1].strip()
    return ans or None


def normalize_number(text: str | None) -> str | None:
    """``"1,234.50"`` -> ``"1234.5"``; None if ``text`` holds no number."""
    if text is None:
        return None
    m = _NUMBER.search(text)
    if not m:
        return None
    num = m.group(0).replace(",", "")
    if "." in num:
        num = num.rstrip("0").rstrip(".")
    return num


def correctness_reward(prompts, completions, answer, **_) -> list[float]:
    """1.0 when the number after the last ``#`` equals the reference answer, else 0.0.

    Malformed and empty completions get 0. The number must be the whole answer:
    ``#204x`` is wrong.
    """
    out = []
    for c, a in zip(completions, answer):
        got = extract_hash_answer(c)
        out.append(1.0 if got is not None and re.fullmatch(r"-?\d+", got) and int(got) == int(a) else 0.0)
    return out


def format_reward(prompts, completions, **_) -> list[float]:
    """1.0 when the completion is a well-formed scratchpad (``a+b=c;...#n``) or a
    direct answer (``#n``), else 0.0. Says nothing about correctness."""
    return [1.0 if (_SCRATCHPAD.match(c.strip()) or _DIRECT.match(c.strip())) else 0.0 for c in completions]


def uses_scratchpad(completions: Sequence[str]) -> list[bool]:
    """Whether each completion shows its working (vs a direct ``#n`` answer)."""
    return [bool(_SCRATCHPAD.match(c.strip())) for c in completions]


def scratchpad_metrics(completions: Sequence[str]) -> dict[str, float]:
    """The addition task's own metric: ``scratchpad_frac``, the share of answers that show their working."""
    return {"scratchpad_frac": sum(uses_scratchpad(completions)) / max(len(completions), 1)}


def numeric_match_reward(prompts, completions, answer, **_) -> list[float]:
    """GSM8K-style correctness: the number after ``####``/``#`` if present, else the
    last number in the completion, compared numerically with the reference."""
    out = []
    for c, a in zip(completions, answer):
        got = extract_hash_answer(c)
        got = normalize_number(got) if got is not None else None
        if got is None:
            nums = _NUMBER.findall(c)
            got = normalize_number(nums[-1]) if nums else None
        ref = normalize_number(str(a))
        ok = got is not None and ref is not None and math.isclose(float(got), float(ref), rel_tol=0, abs_tol=1e-6)
        out.append(1.0 if ok else 0.0)
    return out


RewardFn = Callable[..., list]


def reward_columns(rows: Sequence[dict]) -> dict[str, list]:
    """Every field but ``prompt``, as lists: the ``**columns`` reward functions receive."""
    keys = [k for k in rows[0] if k != "prompt"] if rows else []
    return {k: [r.get(k) for r in rows] for k in keys}


@dataclass
class RewardSet:
    """Several reward functions combined with weights.

    ``total = sum_i weight_i * fn_i(...)``. A function with weight 0 is still
    computed and logged (as ``reward/<name>``) but does not train: this is how the
    format check is reported next to correctness without changing the objective.
    """

    fns: list[tuple[str, RewardFn, float]] = field(default_factory=list)

    def __call__(self, prompts: list[str], completions: list[str], columns: dict[str, list]):
        """Returns ``(total, parts)``: a list of floats and ``{name: list of floats}``."""
        parts = {}
        for name, fn, _ in self.fns:
            try:
                vals = fn(prompts, completions, **columns)
            except Exception as e:  # name the function and show an input
                raise ValueError(
                    f"reward function {name!r} raised {type(e).__name__}: {e} "
                    f"(on prompt {prompts[0]!r}, completion {completions[0]!r})"
                ) from e
            vals = list(vals) if vals is not None else []
            if len(vals) != len(completions):
                raise ValueError(
                    f"reward function {name!r} returned {len(vals)} values for {len(completions)} completions; return one float per completion"
                )
            vals = [float(v) for v in vals]
            bad = [i for i, v in enumerate(vals) if not math.isfinite(v)]
            if bad:
                i = bad[0]
                raise ValueError(
                    f"reward function {name!r} returned {vals[i]} for prompt {prompts[i]!r}, completion {completions[i]!r}; rewards must be finite"
                )
            parts[name] = vals
        total = [sum(w * parts[n][i] for n, _, w in self.fns) for i in range(len(completions))]
        return total, parts


# --------------------------------------------------------------------------- #
# Tasks: data + rewards + how to judge "correct"
# --------------------------------------------------------------------------- #


@dataclass
class Task:
    """A verifiable task: train/test rows, the reward set, and the reward part
    that counts as *correct* (for accuracy)."""

    name: str
    train: list[dict]
    test: list[dict]
    rewards: RewardSet
    correct_key: str = "correct"
    max_new_tokens: int = 48
    test_source: str = "test split"
    """Where the evaluation rows come from (a file, a hub split, or rows held out of the training file)."""
    completion_metrics: Callable[[Sequence[str]], dict[str, float]] = lambda completions: {}
    """Task-specific metrics of a batch of completions, logged by evaluation as ``eval_<name>``."""
    breakdown: str = ""
    """A row key (e.g. ``level``) whose values split the metrics: training and evaluation then also log
    ``accuracy/VALUE`` and each completion metric as ``NAME/VALUE`` (:func:`breakdown_metrics`); '' = none."""
    answer_key: str = "answer"
    """The column holding each row's reference answer (an export's ground truth; the reward functions get it)."""
    ability: str = "math"
    """What the task exercises, as verl's data rows tag it (``ability``)."""
    answer_format: str = "#{}"
    """How a completion states its final answer, ``{}`` standing for it (:meth:`sample_answer`)."""

    @property
    def note(self) -> str:
        """A line worth printing when a run starts (e.g. that the test rows were held out), or ''."""
        return f"{self.name}: evaluating on {self.test_source}" if self.test_source.startswith("held out") else ""

    def sample_answer(self, row: dict) -> str:
        """A completion that states ``row``'s reference answer as the task's reward functions read it."""
        return self.answer_format.format(row.get(self.answer_key, ""))

    def info(self) -> dict:
        """What a run's config.json records about its task."""
        return {
            "name": self.name,
            "train_rows": len(self.train),
            "test_rows": len(self.test),
            "test_source": self.test_source,
        }

    def with_rewards(
        self, rule_weight: float | None = None, extra: Sequence[tuple[str, RewardFn, float]] = ()
    ) -> "Task":
        """A copy whose correctness reward has weight ``rule_weight`` (0: logged
        but not trained on) and with ``extra`` (name, fn, weight) rewards added,
        e.g. a learned reward model. Accuracy is still judged by the rule."""
        fns = [
            (n, f, rule_weight if (n == self.correct_key and rule_weight is not None) else w)
            for n, f, w in self.rewards.fns
        ]
        return replace(self, rewards=RewardSet(fns + list(extra)))


def addition_task(data_dir: str | Path = DATA_DIR, format_weight: float = 0.0) -> Task:
    """The default task, read from ``data/addition_{train,test}.jsonl``."""
    data_dir = Path(data_dir)
    need = ("prompt", "answer")
    train = read_jsonl(data_dir / "addition_train.jsonl", need)
    test = read_jsonl(data_dir / "addition_test.jsonl", need)
    rewards = RewardSet([("correct", correctness_reward, 1.0), ("format", format_reward, format_weight)])
    return Task(
        "addition",
        train,
        test,
        rewards,
        max_new_tokens=48,
        test_source=str(data_dir / "addition_test.jsonl"),
        completion_metrics=scratchpad_metrics,
    )


def load_gsm8k(source: str | Path, split: str = "train", limit: int | None = None) -> list[dict]:
    """GSM8K-style rows ``{"prompt", "answer", "solution"}``.

    ``source`` is a local jsonl of ``{"question", "answer"}`` rows, GSM8K's format
    where the answer ends with ``#### 42``; or, when a hub is reachable and the
    ``datasets`` package is installed, a dataset name such as ``openai/gsm8k``.
    """
    path = Path(source)
    if path.exists():
        raw = read_jsonl(path, ("question", "answer"))
    elif path.suffix in (".jsonl", ".json") or path.is_absolute() or str(source).startswith("."):
        raise FileNotFoundError(
            f"{source} is not a file; give a jsonl of question/answer rows or a dataset name such as openai/gsm8k"
        )
    else:
        try:
            import datasets  # optional: only for hub names
        except ImportError:
            raise FileNotFoundError(
                f"{source} is not a file, and `datasets` is not installed to load it by name; pass a local jsonl of question/answer rows"
            ) from None
        try:
            raw = list(datasets.load_dataset(str(source), "main", split=split))
        except Exception as e:  # offline, unknown name, no such split
            raise FileNotFoundError(
                f"cannot load dataset {source!r} split {split!r} from the hub ({type(e).__name__}); pass a local jsonl of question/answer rows instead"
            ) from None
    rows = []
    for r in raw[:limit] if limit else raw:
        final = normalize_number(extract_hash_answer(r["answer"]) or r["answer"])
        rows.append({"prompt": f"Question: {r['question']}\nAnswer:", "answer": final, "solution": r["answer"]})
    return rows


HOLDOUT_FRAC = 0.1
"""Share of a GSM8K-style training file held out for evaluation when no test file is given."""


def gsm8k_task(
    train_source: str | Path,
    test_source: str | Path | None = None,
    limit: int | None = None,
    holdout_frac: float = HOLDOUT_FRAC,
    split_seed: int = 0,
) -> Task:
    """A GSM8K-style task for real models: numeric-match correctness.

    Evaluation never scores training rows: the test rows come from
    ``test_source`` (a second file), from the hub's ``test`` split when
    ``train_source`` is a dataset name, or else a seeded ``holdout_frac`` of the
    training file is held out (the same rows for every training seed).
    """
    train = load_gsm8k(train_source, "train", limit)
    is_file = Path(train_source).exists()
    if test_source or not is_file:
        test = load_gsm8k(test_source or train_source, "test", limit)
        where = f"{test_source}" if test_source else f"the hub's test split of {train_source}"
    else:
        if len(train) < 2:
            raise ValueError(
                f"{train_source} has {len(train)} row(s): too few to hold out a test split; give a test file as gsm8k:TRAIN.jsonl,TEST.jsonl"
            )
        order = list(range(len(train)))
        random.Random(split_seed).shuffle(order)
        n_test = max(1, round(holdout_frac * len(train)))
        held = set(order[:n_test])
        test = [r for i, r in enumerate(train) if i in held]
        train = [r for i, r in enumerate(train) if i not in held]
        where = f"held out {len(test)} of the {len(train) + len(test)} rows of {train_source} ({holdout_frac:.0%}, split seed {split_seed}); give gsm8k:TRAIN.jsonl,TEST.jsonl to use a test file"
    return Task(
        "gsm8k", train, test, RewardSet([("correct", numeric_match_reward, 1.0)]), max_new_tokens=256, test_source=where
    )


def addition_regime(
    terms: Sequence[int], max_value: int = 99, n_train: int = 20000, n_test: int = 500, seed: int = 1234
) -> Task:
    """The addition task at another difficulty: ``terms`` per problem (drawn
    uniformly) and terms of 1..``max_value``, generated in memory with a fixed
    seed, test prompts disjoint from the training ones. The generation budget is
    4 + 10 tokens per term of the longest problem (64 for 6 terms; the longest
    6-term scratchpad is ~58 tokens with its EOS)."""
    test = make_addition_split(n_test, seed + 1, terms, max_value)
    test_prompts = {r["prompt"] for r in test}
    train = [
        r for r in make_addition_split(n_train + n_test, seed, terms, max_value) if r["prompt"] not in test_prompts
    ][:n_train]
    rewards = RewardSet([("correct", correctness_reward, 1.0), ("format", format_reward, 0.0)])
    label = "-".join(map(str, sorted(set(terms))))
    return Task(
        "addition",
        train,
        test,
        rewards,
        max_new_tokens=4 + 10 * max(terms),
        test_source=f"{n_test} generated problems of {label} terms (seed {seed + 1})",
        completion_metrics=scratchpad_metrics,
    )


def trap_task(n_train: int = 20000, n_test: int = 500, seed: int = 1234) -> Task:
    """The exploration regime (``--task trap``): half the prompts are *easy*, 2-term
    sums of 1-digit numbers (``6+3=``), the other half *hard*, 3-4-term sums of
    2-digit numbers (``46+76+82=``). Its base model (``data/trap_model``,
    :func:`rlalgos.workbook.sft.trap_finetune`) answers the easy ones directly and
    reliably, while on the hard ones only the rare scratchpad works. Each row has
    ``level`` (``easy``/``hard``), and the metrics are split by it."""

    def split(n: int, s: int) -> list[dict]:
        rng = random.Random(s)
        return [
            dict(make_addition_problem(rng, 2, 9), level="easy")
            if rng.random() < 0.5
            else dict(make_addition_problem(rng, rng.choice((3, 4)), 99), level="hard")
            for _ in range(n)
        ]

    test = split(n_test, seed + 1)
    test_prompts = {r["prompt"] for r in test}
    # hard test prompts are unseen in training; the easy ones cannot be (there are only 81 of them)
    train = [r for r in split(n_train + n_test, seed) if r["level"] == "easy" or r["prompt"] not in test_prompts][
        :n_train
    ]
    rewards = RewardSet([("correct", correctness_reward, 1.0), ("format", format_reward, 0.0)])
    return Task(
        "trap",
        train,
        test,
        rewards,
        max_new_tokens=48,
        test_source=f"{n_test} generated problems, half easy, half hard (seed {seed + 1})",
        completion_metrics=scratchpad_metrics,
        breakdown="level",
    )


def breakdown_metrics(
    task: Task, rows: Sequence[dict], completions: Sequence[str], correct: Sequence[float]
) -> dict[str, tuple[float, float]]:
    """``{"accuracy/VALUE": (sum, count), "NAME/VALUE": (sum, count)}`` for each value of the
    task's ``breakdown`` key and each of its completion metrics (sums, so that several
    processes can add theirs before dividing); ``{}`` for a task without a breakdown."""
    if not task.breakdown:
        return {}
    out: dict[str, tuple[float, float]] = {}
    for value in sorted({str(r[task.breakdown]) for r in rows}):
        idx = [i for i, r in enumerate(rows) if str(r[task.breakdown]) == value]
        out[f"accuracy/{value}"] = (float(sum(correct[i] for i in idx)), float(len(idx)))
        for name, v in task.completion_metrics([completions[i] for i in idx]).items():
            out[f"{name}/{value}"] = (v * len(idx), float(len(idx)))
    return out


def _parse_terms(text: str) -> list[int]:
    """``"2-6"`` -> [2, 3, 4, 5, 6]; ``"2,5"`` -> [2, 5]."""
    try:
        if "-" in text:
            lo, hi = map(int, text.split("-"))
            terms = list(range(lo, hi + 1))
        else:
            terms = [int(t) for t in text.split(",") if t]
    except ValueError:
        terms = []
    if not terms or min(terms) < 2:
        raise ValueError(f"bad terms {text!r}; write e.g. addition:terms=2-6 or addition:terms=2,5 (at least 2 terms)")
    return terms


TASKS = {"addition": addition_task, "trap": trap_task}


def get_task(name: str, **kwargs) -> Task:
    """A task by name (``addition``), ``addition:terms=2-6[:max_value=99]`` for
    the addition task at another difficulty (:func:`addition_regime`),
    ``gsm8k:TRAIN.jsonl[,TEST.jsonl]`` for GSM8K-style files (without a test
    file a seeded share of TRAIN is held out), or ``gsm8k:DATASET`` for a hub
    dataset (its train and test splits), or ``MODULE:FUNCTION[:key=value]`` for the task a
    function of yours returns (e.g. ``rlalgos.workbook.troubleshooting:medium_task:pool=16``)."""
    if name.startswith("addition:"):
        options = dict(part.partition("=")[::2] for part in name.split(":")[1:])
        unknown = set(options) - {"terms", "max_value"}
        if unknown or "terms" not in options:
            raise ValueError(f"bad task {name!r}; write addition:terms=2-6 (optionally :max_value=99)")
        try:
            max_value = int(options.get("max_value", 99))
        except ValueError:
            raise ValueError(f"bad max_value in {name!r}; give an integer") from None
        return addition_regime(_parse_terms(options["terms"]), max_value)
    if name.startswith("gsm8k:"):
        train_source, _, test_source = name.split(":", 1)[1].partition(",")
        if not train_source:
            raise ValueError("gsm8k: needs a file or dataset name, e.g. --task gsm8k:train.jsonl,test.jsonl")
        return gsm8k_task(train_source, test_source or None, **kwargs)
    if ":" in name and "." in name.split(":", 1)[0]:
        return _task_from_module(name, **kwargs)
    if name not in TASKS:
        raise ValueError(
            f"unknown task {name!r}; choose one of {', '.join(TASKS)}, gsm8k:PATH.jsonl or MODULE:FUNCTION"
        )
    return TASKS[name](**kwargs)


def _task_from_module(name: str, **kwargs) -> Task:
    """``package.module:function[:key=value...]``: the Task that function returns (integer values
    are passed as ints). A task defined in your own code, named by a string a TrainConfig can carry."""
    module, function, *options = name.split(":")
    try:
        fn = getattr(importlib.import_module(module), function)
    except (ImportError, AttributeError) as e:
        raise ValueError(
            f"bad task {name!r}: {e}; write MODULE:FUNCTION with an importable module and a function in it"
        ) from None
    for part in options:
        key, eq, value = part.partition("=")
        if not eq or not key.isidentifier():
            raise ValueError(f"bad task option {part!r} in {name!r}; write key=value")
        kwargs[key] = int(value) if re.fullmatch(r"-?\d+", value) else value
    task = fn(**kwargs)
    if not isinstance(task, Task):
        raise ValueError(f"task {name!r} returned {type(task).__name__}, not a rlalgos.tasks.Task")
    return task
