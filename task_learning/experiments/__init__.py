"""Experiments that reproduce the papers' tables (seed 000 Table 2 / 11-13), with plots."""
