"""Clients of the nodes: the oversight client, the perception node's services as a world backend,
the demo and Fetch runs, the rosbag tools, the rqt plugin."""
