"""The applications: composition roots above the core library, and the only part of
`task_learning` that may import the ROS layer (`task_learning_nodes`).

- cli/: the `task-learning` command (every subcommand, and the ROS runs of `run`, `anticipate`,
  `operator`, `bag` and `demo`).
- bringup.py: the ROS 2 nodes as separate processes (`task-learning bringup`, the launch files).
- faults/: fault injection for `task-learning faults`.
- sweeps/: experiment sweeps as Ray tasks (`task-learning sweep`).
"""
