"""`task-learning experiment --paper bootstrapping`: the bootstrapped-productions paper's Table 1 beside the paper's rows
(production rules bootstrapped in --train-scene, both agents on --test-scenes)."""
from __future__ import annotations

import argparse

from task_learning.apps.cli.bootstrap_cmd import run_paper_table


def run(args: argparse.Namespace) -> int:
    return run_paper_table(args)
