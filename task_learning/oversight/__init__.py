"""Human oversight (the STARS paper §4.4, appendix B.7): the robot proposes goals it already vetted, the
operator answers yes/no, and only after rejections is the operator asked to describe the goal.

Pure Python: the ROS node (`task_learning_nodes.nodes.oversight`) and the Qt panel (`panel.py`, imported
only on demand) wrap these modules.
"""
