"""REASONING: match signals and fact conditions, rank, fold symptoms under their causes."""
