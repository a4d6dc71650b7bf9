"""`python -m task_learning.cli` runs the same CLI as the `task-learning` script."""
import sys

from task_learning.cli import main

sys.exit(main())
