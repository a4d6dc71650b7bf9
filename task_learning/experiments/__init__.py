"""Experiments that reproduce the papers' tables (the STARS paper Table 2 / 11-13), with plots."""
