"""task_learning: a ROS-free core with which a robot learns household tasks from an LLM and a human.

The core never imports rclpy; the thin ROS 2 layer lives in the `task_learning_nodes` package
(the `nodes/` folder). Everything here can be used in-process for experiments.
"""

__version__ = "0.1.0"
