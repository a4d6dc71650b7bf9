"""One repository per concern of the knowledge base, each over the one Database (kb/database.py):
questions.py (questions and answers), operators.py (paired operators), goals.py, policies.py,
productions.py (and world knowledge), routines.py, transfer.py (export and import).
kb/store.py's KnowledgeBase composes them for callers."""
