"""The workbook's data, installed as the package ``rlalgos.data``: the addition task's
jsonl splits and the tiny base and reward models (see pyproject.toml and rlalgos.tasks.DATA_DIR)."""
