"""Bootstrapped production rules (the bootstrapped-productions paper): what an LLM taught once runs as rules, as data."""
