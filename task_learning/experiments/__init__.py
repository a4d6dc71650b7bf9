"""Experiments that reproduce the papers' tables (the STARS paper Table 2 / 11-13), with plots."""
from task_learning import lazy_exports

_EXPORTS = {
    "NO_TABLE": "task_learning.experiments.anticipation",
    "STANDIN_LABEL": "task_learning.experiments.anticipation",
    "run_experiment": "task_learning.experiments.anticipation",
    "standin_by_row": "task_learning.experiments.anticipation",
    "PAPER_TABLE_1": "task_learning.experiments.bcr_table",
    "TASKS": "task_learning.experiments.bcr_table",
    "check_tasks": "task_learning.experiments.bcr_table",
    "run_table": "task_learning.experiments.bcr_table",
    "ALL_METHODS": "task_learning.experiments.llm_state_tables",
    "HELDOUT_METHODS": "task_learning.experiments.llm_state_tables",
    "TABLE_II_METHODS": "task_learning.experiments.llm_state_tables",
    "TableRun": "task_learning.experiments.llm_state_tables",
    "check_subset": "task_learning.experiments.llm_state_tables",
    "format_heldout": "task_learning.experiments.llm_state_tables",
    "format_table_i": "task_learning.experiments.llm_state_tables",
    "format_table_ii": "task_learning.experiments.llm_state_tables",
    "heldout_to_dict": "task_learning.experiments.llm_state_tables",
    "plot_tables": "task_learning.experiments.llm_state_tables",
    "run_heldout": "task_learning.experiments.llm_state_tables",
    "run_tables": "task_learning.experiments.llm_state_tables",
    "LoadSampler": "task_learning.experiments.machine",
    "describe_load": "task_learning.experiments.machine",
    "run_conditions": "task_learning.experiments.runner",
    "describe_model": "task_learning.experiments.table",
    "paper_key": "task_learning.experiments.table",
    "paper_row": "task_learning.experiments.table",
    "plot_rows": "task_learning.experiments.table",
    "scene_kind": "task_learning.experiments.table",
    "tokenizer_for": "task_learning.experiments.table",
}

__all__, __getattr__ = lazy_exports(__name__, _EXPORTS)
