"""diagnose: name the root cause of a failed GPU / LLM-inference deployment."""

__version__ = "0.1.0"
