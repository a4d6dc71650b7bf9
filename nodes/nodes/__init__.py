"""The ROS nodes, one module each (`<name>_node`, config/nodes/<name>.yaml). A node never imports
another node: what two share is in `task_learning_nodes.plumbing` or `task_learning_nodes.clients`."""
