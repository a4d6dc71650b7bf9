"""Launch every task_learning node, with the same executables and parameter files as
`task-learning bringup`:

    ros2 launch task_learning task_learning.launch.py [scene:=tidy_kitchen] [backend:=symbolic]
        [nodes:=perception,grounding] [db:=kb.sqlite] [web:=true] [web_port:=8765]
        [llm:=local] [llm_base_url:=URL] [llm_model:=NAME] [llm_selection_model:=NAME] [decoding:=free]

The node list, parameter files and exit policy come from config/bringup.yaml (installed under
share/task_learning/config), so both bring-ups stay the same. `scene` / `backend`, when given,
override that key in every node whose parameter file has it; empty means "as in the file".
`db` is the knowledge base the planner and oversight nodes share; by default
$ROS_HOME/task_learning/task_learning.sqlite (~/.ros/...), so it does not depend on the folder
`ros2 launch` runs in; a relative path is taken relative to that folder and made absolute.

`llm` (offline | openai | local | replay:FILE) goes to every node with an LLM, with `llm_base_url`,
`llm_model`, `llm_selection_model` (empty: as in config/nodes/ and config/llm.yaml). `llm:=local`
without a URL also starts the llm_server node (llama.cpp's server with the installed model) on a
free port and points the LLM nodes at it: the graph's managed LLM process, stopped with it
(task_learning.apps.bringup.llm_wiring, shared with `task-learning bringup --llm local`).
`decoding` (auto | free | grounded) goes to every node with an LLM (empty: as in config/nodes/,
auto: grounded with local, free otherwise; docs/llm.md).

Errors end the launch with exit code 1 and one line saying why: a name in `nodes:=` that
config/bringup.yaml does not list (nothing is started), a `backend:=` that is not a backend, and
(with on_node_exit: shutdown, the default) a node that dies on its own, after which the other
nodes are stopped. Ctrl-C stops every node cleanly.

Every node runs with the stack's Fast DDS profile (config/fastdds_profile.xml) unless the user
chose one (task_learning/apps/dds_profile.py), as under `task-learning bringup`.
"""
import os

from ament_index_python.packages import get_package_share_directory
from launch.actions import DeclareLaunchArgument, LogInfo, OpaqueFunction
from launch.substitutions import LaunchConfiguration

from launch import LaunchDescription
from task_learning.apps.bringup import check_selected, launch_node_actions, llm_wiring, load_bringup_config
from task_learning.errors import TaskLearningError
from task_learning.world.factory import BACKENDS
from task_learning_nodes.plumbing.launch_support import PACKAGE, default_db

OVERRIDABLE = ("scene", "backend")
LLM_ARGUMENTS = ("llm", "llm_base_url", "llm_model", "llm_selection_model", "decoding")


def _nodes(context, *args, **kwargs):
    share = get_package_share_directory(PACKAGE)
    config = load_bringup_config(os.path.join(share, "config", "bringup.yaml"))
    wanted = [n.strip() for n in LaunchConfiguration("nodes").perform(context).split(",") if n.strip()]
    if LaunchConfiguration("web").perform(context).strip().lower() in ("true", "1", "yes"):
        # the web operator panel too: beside the nodes named, or beside the default ones
        wanted = [n for n in (wanted or [spec.name for spec in config.nodes if spec.default])
                  if n != "web_operator"] + ["web_operator"]
    check_selected(config, wanted)  # a typo starts nothing and ends the launch with the reason
    web_port = LaunchConfiguration("web_port").perform(context).strip()
    if web_port and not (web_port.isdigit() and int(web_port) <= 65535):
        raise TaskLearningError(f"web_port:={web_port} is not a TCP port (0-65535; 0: any free port)")
    llm = {key: LaunchConfiguration(key).perform(context) for key in LLM_ARGUMENTS}
    wanted, wiring = llm_wiring(config, wanted, llm["llm"], base_url=llm["llm_base_url"],
                                model=llm["llm_model"], selection_model=llm["llm_selection_model"],
                                decoding=llm["decoding"])
    wanted = wanted or []
    overrides = {key: LaunchConfiguration(key).perform(context) for key in OVERRIDABLE}
    overrides.update(wiring)
    if web_port:
        overrides["web_operator.port"] = int(web_port)
    db = LaunchConfiguration("db").perform(context) or default_db()
    overrides["db_path"] = os.path.abspath(os.path.expanduser(db))
    return [LogInfo(msg=f"knowledge base: {overrides['db_path']}"),
            *launch_node_actions(config, wanted, overrides, context.environment)]


def generate_launch_description():
    return LaunchDescription([
        DeclareLaunchArgument("scene", default_value="",
                              description="scene for every node that takes one (tidy_kitchen, "
                                          "store_groceries, organize_office); empty: as in config/nodes/"),
        DeclareLaunchArgument("backend", default_value="", choices=["", *BACKENDS],
                              description="world backend of perception; empty: as in "
                                          "config/nodes/perception.yaml"),
        DeclareLaunchArgument("nodes", default_value="",
                              description="comma-separated node names from config/bringup.yaml; empty: all but "
                                          "those with default: false (anticipation)"),
        DeclareLaunchArgument("web", default_value="false", choices=["true", "false"],
                              description="true: start the web operator panel (web_operator) too "
                                          "(docs/web-panel.md)"),
        DeclareLaunchArgument("web_port", default_value="",
                              description="TCP port of the web operator panel (0: any free port, logged at "
                                          "start); empty: as in config/nodes/web_operator.yaml"),
        DeclareLaunchArgument("db", default_value="",
                              description="knowledge base of the planner and oversight nodes; empty: "
                                          "$ROS_HOME/task_learning/task_learning.sqlite"),
        DeclareLaunchArgument("llm", default_value="",
                              description="LLM of every node that has one: offline | openai | local | replay:FILE; "
                                          "local also starts llm_server (llama-server) unless llm_base_url is "
                                          "given; empty: as in config/nodes/"),
        DeclareLaunchArgument("llm_base_url", default_value="",
                              description="the LLM endpoint (openai) or a running llama-server (local)"),
        DeclareLaunchArgument("llm_model", default_value="",
                              description="completions model (openai) or the GGUF file llm_server serves (local)"),
        DeclareLaunchArgument("llm_selection_model", default_value="",
                              description="model for selection and chat prompts (openai)"),
        DeclareLaunchArgument("decoding", default_value="",
                              description="decoding of every node with an LLM: auto | free | grounded; "
                                          "empty: as in config/nodes/ (auto: grounded with local)"),
        OpaqueFunction(function=_nodes),
    ])
