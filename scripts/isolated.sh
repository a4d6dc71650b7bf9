#!/usr/bin/env bash
# Run a command in its own network namespace with only loopback (needs root or user namespaces),
# so ROS 2 graphs of other jobs on a shared host never discover this one, whatever domain ids
# they use. Example: scripts/isolated.sh task-learning faults --category ros
exec unshare -n bash -c 'ip link set lo up; exec "$@"' isolated "$@"
