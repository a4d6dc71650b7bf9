"""What the nodes share: run_node and the entry point, parameters, QoS, message conversions, topic
and service names, the launch files' helpers."""
