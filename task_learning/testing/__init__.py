"""Test doubles shared by the tests, the benches and the fault probes; the core never imports
them.

- mug_example.py: the mug example of the STARS paper's appendix B, replayed from its figures.
- fake_server.py: a scripted OpenAI-compatible HTTP server on loopback.
"""
