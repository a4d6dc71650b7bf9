"""Start the ROS 2 nodes as separate OS processes without `ros2 launch` (which a machine with the
ROS 2 wheels from PyPI does not have), with the parameter files under config/nodes/.

Each node runs as `python -m task_learning_nodes.plumbing.entry <module> --ros-args --params-file <file>
[-p key:=value ...]`, which is what `ros2 run task_learning <executable>` and the launch files do
on a full ROS 2 install (the entry catches Ctrl-C before the node's imports).
Ctrl-C / SIGTERM stop every node with SIGTERM: a node that has installed its stop handlers (the
entry does so before the node's imports) takes it exactly as SIGINT, a clean stop with exit 0;
one still in Python's own start-up, before the entry's first line, ends quietly by the default
action, where a SIGINT printed "Fatal Python error: init_import_site" and KeyboardInterrupt
tracebacks. A node that dies is reported with its exit code and, by default, the others are
stopped too. Nodes that do not stop within the shutdown timeout are killed.

Pure Python: this module never imports rclpy (the nodes do, in their own processes).
"""
from __future__ import annotations

import difflib
import importlib.util
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Callable, Mapping, Sequence

from task_learning.apps.dds_profile import profile_env
from task_learning.errors import ConfigError, TaskLearningError
from task_learning.inputs.config import config_path, join_key, load_yaml
from task_learning.inputs.schema import Schema, bounded, load_model
from task_learning.lifecycle.child_process import describe_exit, die_with_parent
from task_learning.lifecycle.signals import StopSignals
from task_learning_nodes.plumbing import registry

log = logging.getLogger(__name__)

ON_EXIT_POLICIES = ("shutdown", "continue")
# The project's node modules (the one node registry, nodes/plumbing/registry.py, a plain module that
# imports nothing): the only modules a bring-up entry may run. Anything else ("http.server", a
# helper module of the package) is refused by name, so a bring-up file cannot start an arbitrary
# program. NODE_ENTRY runs a node module with its stop handlers installed before the module's
# imports (nodes/plumbing/entry.py).
NODE_MODULES = registry.NODE_MODULES
NODE_ENTRY = registry.ENTRY_MODULE


@dataclass
class NodeSpec:
    """One node as config/bringup.yaml describes it."""

    name: str
    module: str
    executable: str
    params_file: Path | None
    default: bool = True  # started when no nodes are named; false: only when named


@dataclass
class BringupConfig:
    nodes: list[NodeSpec]
    shutdown_timeout_s: float = 10.0
    on_node_exit: str = "shutdown"
    source: str = ""


class NodeDoc(Schema):
    module: str = ""  # one of NODE_MODULES; empty: the registry's node of the entry's name
    executable: str = ""  # empty: the registry's executable of that module
    params: str | None = None  # a parameter file, relative to bringup.yaml
    default: bool = True


class BringupDoc(Schema):
    """bringup.yaml."""

    nodes: dict[str, NodeDoc]
    shutdown_timeout_s: Annotated[float, bounded(low=0.0, high=3600.0, low_open=True)] = 10.0
    on_node_exit: str = "shutdown"  # one of ON_EXIT_POLICIES


def load_bringup_config(path: str | Path | None = None) -> BringupConfig:
    """Read and validate config/bringup.yaml (or `path`); errors name the file and the key."""
    file = Path(path) if path is not None else config_path("bringup.yaml")
    doc = load_model(BringupDoc, file)
    if doc.on_node_exit not in ON_EXIT_POLICIES:
        raise ConfigError(file, "on_node_exit", f"must be one of {', '.join(ON_EXIT_POLICIES)}, got {doc.on_node_exit!r}")
    nodes = []
    for name, entry in doc.nodes.items():
        key = join_key(join_key("nodes", name), "module")
        module = entry.module or (registry.module_of(name) if name in registry.NODES else "")
        if not module:
            raise ConfigError(file, key, f"missing: {name!r} is not a node of this project's registry "
                              f"({', '.join(registry.NODES)}), so its module must be given")
        if module not in NODE_MODULES:
            raise ConfigError(file, key, f"{module!r} is not a node of "
                              f"this project (node modules: {', '.join(NODE_MODULES)})")
        executable = entry.executable or registry.executable_of(module.rsplit(".", 1)[-1])
        params_file = None
        if entry.params is not None:
            params_file = Path(entry.params) if Path(entry.params).is_absolute() else file.parent / entry.params
        nodes.append(NodeSpec(name, module, executable, params_file, entry.default))
    return BringupConfig(nodes, doc.shutdown_timeout_s, doc.on_node_exit, str(file))


def module_exists(module: str) -> bool:
    """Whether a node module is in the tree, found without importing it (nor rclpy)."""
    package, _, rest = module.partition(".")
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return False
    if spec is None:
        return False
    if not rest:
        return True
    for location in spec.submodule_search_locations or []:
        base = Path(location).joinpath(*rest.split("."))
        if base.with_suffix(".py").is_file() or (base / "__init__.py").is_file():
            return True
    return False


def params_file_keys(path: Path) -> set[str]:
    """The parameter names a ROS 2 params file sets (under any node's ros__parameters)."""
    data = load_yaml(path) or {}
    if not isinstance(data, Mapping):
        raise ConfigError(path, None, "expected a mapping of node names to {ros__parameters: ...}")
    keys: set[str] = set()
    for body in data.values():
        if isinstance(body, Mapping) and isinstance(body.get("ros__parameters"), Mapping):
            keys.update(str(k) for k in body["ros__parameters"])
    return keys


def check_selected(config: BringupConfig, selected: Sequence[str] | None) -> None:
    """Refuse node names the bring-up file does not list (a typo must not start nothing
    silently): TaskLearningError naming them, with a "did you mean" and the known names."""
    known = [n.name for n in config.nodes]
    unknown = [n for n in selected or () if n not in known]
    if unknown:
        hints = [f"{n} (did you mean {m[0]}?)" if (m := difflib.get_close_matches(n, known, n=1))
                 else n for n in unknown]
        raise TaskLearningError(f"unknown node(s) {', '.join(hints)}; known in {config.source}: "
                                f"{', '.join(known)}")
# Parameters every ROS 2 node has without declaring them in a params file.
ROS_NODE_PARAMETERS = frozenset({"use_sim_time", "start_type_description_service"})


def check_overrides(config: BringupConfig, overrides: Mapping[str, Any] | None) -> None:
    """Refuse a "node.name" override for a node the bring-up file does not list, or for a
    parameter that node's params file does not set (rclpy would ignore it silently)."""
    nodes = {n.name: n for n in config.nodes}
    for key, value in (overrides or {}).items():
        if value is None or "." not in key:
            continue
        node_name, _, param = key.partition(".")
        spec = nodes.get(node_name)
        if spec is None:
            raise TaskLearningError(f"parameter {key!r}: unknown node {node_name!r} (nodes in "
                                    f"{config.source or 'the bring-up file'}: {', '.join(nodes)})")
        if spec.params_file is None or not spec.params_file.is_file():
            continue
        known = params_file_keys(spec.params_file) | ROS_NODE_PARAMETERS
        if param not in known:
            import difflib

            hint = difflib.get_close_matches(param, sorted(known), n=1)
            raise TaskLearningError(
                f"parameter {key!r}: node {node_name!r} has no parameter {param!r} in {spec.params_file}"
                + (f" (did you mean {node_name}.{hint[0]}?)" if hint else f" (known: {', '.join(sorted(known))})"))


LLM_SERVER_NODE = "llm_server"


def llm_wiring(config: BringupConfig, selected: Sequence[str] | None, llm: str = "", *, base_url: str = "",
               model: str = "", selection_model: str = "", port: int | None = None, decoding: str = ""
               ) -> tuple[list[str] | None, dict[str, Any]]:
    """What `--llm X [--base-url U] [--llm-model M]` means for a graph: (the nodes to start, the
    parameter overrides). Every node with an `llm` parameter gets X (and U, M as llm_base_url,
    llm_model...). `local` without a URL adds the llm_server node on a free port (or `port`) and
    points the others at it; M is then the GGUF file it serves. Shared by `task-learning bringup`
    and the launch file, so both wire a graph the same way. Values keep their parameter's type
    (the port is an int: the launch passes them as typed parameters). `decoding` (auto | free |
    grounded) goes to every node with a `decoding` parameter; empty: as in config/nodes/."""
    overrides: dict[str, Any] = {}
    if llm:
        overrides["llm"] = llm
    if decoding:
        from task_learning.llm.constraints import parse_decoding

        parse_decoding(decoding)  # a typo: one line naming the choices, before any node starts
        overrides["decoding"] = decoding.strip().lower()
    if selection_model:
        overrides["llm_selection_model"] = selection_model
    if llm.strip().lower() == "local" and not base_url:
        from task_learning.llm.local_server import HOST, free_port

        port = port or free_port()
        base_url = f"http://{HOST}:{port}/v1"
        overrides[f"{LLM_SERVER_NODE}.port"] = int(port)
        if model:
            overrides[f"{LLM_SERVER_NODE}.model"] = model
        names = list(selected) if selected else [n.name for n in config.nodes if n.default]
        if LLM_SERVER_NODE not in names:
            names.append(LLM_SERVER_NODE)
        selected = names
    elif model:
        overrides["llm_model"] = model
    if base_url:
        overrides["llm_base_url"] = base_url
    return (list(selected) if selected else None), overrides


def started(spec: NodeSpec, selected: Sequence[str] | None) -> bool:
    """Whether `spec` starts: named in `selected`, or none named and the node is a default one."""
    return spec.name in selected if selected else spec.default


@dataclass
class NodeLaunch:
    """A node ready to start: its command line."""

    spec: NodeSpec
    command: list[str]


def plan(config: BringupConfig, selected: Sequence[str] | None = None,
         overrides: Mapping[str, Any] | None = None) -> list[NodeLaunch]:
    """The command line of every node to start. Unknown names in `selected` are an error; nodes
    whose module is missing are skipped with a warning; an override "key" goes to the nodes whose
    parameter file has that key, "node.key" to that node only."""
    check_overrides(config, overrides)
    check_selected(config, selected)
    launches = []
    for spec in config.nodes:
        if not started(spec, selected):
            continue
        if not module_exists(spec.module):
            log.warning("skipping node %s: module %s is not in the tree yet", spec.name, spec.module)
            continue
        command = [sys.executable, "-m", NODE_ENTRY, spec.module, "--ros-args"]
        keys: set[str] = set()
        if spec.params_file is not None:
            if spec.params_file.is_file():
                command += ["--params-file", str(spec.params_file)]
                keys = params_file_keys(spec.params_file)
            else:
                log.warning("node %s: parameter file %s not found; starting with its defaults",
                            spec.name, spec.params_file)
        for key, value in (overrides or {}).items():
            node_name, dot, param = key.rpartition(".")
            if value is None:
                continue
            if dot and node_name == spec.name:
                command += ["-p", f"{param}:={value}"]  # "planner.db_path": that node only
            elif not dot and key in keys:
                command += ["-p", f"{key}:={value}"]
        launches.append(NodeLaunch(spec, command))
    return launches


@dataclass
class RunningNode:
    launch: NodeLaunch
    process: subprocess.Popen
    reported: bool = False


@dataclass
class Bringup:
    """Runs a set of node processes until a stop request, or until one dies (policy permitting)."""

    launches: list[NodeLaunch]
    shutdown_timeout_s: float = 10.0
    on_node_exit: str = "shutdown"
    env: Mapping[str, str] | None = None
    poll_s: float = 0.1
    running: list[RunningNode] = field(default_factory=list)
    # SIGINT/SIGTERM, when run_bringup installed them: polled by watch(), never set from a handler
    stop_signals: StopSignals | None = None
    _stop: threading.Event = field(default_factory=threading.Event)

    def start(self) -> None:
        env = dict(os.environ if self.env is None else self.env)
        env.setdefault("PYTHONUNBUFFERED", "1")
        env.update(profile_env(env))  # Fast DDS's 100 ms response wait loses answers under load
        before_exec = die_with_parent()
        for launch in self.launches:
            process = subprocess.Popen(launch.command, env=env, start_new_session=True,
                                       preexec_fn=before_exec)  # noqa: PLW1509 - only a prctl call
            self.running.append(RunningNode(launch, process))
            log.info("started %s (pid %d): %s", launch.spec.name, process.pid, " ".join(launch.command[1:]))

    def watch(self) -> int:
        """Until a stop request (or a node's death, under policy 'shutdown'); then stop all.
        Returns 0 after a clean stop, 1 if any node died on its own."""
        died = False
        while not self._stop.is_set():
            if self.stop_signals is not None and self.stop_signals.received:
                break
            for node in self.running:
                code = node.process.poll()
                if code is not None and not node.reported:
                    node.reported = True
                    died = True
                    log.error("node %s (pid %d) died: %s", node.launch.spec.name, node.process.pid,
                              describe_exit(code))
                    if self.on_node_exit == "shutdown":
                        log.error("stopping the other nodes (on_node_exit: shutdown)")
                        self._stop.set()
            if all(n.reported for n in self.running):
                break
            self._stop.wait(self.poll_s)
        self.stop_all()
        return 1 if died else 0

    def stop_all(self) -> None:
        """SIGTERM to every live node, then SIGKILL after the shutdown timeout."""
        stopped_starting: set[int] = set()  # ended by SIGTERM's default action: before their handlers
        for sig, wait_s in ((signal.SIGTERM, self.shutdown_timeout_s), (signal.SIGKILL, 5.0)):
            alive = [n for n in self.running if n.process.poll() is None]
            if not alive:
                break
            if sig != signal.SIGTERM:
                log.warning("%s did not stop in time: sending %s", ", ".join(n.launch.spec.name for n in alive),
                            sig.name)
            for node in alive:
                try:
                    node.process.send_signal(sig)
                except ProcessLookupError:
                    pass
            deadline = time.monotonic() + wait_s
            for node in alive:
                try:
                    node.process.wait(timeout=max(0.0, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    pass
                if sig == signal.SIGTERM and node.process.poll() == -signal.SIGTERM:
                    stopped_starting.add(node.process.pid)
        for node in self.running:
            self._report_stop(node, node.process.pid in stopped_starting)

    @staticmethod
    def _report_stop(node: RunningNode, while_starting: bool) -> None:
        code = node.process.poll()
        if node.reported:
            return
        node.reported = True
        if code == 0:
            log.info("node %s stopped cleanly", node.launch.spec.name)
        elif while_starting:
            log.info("node %s stopped while it was starting (before its stop handlers)", node.launch.spec.name)
        else:
            log.warning("node %s stopped: %s", node.launch.spec.name,
                        describe_exit(code) if code is not None else "still running after SIGKILL")


def run_bringup(
    selected: Sequence[str] | None = None,
    overrides: Mapping[str, Any] | None = None,
    *,
    config: BringupConfig | None = None,
    on_node_exit: str | None = None,
    install_signal_handlers: bool = True,
    on_started: Callable[[Bringup], None] | None = None,
) -> int:
    """Load the config, start the nodes, run until Ctrl-C/SIGTERM or a node's death; exit code."""
    config = config or load_bringup_config()
    launches = plan(config, selected, overrides)
    if not launches:
        raise TaskLearningError("no node to start (every selected node's module is missing)")
    signals = StopSignals() if install_signal_handlers else None
    bringup = Bringup(launches, config.shutdown_timeout_s, on_node_exit or config.on_node_exit,
                      stop_signals=signals)
    if signals is not None:
        signals.install()
    try:
        bringup.start()
        if on_started is not None:
            on_started(bringup)
        return bringup.watch()
    finally:
        bringup.stop_all()
        if signals is not None:
            signals.restore()


def launch_node_actions(config: Any, wanted: Sequence[str], overrides: Mapping[str, Any], environment: Mapping[str, str],
                 namespace: str = "") -> list[Any]:
    """For the launch files (launch/*.launch.py, run by `ros2 launch`): a launch_ros Node per node of the bring-up `config` that `wanted` starts, with its
    parameter file and the `overrides` that file has a key for (or that name the node:
    "llm_server.port" goes to llm_server alone), in `namespace`."""
    from launch.actions import LogInfo
    from launch_ros.actions import Node

    from task_learning_nodes.plumbing.launch_support import PACKAGE, on_node_exit

    actions: list[Any] = []
    dds_env = profile_env(environment)  # unless the user chose a Fast DDS profile
    for spec in config.nodes:
        if not started(spec, wanted):
            continue
        if not module_exists(spec.module):
            actions.append(LogInfo(msg=f"skipping node {spec.name}: {spec.module} is not installed"))
            continue
        parameters: list[Any] = []
        keys: set[str] = set()
        if spec.params_file is not None and spec.params_file.is_file():
            parameters.append(str(spec.params_file))
            keys = params_file_keys(spec.params_file)
        given = {k: v for k, v in overrides.items() if v and k in keys}
        given.update({k.partition(".")[2]: v for k, v in overrides.items()  # "llm_server.port": that node's
                      if v and k.partition(".")[0] == spec.name})
        if given:
            parameters.append(given)
        actions.append(Node(
            package=PACKAGE,
            executable=spec.executable,
            name=spec.name,
            namespace=namespace,
            parameters=parameters,
            output="screen",
            emulate_tty=True,
            on_exit=on_node_exit(spec.name, config.on_node_exit),
            additional_env=dds_env,
            # Ctrl-C: as long as `task-learning bringup` waits before it escalates.
            sigterm_timeout=str(config.shutdown_timeout_s),
        ))
    return actions
