"""Input from outside, read and checked once: YAML under config/ (config) described by typed
schemas (schema), files read and written safely (files), numbers (numbers), text made safe to
show and log (safe_text), and the name matching the CLI, the scenes and grounding share (names)."""
from task_learning import lazy_exports

_EXPORTS = {
    "MAX_NESTING": "task_learning.inputs.config",
    "MAX_YAML_BYTES": "task_learning.inputs.config",
    "config_dir": "task_learning.inputs.config",
    "config_path": "task_learning.inputs.config",
    "join_key": "task_learning.inputs.config",
    "load_yaml": "task_learning.inputs.config",
    "AtomicOutput": "task_learning.inputs.files",
    "LineAppender": "task_learning.inputs.files",
    "OutputError": "task_learning.inputs.files",
    "atomic_output": "task_learning.inputs.files",
    "describe_kind": "task_learning.inputs.files",
    "read_input_bytes": "task_learning.inputs.files",
    "require_regular_file": "task_learning.inputs.files",
    "save_figure": "task_learning.inputs.files",
    "write_bytes_atomic": "task_learning.inputs.files",
    "write_text_atomic": "task_learning.inputs.files",
    "normalize_name": "task_learning.inputs.names",
    "non_finite_path": "task_learning.inputs.numbers",
    "number_problem": "task_learning.inputs.numbers",
    "has_control_characters": "task_learning.inputs.safe_text",
    "printable": "task_learning.inputs.safe_text",
    "PlainText": "task_learning.inputs.schema",
    "Schema": "task_learning.inputs.schema",
    "bounded": "task_learning.inputs.schema",
    "invalid": "task_learning.inputs.schema",
    "known_key": "task_learning.inputs.schema",
    "load_model": "task_learning.inputs.schema",
    "no_control_characters": "task_learning.inputs.schema",
    "validate": "task_learning.inputs.schema",
}

__all__, __getattr__ = lazy_exports(__name__, _EXPORTS)
