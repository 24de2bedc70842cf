"""One request to the app, whichever way it came (a mention, the message action, the slash command),
handled the same way: acknowledge, read, diagnose, answer in place, keep the answer."""

from __future__ import annotations

import logging
import time
import uuid
from typing import Any

from slack_sdk.errors import SlackApiError

from diagnose.errors import DiagnoseError
from diagnose.kb.compiled import KnowledgeBase
from diagnose.slack import answer as answers
from diagnose.slack import files
from diagnose.slack.settings import SlackSettings
from diagnose.slack.store import Store, Stored
from diagnose.slack.text import message_text

log = logging.getLogger("diagnose.slack")
MAX_PAGES = 5  # of conversations.replies, 200 messages each
NOTHING = "Nothing to diagnose in this thread: paste the log into it, or share the log file (or a `diagnose collect` bundle)."


class Handler:
    def __init__(self, settings: SlackSettings, kb: KnowledgeBase, store: Store) -> None:
        self.settings, self.kb, self.store = settings, kb, store

    def thread(self, client: Any, channel: str, thread_ts: str, asked_ts: str, bot_user: str | None) -> None:
        """Answer the thread `thread_ts` of `channel`; `asked_ts` is the message that asked (it gets the reaction)."""
        self._react(client, channel, asked_ts)
        try:
            messages = self._replies(client, channel, thread_ts)
        except SlackApiError as exc:  # not_in_channel, missing_scope: say so where it was asked
            error = exc.response.get("error")
            self._post(client, channel, thread_ts, {"text": f"diagnose: cannot read this thread ({error}): "
                                                            "`/invite @diagnose` to the channel, then ask again."})
            return
        mine = [m for m in messages if not (m.get("bot_id") or (bot_user and m.get("user") == bot_user))]
        text = "\n".join(t for t in (message_text(m) for m in mine) if t)
        shared = [dict(f, created=f.get("created") or m.get("ts")) for m in mine for f in m.get("files") or []]
        got = files.gather(client, shared, self.settings)
        artifacts = ([("thread", text.encode())] if text.strip() else []) + got.artifacts
        if not artifacts:
            self._post(client, channel, thread_ts, {"text": NOTHING})
            return
        answer_id = uuid.uuid4().hex[:12]
        try:
            answer = answers.diagnose(artifacts, self.kb, got.notes, answer_id, self.settings.max_inflated)
        except DiagnoseError as exc:
            self._post(client, channel, thread_ts, {"text": f"diagnose: {exc}"})
            return
        earlier = self.store.recent(channel, answer.failure, self.settings.dedupe_s)
        if earlier and earlier.thread_ts != thread_ts and earlier.permalink:
            ago = f"{(time.time() - earlier.created) / 3600:.0f} h ago" if time.time() - earlier.created > 3600 else "within the hour"
            self._post(client, channel, thread_ts, answers.repeat_message(earlier.permalink, earlier.top_title or "", ago))
            return
        self._keep(answer, answer_id, channel, thread_ts)  # before the buttons can be pressed
        posted = self._post(client, channel, thread_ts, answer.message)
        top = answer.diagnosis.findings[0] if answer.diagnosis.findings else None
        client.files_upload_v2(channel=channel, thread_ts=thread_ts, content=answer.postmortem,
                               filename=f"post-mortem-{top.rule_id if top else 'unknown'}.md",
                               title=f"Post-mortem: {top.title if top else 'no known failure'}")
        self.store.set_permalink(answer_id, client.chat_getPermalink(channel=channel, message_ts=posted["ts"]).get("permalink"))

    def command(self, text: str, channel: str, respond: Any) -> None:
        """The slash command's text, answered through its response_url."""
        answer_id = uuid.uuid4().hex[:12]
        try:
            answer = answers.diagnose([("slack", text.encode())], self.kb, [], answer_id, self.settings.max_inflated)
        except DiagnoseError as exc:
            respond(response_type="ephemeral", text=f"diagnose: {exc}")
            return
        self._keep(answer, answer_id, channel, "")
        respond(response_type="in_channel", replace_original=False, **answer.message)

    def feedback(self, answer_value: str, user: str, respond: Any, rule: str | None = None) -> None:
        answer_id, _, actual = answer_value.partition("|") if rule is None else (answer_value, "", rule)
        verdict = "right" if not actual else "wrong"
        if not self.store.feedback(answer_id, user, verdict, actual or None):
            respond(response_type="ephemeral", replace_original=False, text="diagnose: that answer is not in this app's store")
            return
        said = "the right cause" if verdict == "right" else (
            "wrong, and none of the candidates" if actual == answers.NONE_OF_THESE else f"wrong: it was `{actual}`")
        respond(response_type="ephemeral", replace_original=False, text=f"Thanks: recorded as {said}.")

    def _keep(self, answer: answers.Answer, answer_id: str, channel: str, thread_ts: str) -> None:
        d = answer.diagnosis
        excerpt = "\n".join(e.text for f in d.findings[:1] for e in f.evidence) or "\n".join(e.text for e in d.unmatched_errors)
        self.store.add(Stored(answer_id, channel, thread_ts, None, answer.failure,
                              d.findings[0].rule_id if d.findings else None, d.findings[0].title if d.findings else None,
                              [[f.rule_id, f.title] for f in d.findings], answer.evidence, excerpt, time.time()))

    def _react(self, client: Any, channel: str, ts: str) -> None:
        try:
            client.reactions_add(channel=channel, timestamp=ts, name=self.settings.ack_reaction)
        except SlackApiError as exc:  # already_reacted, or a message it may not react to: not worth failing
            log.info("reaction not added: %s", exc.response.get("error"))

    def _replies(self, client: Any, channel: str, ts: str) -> list[dict[str, Any]]:
        messages: list[dict[str, Any]] = []
        cursor = None
        for _ in range(MAX_PAGES):
            page = client.conversations_replies(channel=channel, ts=ts, limit=200, cursor=cursor)
            messages += page.get("messages") or []
            cursor = (page.get("response_metadata") or {}).get("next_cursor")
            if not cursor:
                break
        return messages

    def _post(self, client: Any, channel: str, thread_ts: str, message: dict[str, Any]) -> Any:
        return client.chat_postMessage(channel=channel, thread_ts=thread_ts, unfurl_links=False, **message)
