"""The Slack app (`diagnose slack`, extra `[slack]`): Bolt for Python over Socket Mode, or HTTP events
behind `diagnose serve`. A mention in a thread (or the "Diagnose this" message action) reads the
thread's messages and files, diagnoses them with `api.diagnose_texts` like the CLI, and answers in the
thread with the Block Kit summary (render/slack.py) and the Markdown post-mortem as a file.

Nothing here imports slack_bolt at import time but app.py and run.py: the CLI's start-up stays light.
"""
