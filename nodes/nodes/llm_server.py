"""llm_server_node: llama.cpp's server with the local model, as a managed process of the graph.

`task-learning bringup --llm local` and `ros2 launch task_learning task_learning.launch.py
llm:=local` start this node on a port they chose and give the LLM nodes (goal elicitation, action
selector, planner, anticipation) its URL as `llm_base_url`: one server for the graph, started
with it and stopped with it, the way the perception node owns the AI2-THOR simulator it runs.

The node starts llama-server (task_learning.llm.local_server) before it reports ready: a missing
install or a server that cannot start stops the node with one line (exit 2), and bringup stops the
graph. Then it watches the process: when it dies (a crash, the OOM killer, a kill), the node says
so and starts it again on the same port, so the next goal finds a server (the goal that was running
ends with a reason naming the LLM server: the clients' LocalProvider sees the dead or hung server).
A server that dies again within `restart_window_s` of each of `max_restarts` restarts is given up:
the node exits 1 (with bringup's default policy, the graph stops, naming this node).

    llm_server_node --ros-args --params-file config/nodes/llm_server.yaml -p port:=8090
"""
from __future__ import annotations

import threading
import time

from rclpy.node import Node

from task_learning.lifecycle.child_process import describe_exit
from task_learning.lifecycle.signals import StopSignals
from task_learning.llm.local_server import LocalServer, LocalServerError
from task_learning.llm.settings import load_llm_settings
from task_learning_nodes.plumbing.node_base import request_shutdown, run_node
from task_learning_nodes.plumbing.params import NodeParameters, declare_parameters, param

NODE_NAME = "llm_server"
WATCH_PERIOD_S = 0.5

class Parameters(NodeParameters):
    """The llm_server node's parameters (config/nodes/llm_server.yaml)."""

    port: int = param(0, "Loopback port (0: a free one; the launch chooses one and tells the LLM nodes)",
                      min=0, max=65535)
    model: str = param("", "GGUF file to serve; empty: the installed model (task-learning llm install)")
    context: int = param(0, "-c: KV cache tokens shared by the slots; 0: config/llm.yaml (local.context)",
                         min=0, max=1 << 20)
    parallel: int = param(0, "-np: parallel slots; 0: config/llm.yaml (local.parallel)", min=0, max=64)
    threads: int = param(-1, "-t: threads; 0: every core; -1: config/llm.yaml (local.threads)", min=-1, max=256)
    max_restarts: int = param(3, "Restarts after deaths within restart_window_s of each other, before the "
                              "node gives up (exit 1)", min=0, max=1000)
    restart_window_s: float = param(60.0, "A death this long after the last start does not count toward "
                                    "max_restarts", min=1.0, max=86400.0)


class LLMServerNode(Node):
    def __init__(self) -> None:
        super().__init__(NODE_NAME)
        # set first: destroy_node runs also when the constructor fails below (a server that will
        # not start), and must then stop what started and raise nothing of its own
        self._halt = threading.Event()
        params = declare_parameters(self, Parameters)
        settings = load_llm_settings().local  # ConfigError: one line, exit 2
        changes: dict = {}
        if params.context:
            changes["context"] = params.context
        if params.parallel:
            changes["parallel"] = params.parallel
        if params.threads >= 0:
            changes["threads"] = params.threads
        self.settings = settings.model_copy(update=changes)
        self.max_restarts = params.max_restarts
        self.restart_window_s = params.restart_window_s
        self.server = LocalServer(self.settings, model=params.model, port=params.port)
        self.get_logger().info(f"starting {self.server.binary.name} with {self.server.model.name}")
        self.server.start()  # LocalServerError: exit 2, one line naming the log
        self.port = self.server.port
        self._started_at = time.monotonic()
        self._restarts = 0
        self.failed = False  # gave up restarting: the process exits 1
        self.get_logger().info(f"serving at {self.server.base_url} (pid {self._pid()}, -c {self.settings.context}, "
                               f"-np {self.settings.parallel}, -t {self.settings.threads or 'all cores'})")
        self._watcher = threading.Thread(target=self._watch, name="llm-server-watch", daemon=True)
        self._watcher.start()

    def _pid(self) -> int | None:
        return self.server.process.pid if self.server.process is not None else None

    def _watch(self) -> None:
        while not self._halt.wait(WATCH_PERIOD_S):
            code = self.server.exit_code()
            if code is None:
                continue
            log = self.server.log_path
            self.get_logger().error(f"{self.server.describe()} died: {describe_exit(code)}: "
                                    f"{self.server.last_log_line()} (log: {log})")
            recent = time.monotonic() - self._started_at < self.restart_window_s
            self._restarts = self._restarts + 1 if recent else 1
            if self._restarts > self.max_restarts:
                self.get_logger().error(f"giving up after {self.max_restarts} restarts within "
                                        f"{self.restart_window_s:g} s of each other (max_restarts)")
                self.failed = True
                request_shutdown()
                return
            self.server.stop(keep_log=True)
            self.server = LocalServer(self.settings, model=str(self.server.model), port=self.port,
                                      binary=self.server.binary)
            try:
                self.server.start()
            except LocalServerError as exc:
                self.get_logger().error(f"restart failed: {exc}")
                self.failed = True
                request_shutdown()
                return
            self._started_at = time.monotonic()
            self.get_logger().info(f"restarted: serving at {self.server.base_url} again (pid {self._pid()})")

    def stop_work(self) -> None:
        """Stop watching, then the server (SIGTERM, then SIGKILL)."""
        self._halt.set()
        self._watcher.join(timeout=5.0)
        self.server.stop()

    def destroy_node(self) -> None:
        self._halt.set()
        server: LocalServer | None = getattr(self, "server", None)  # None: the constructor failed first
        if server is not None:
            server.stop()  # also when the node ends on an error before stop_work
        super().destroy_node()


def main(args: list[str] | None = None, signals: StopSignals | None = None) -> int:
    return run_node(LLMServerNode, args, name=NODE_NAME, signals=signals)

if __name__ == "__main__":
    raise SystemExit(main())
