"""Stand-ins for a robot's standard servers (py_trees_ros style mocks), for tests and the demo:
the contract a robot, or a simulator of one (sim/), must meet. Never started on a robot."""
