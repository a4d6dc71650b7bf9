"""`python -m task_learning.apps.cli` runs the same CLI as the `task-learning` script."""
import sys

from task_learning.apps.cli import main

sys.exit(main())
