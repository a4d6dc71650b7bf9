"""The ROS graph's fault probes (`task-learning faults`, category ros), run in their own process."""
