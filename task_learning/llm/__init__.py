"""One LLM interface for the whole project: providers (openai, replay, offline) behind `LLMClient`."""
