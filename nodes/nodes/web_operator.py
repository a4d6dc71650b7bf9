"""web_operator node: the web operator panel (docs/web-panel.md) served from the graph.

A node of its own rather than a part of the oversight node: it is one more operator client, as
rqt, the terminal and the simulated operator are. It reads the questions from the oversight
node's `oversight/pending` topic and answers through `oversight/answer`, each answer signed with
the key of the paired operator whose token the page holds, so the oversight node checks it
exactly as it checks every other client's and nothing about confirmation changes. The web server
(its HTTP parser, its TLS, its clients) then lives outside the process that holds the
confirmation ledger: a crash or an overload here costs the panel, never a question's fail-closed
end. It opens the oversight node's knowledge base (`db_path`) for what pairing needs: redeeming
one-time codes, checking tokens, and each operator's answer history.

Camera: the latest frame of `camera_topics` (AI2-THOR's camera/color/image_raw, the Fetch's
/head_camera/rgb/image_raw) when a question first appears is kept with that question and shown
with it (JPEG, to paired operators only).

Started when asked: `task-learning bringup --nodes ...,web_operator`, or `ros2 launch task_learning
task_learning.launch.py web:=true`; `task-learning operator --web` prints its pairing link.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Callable

from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import Image

from task_learning.errors import TaskLearningError
from task_learning.kb.store import DEFAULT_DB, KnowledgeBase, resolve_db_path
from task_learning.lifecycle.signals import StopSignals
from task_learning.oversight.pairing import OperatorCredentials
from task_learning.oversight.web.limits import WebLimits
from task_learning.oversight.web.server import WebPanel, WebServer, WebSettings, panel_url
from task_learning.types import AnswerKind, ConfirmationRequest
from task_learning_nodes.clients.oversight_client import OversightClient, OversightUnavailable, SubmitReply
from task_learning_nodes.plumbing import convert
from task_learning_nodes.plumbing.node_base import run_node
from task_learning_nodes.plumbing.oversight_names import PENDING_TOPIC, PendingMsg
from task_learning_nodes.plumbing.params import NodeParameters, declare_parameters, param
from task_learning_nodes.plumbing.qos import latched

CAMERA_TOPICS = "camera/color/image_raw,/head_camera/rgb/image_raw"
KEPT_IMAGES = 64

class Parameters(NodeParameters):
    """The web_operator node's parameters (config/nodes/web_operator.yaml)."""

    host: str = param("127.0.0.1", "Address the panel listens on; anything but loopback (127.0.0.1, ::1, "
                      "localhost) needs tls_certfile and tls_keyfile")
    port: int = param(8770, "TCP port of the panel (0: any free port, logged at start)", min=0, max=65535)
    tls_certfile: str = param("", "TLS certificate chain (PEM) for https; with tls_keyfile")
    tls_keyfile: str = param("", "TLS private key (PEM) for https; with tls_certfile")
    allowed_hosts: str = param("", "Comma-separated host names the page may be reached by besides host and "
                               "loopback (e.g. the robot's name on the network): a request naming another Host is refused")
    db_path: str = param(DEFAULT_DB, "The oversight node's knowledge base, where operators are paired and "
                         "answers are kept (the same file as the oversight node's db_path)")
    operators: str = param("", "Comma-separated paired operators who may use the panel; empty: every paired "
                           "operator (the oversight node's own `operators` applies too)")
    answers_per_minute: int = param(30, "Answers one operator may send per minute; more are refused (429)",
                                    min=1, max=100000)
    max_connections: int = param(100, "Open connections the panel keeps at most; beyond it, the oldest that has "
                                 "not sent a request is closed (docs/web-panel.md, Limits)", min=4, max=10000)
    header_timeout_s: float = param(10.0, "Seconds a connection has to send a complete request header",
                                    min=0.5, max=600.0)
    body_timeout_s: float = param(10.0, "Seconds a request has to send its body", min=0.5, max=600.0)
    camera_topics: str = param(CAMERA_TOPICS, "Comma-separated sensor_msgs/Image topics; the latest frame "
                               "when a question arrives is shown with it (empty: no images)")


class CameraFrames:
    """The latest camera frame, and the frame each question arrived with (JPEG on demand). A
    question asked before any frame came gets the first frame that comes while it waits."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._latest: Any = None
        self._waiting: list[str] = []  # pending questions without a frame yet
        self._by_question: OrderedDict[str, Any] = OrderedDict()
        self._jpeg: dict[str, bytes] = {}
        self.on_new_frame: Callable[[], None] | None = None  # a waiting question got its frame

    def on_image(self, msg: Any) -> None:
        with self._lock:
            self._latest = msg
            bound = self._bind(self._waiting)
        if bound and self.on_new_frame is not None:
            self.on_new_frame()

    def keep_for(self, request_ids: list[str]) -> None:
        with self._lock:
            self._waiting = [r for r in request_ids if r not in self._by_question]
            self._bind(self._waiting)

    def _bind(self, request_ids: list[str]) -> bool:
        if self._latest is None or not request_ids:
            return False
        for request_id in request_ids:
            self._by_question[request_id] = self._latest
        self._waiting = []
        while len(self._by_question) > KEPT_IMAGES:
            old, _ = self._by_question.popitem(last=False)
            self._jpeg.pop(old, None)
        return True

    def jpeg(self, request_id: str) -> bytes | None:
        with self._lock:
            if request_id in self._jpeg:
                return self._jpeg[request_id]
            msg = self._by_question.get(request_id)
        if msg is None:
            return None
        import cv2

        from task_learning.perception.images import image_to_array, to_bgr

        try:
            pixels = to_bgr(image_to_array(msg.encoding, msg.height, msg.width, msg.step, msg.data,
                                           msg.is_bigendian), msg.encoding)
        except ValueError:
            return None  # a depth image or an encoding no one can show
        ok, data = cv2.imencode(".jpg", pixels, [cv2.IMWRITE_JPEG_QUALITY, 80])
        if not ok:
            return None
        with self._lock:
            self._jpeg[request_id] = data.tobytes()
        return data.tobytes()


class RosBackend:
    """The web panel's questions and answers through the oversight node."""

    def __init__(self, client: OversightClient, frames: CameraFrames) -> None:
        self.client = client
        self.frames = frames
        self._lock = threading.Lock()
        self._latest: list[ConfirmationRequest] | None = None
        self._listener: Callable[[], None] | None = None

    def on_pending(self, msg: Any) -> None:
        pending = [convert.confirmation_request_from_msg(m) for m in msg.pending]
        self.frames.keep_for([r.request_id for r in pending])
        with self._lock:
            self._latest = pending
        self.changed()

    def changed(self) -> None:
        if self._listener is not None:
            self._listener()

    def set_listener(self, listener: Callable[[], None]) -> None:
        self._listener = listener

    def pending(self) -> list[ConfirmationRequest]:
        with self._lock:
            latest = self._latest
        if latest is not None:
            return list(latest)
        try:
            return self.client.pending(fresh=True)
        except OversightUnavailable:
            return []  # no oversight node (yet): nothing to show, nothing to answer

    def submit(self, request_id: str, answer: AnswerKind, description: str,
               credentials: OperatorCredentials, client: str) -> SubmitReply:
        try:
            return self.client.submit(request_id, answer, description, credentials=credentials,
                                      client_detail=client)
        except OversightUnavailable as exc:
            return SubmitReply(False, f"not answered: {exc}")

    def image(self, request_id: str) -> bytes | None:
        return self.frames.jpeg(request_id)


class WebOperatorNode(Node):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__("web_operator", **kwargs)
        params = declare_parameters(self, Parameters)
        db_path = resolve_db_path(str(params.db_path or ""))
        if not db_path or db_path == ":memory:":
            raise TaskLearningError("db_path: the web panel needs the oversight node's knowledge base file "
                                    "(operators are paired there)")
        settings = WebSettings(
            host=params.host, port=params.port, tls_certfile=params.tls_certfile,
            tls_keyfile=params.tls_keyfile, answers_per_minute=params.answers_per_minute,
            allowed_hosts=tuple(h.strip() for h in params.allowed_hosts.split(",") if h.strip()),
            operators=frozenset(n.strip() for n in params.operators.split(",") if n.strip()),
            limits=WebLimits(max_connections=params.max_connections, header_timeout_s=params.header_timeout_s,
                             body_timeout_s=params.body_timeout_s))
        settings.check()  # before anything is opened: a bad address or TLS file is one line, exit 2
        self.kb = KnowledgeBase(db_path)
        group = ReentrantCallbackGroup()
        self.client = OversightClient(self, name="web_operator")
        self.frames = CameraFrames()
        self.backend = RosBackend(self.client, self.frames)
        self.frames.on_new_frame = self.backend.changed
        self.create_subscription(PendingMsg, PENDING_TOPIC, self.backend.on_pending, latched(),
                                 callback_group=group)
        camera_qos = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE)
        for topic in [t.strip() for t in params.camera_topics.split(",") if t.strip()]:
            self.create_subscription(Image, topic, self.frames.on_image, camera_qos, callback_group=group)
        self.server = WebServer(WebPanel(self.backend, self.kb, settings))
        self.url = self.server.start()
        self.get_logger().info(f"web operator panel at {self.url} (db {db_path}); pair a phone with "
                               f"`task-learning operator --web --name NAME`")

    def stop_work(self) -> None:
        """Stop serving first: pages lose their stream (and with it every nonce), nothing answers."""
        self.server.stop()

    def destroy_node(self) -> None:
        server = getattr(self, "server", None)
        if server is not None:
            server.stop()
        kb = getattr(self, "kb", None)
        if kb is not None:
            kb.close()
        super().destroy_node()


def main(args: list[str] | None = None, signals: StopSignals | None = None) -> int:
    return run_node(WebOperatorNode, args, name="web_operator", signals=signals)


if __name__ == "__main__":
    raise SystemExit(main())


def running_panel(wait_s: float, node_name: str = "/web_operator") -> tuple[str, str]:
    """(URL, db_path) of the running web_operator node, from its parameters (for `task-learning
    operator --web`); TaskLearningError when no such node answers within `wait_s`."""
    import rclpy
    import rclpy.executors
    from rcl_interfaces.srv import GetParameters
    from rclpy.client import Client

    rclpy.init()
    node = rclpy.create_node("web_operator_query")
    try:
        client: Client = node.create_client(GetParameters, f"{node_name}/get_parameters")
        if not client.wait_for_service(timeout_sec=wait_s):
            raise TaskLearningError(f"no web_operator node answers (waited {wait_s:g} s): start it with "
                                    f"`task-learning bringup --nodes ...,web_operator` or `ros2 launch task_learning "
                                    f"task_learning.launch.py web:=true`, or give --url and --db")
        future = client.call_async(GetParameters.Request(names=["host", "port", "tls_certfile", "db_path"]))
        executor = rclpy.executors.SingleThreadedExecutor()
        executor.add_node(node)
        executor.spin_until_future_complete(future, timeout_sec=wait_s)
        reply = future.result() if future.done() else None
        if reply is None:
            raise TaskLearningError(f"the web_operator node did not say where it listens within {wait_s:g} s")
        host, port, cert, db = reply.values
        settings = WebSettings(host=host.string_value, port=int(port.integer_value), tls_certfile=cert.string_value)
        if settings.port == 0:
            raise TaskLearningError("the web_operator node listens on a port it chose (port 0): give --url "
                                    "from its log line 'web operator panel at ...'")
        return panel_url(settings, settings.port), resolve_db_path(db.string_value)
    finally:
        node.destroy_node()
        rclpy.try_shutdown()
