"""INPUT: read the user's inputs, tell the kinds of artifact in them, parse them into facts."""
