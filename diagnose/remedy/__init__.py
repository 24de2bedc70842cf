"""Remedies: fix and verify steps rendered from the facts, and one plan across findings."""
