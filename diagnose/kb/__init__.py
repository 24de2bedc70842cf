"""KNOWLEDGE: the rule schema, the loader, the compiled cache, lint, compat tables."""
