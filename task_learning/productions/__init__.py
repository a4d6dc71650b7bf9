"""Bootstrapped production rules (seed 001): what an LLM taught once runs as rules, as data."""
