"""The offline stand-in's STARS responder: goal sentences decoded token by token (goals,
sentences, decoder), repair feedback (feedback) and Selection ratings (selection), from the
household knowledge in config/offline_model/ (knowledge)."""
