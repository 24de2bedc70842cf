"""The local store of answers and what people said about them (SQLite, one file).

Each answer is kept with its failure fingerprint, its evidence fingerprints, its candidates and its
redacted evidence lines, so that a repeat in the channel is recognised and a wrong answer can become a
draft fixture (export.py). One connection per call: Bolt runs listeners on several threads.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

SCHEMA = """
CREATE TABLE IF NOT EXISTS answers (
  id TEXT PRIMARY KEY, channel TEXT NOT NULL, thread_ts TEXT NOT NULL, permalink TEXT,
  failure TEXT NOT NULL, top_rule TEXT, top_title TEXT, candidates TEXT NOT NULL,
  evidence TEXT NOT NULL, excerpt TEXT NOT NULL, created REAL NOT NULL);
CREATE INDEX IF NOT EXISTS answers_failure ON answers (channel, failure, created);
CREATE TABLE IF NOT EXISTS feedback (
  answer_id TEXT NOT NULL REFERENCES answers(id), user TEXT NOT NULL, verdict TEXT NOT NULL,
  actual TEXT, created REAL NOT NULL, PRIMARY KEY (answer_id, user));
"""


@dataclass
class Stored:
    id: str
    channel: str
    thread_ts: str
    permalink: str | None
    failure: str
    top_rule: str | None
    top_title: str | None
    candidates: list[list[str]]  # [rule_id, title], in rank order
    evidence: list[str]
    excerpt: str
    created: float


@dataclass
class Verdict:
    answer: Stored
    user: str
    verdict: str  # "right" | "wrong"
    actual: str | None  # for "wrong": the rule id a person picked, or "none"


class Store:
    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        with self._db() as db:
            db.executescript(SCHEMA)

    @contextmanager
    def _db(self) -> Iterator[sqlite3.Connection]:
        db = sqlite3.connect(self.path, timeout=10)
        try:
            with db:
                yield db
        finally:
            db.close()

    def add(self, a: Stored) -> None:
        with self._db() as db:
            db.execute("INSERT OR REPLACE INTO answers VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                       (a.id, a.channel, a.thread_ts, a.permalink, a.failure, a.top_rule, a.top_title,
                        json.dumps(a.candidates), json.dumps(a.evidence), a.excerpt, a.created))

    def set_permalink(self, answer_id: str, permalink: str | None) -> None:
        with self._db() as db:
            db.execute("UPDATE answers SET permalink=? WHERE id=?", (permalink, answer_id))

    def recent(self, channel: str, failure: str, within_s: float, now: float | None = None) -> Stored | None:
        """The latest answer to this failure in this channel within `within_s`."""
        since = (now or time.time()) - within_s
        with self._db() as db:
            row = db.execute("SELECT * FROM answers WHERE channel=? AND failure=? AND created>=? "
                             "ORDER BY created DESC LIMIT 1", (channel, failure, since)).fetchone()
        return _stored(row) if row else None

    def get(self, answer_id: str) -> Stored | None:
        with self._db() as db:
            row = db.execute("SELECT * FROM answers WHERE id=?", (answer_id,)).fetchone()
        return _stored(row) if row else None

    def feedback(self, answer_id: str, user: str, verdict: str, actual: str | None = None) -> bool:
        """A person's verdict on an answer (their latest counts); False for an answer this store never gave."""
        if self.get(answer_id) is None:
            return False
        with self._db() as db:
            db.execute("INSERT OR REPLACE INTO feedback VALUES (?,?,?,?,?)",
                       (answer_id, user, verdict, actual, time.time()))
        return True

    def verdicts(self, verdict: str | None = None) -> list[Verdict]:
        query = "SELECT a.*, f.user, f.verdict, f.actual FROM feedback f JOIN answers a ON a.id = f.answer_id"
        with self._db() as db:
            rows = db.execute(query + (" WHERE f.verdict=?" if verdict else "") + " ORDER BY f.created",
                              (verdict,) if verdict else ()).fetchall()
        return [Verdict(_stored(r[:11]), r[11], r[12], r[13]) for r in rows]


def _stored(row: tuple) -> Stored:  # type: ignore[type-arg]
    values = list(row)
    values[7], values[8] = json.loads(values[7]), json.loads(values[8])
    return Stored(*values)
