"""The web operator panel: a paired operator answers from a phone or a laptop.

server.py: the FastAPI application, its checks and the uvicorn thread; view.py: what a page sees
of a question; backend.py: the in-process backend (`task-learning run --operator web`); link.py:
the pairing link and its QR code. The ROS backend is nodes/nodes/web_operator.py. docs/web-panel.md.
"""
