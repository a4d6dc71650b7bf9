"""The planner node's parameters (config/nodes/planner.yaml), in a module of their own so the node
module holds only the node: the model is what `declare_parameters` declares with descriptors and
ranges, and what the parameter reference and the parameter-file checks read."""
from __future__ import annotations

from task_learning.bcr.engines import ENGINES
from task_learning.kb import DEFAULT_DB
from task_learning.llm_state.agent import METHODS
from task_learning.llm_state.strategy import STRATEGIES
from task_learning.planning.session import CONDITIONS
from task_learning_nodes.plumbing.params import LLMEndpointParameters, param

ELICITATION = ("across-objects", "per-object")  # how PerformTask elicits goals (the `elicitation` parameter)


class Parameters(LLMEndpointParameters):
    """The planner node's parameters (config/nodes/planner.yaml). The writable ones (read_only=False)
    are read at each goal, so `ros2 param set` takes effect from the next one."""

    scene: str = param("tidy_kitchen", "Scene used for the subtasks and the completion measure when a "
                       "PerformTask goal names none (the world itself is perception's: give both the same scene)",
                       read_only=False)
    condition: str = param("STARS+O", "Condition used when a goal leaves it empty",
                           choices=CONDITIONS,
                           read_only=False)
    db_path: str = param(DEFAULT_DB, "SQLite knowledge base of learned goals and "
                         "policies (the same task again on the same file is Trial #2); default "
                         "$ROS_HOME/task_learning/task_learning.sqlite (~/.ros/...), the same however the graph is "
                         "started; relative paths are relative to the node's working directory")
    engine: str = param("heuristic", "BCR engine used to reach goals: heuristic (no LLM) or llm",
                        choices=ENGINES,
                        read_only=False)
    llm: str = param("offline", "LLM of the llm engine: offline (not a language model), openai, local or "
                     "replay:FILE",
                     read_only=False)
    strategy: str = param("bcr", "How goals are reached: bcr (BCR action selection with `engine`) "
                          "or llm_state (LLM-State: an open state and a plan policy, with `llm`)", choices=STRATEGIES,
                          read_only=False)
    llm_state_method: str = param("ours", "LLM-State method for strategy llm_state (ours, no_summary, "
                                  "no_objects, no_states, inner_monologue, progprompt)", choices=METHODS,
                                  read_only=False)
    llm_state_topic: str = param("llm_state", "With strategy llm_state: its open state (LLMState) is "
                                 "published here, latched, after every rebuild")
    episode_dir: str = param("", "Folder where each PerformTask is recorded as one MCAP episode "
                             "(episode-<time>-<scene>.mcap: the graph's topics, LLM calls, questions and answers, actions, "
                             "knowledge-base changes; `task-learning replay` runs it again); empty: not recorded",
                             read_only=False)
    query_world_service: str = param("query_world", "Perception's QueryWorld service")
    execute_action_service: str = param("execute_action", "Perception's ExecuteAction service")
    learn_goal_action: str = param("learn_goal", "Goal elicitation's LearnGoal action")
    learn_goals_action: str = param("learn_goals", "Goal elicitation's LearnGoals action (elicitation "
                                    "across-objects)")
    elicitation: str = param("across-objects", "How PerformTask elicits goals: across-objects (one LearnGoals "
                             "batch runs the model stages of every task object together, merged into shared round trips; the "
                             "operator is still asked one object at a time, in the task's order, when its turn comes) or "
                             "per-object (one LearnGoal per object, each object's round trips its own: for comparison); the "
                             "goals learned are the same", choices=ELICITATION, read_only=False)
    service_timeout_s: float = param(10.0, "Seconds to wait for a service call", min=0.1, max=3600.0)
    action_timeout_s: float = param(240.0, "Seconds to wait for one primitive action (execute_action): never "
                                    "shorter than service_timeout_s, nor than the robot's longest action "
                                    "(robot.launch.py derives it from the robot profile)", min=0.1, max=86400.0)
    cancel_motion_service: str = param("robot_skills/cancel", "std_srvs/Trigger called when PerformTask is "
                                       "cancelled during an action: the robot's goals in flight are cancelled "
                                       "(the robot-skills layer's); '' = none")
    learn_goal_timeout_s: float = param(900.0, "Seconds for one object's goal elicitation (with oversight "
                                        "this includes the operator's time)", min=1.0, max=86400.0,
                                        read_only=False)
    max_actions: int = param(100, "Actions per goal before reaching it counts as failed", min=1,
                             max=100000,
                             read_only=False)
    require_confirmation: bool = param(True, "Every learned or reused goal is confirmed by the oversight "
                                       "node before the robot moves, whatever the condition; false only on a test bench")
    allow_scene_paths: bool = param(False, "Whether a PerformTask goal may name a scene file path (else "
                                    "scene names only)")
    max_goal_literals: int = param(32, "Most goal literals one ReachGoal may ask for", min=1, max=10000,
                                   read_only=False)
    use_productions: bool = param(True, "Learned production rules (bootstrapped productions, `task-learning bootstrap`) try each "
                                  "goal of a PerformTask before the strategy (bcr or llm_state) selects actions, with no LLM; false: the "
                                  "strategy only",
                                  read_only=False)
    productions_require_approval: bool = param(True, "Only productions an operator approved (`task-learning kb "
                                               "approve`) are used; false only on a test bench")
    productions_ask_operator: bool = param(True, "With productions_require_approval: before a PerformTask, new "
                                           "(unapproved) productions are put to the operator through the oversight node, one yes/no question per "
                                           "task family; only a yes approves (a no, a timeout or no oversight node leaves them unused)")
    stack_key_file: str = param("", "Key file the stack's nodes sign their questions and confirmation checks "
                                "with (the oversight node's stack_key_file); empty: $ROS_HOME/task_learning/stack.key")
