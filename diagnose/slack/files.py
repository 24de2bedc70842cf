"""The files shared in a thread, downloaded with the bot token within chat-sized limits.

Newest first, within a total budget; a text file over the per-file limit is read from its head and
its tail (HTTP Range), and the gap says so in the text itself; a compressed file or bundle over the
limit cannot be read in part and is skipped with a note. Only Slack's own file host (or the API
host the app was given) ever sees the token.
"""

from __future__ import annotations

import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from typing import Any

from diagnose.slack.settings import SlackSettings

COMPRESSED = (".gz", ".tgz", ".xz", ".bz2", ".zip", ".zst", ".tar")
SLACK_FILE_HOSTS = ("files.slack.com", "files-origin.slack.com", "slack-files.com")
TIMEOUT_S = 30.0


@dataclass
class Gathered:
    artifacts: list[tuple[str, bytes]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what was cut or left, for the reply's context line


def gather(client: Any, files: list[dict[str, Any]], settings: SlackSettings) -> Gathered:
    out = Gathered()
    budget = settings.max_total
    newest_first = sorted(files, key=lambda f: float(f.get("created") or 0), reverse=True)
    for n, info in enumerate(newest_first):
        if n >= settings.max_files:
            out.notes.append(f"{len(newest_first) - n} older file(s) not read (at most {settings.max_files})")
            break
        if info.get("file_access") == "check_file_info" or not info.get("url_private"):
            info = client.files_info(file=info["id"])["file"]
        name = info.get("name") or info.get("id", "file")
        if (info.get("mimetype") or "").startswith(("image/", "video/", "audio/")):
            out.notes.append(f"{name}: not a log ({info.get('mimetype')})")
            continue
        size = int(info.get("size") or 0)
        limit = min(settings.max_file, budget)
        if limit <= 0:
            out.notes.append(f"{name} and older: not read (the thread's {_mib(settings.max_total)} budget is spent)")
            break
        url = info.get("url_private_download") or info.get("url_private") or ""
        if not _trusted(url, settings.api_url):
            out.notes.append(f"{name}: not downloaded (not on Slack's file host)")
            continue
        if size > limit and name.lower().endswith(COMPRESSED):
            out.notes.append(f"{name}: {_mib(size)} compressed, over the {_mib(limit)} limit: not read")
            continue
        data = _head_and_tail(url, settings.bot_token, size, limit) if size > limit else _get(url, settings.bot_token)
        if size > limit:
            out.notes.append(f"{name}: {_mib(size)}, read its first and last {_mib(limit // 2)}")
        budget -= len(data)
        out.artifacts.append((name, data))
    return out


def _head_and_tail(url: str, token: str, size: int, limit: int) -> bytes:
    half = limit // 2
    head = _get(url, token, f"bytes=0-{half - 1}", half)
    tail = _get(url, token, f"bytes=-{half}", half, tail=True)
    head = head[: head.rfind(b"\n") + 1] or head  # whole lines on both sides of the gap
    tail = tail[tail.find(b"\n") + 1 :] or tail
    gap = size - len(head) - len(tail)
    note = f"[diagnose: {gap} bytes from the middle of this {size}-byte file not read (chat size limit)]\n"
    return head + note.encode() + tail


def _get(url: str, token: str, byte_range: str | None = None, keep: int | None = None, tail: bool = False) -> bytes:
    headers = {"Authorization": f"Bearer {token}"}
    if byte_range:
        headers["Range"] = byte_range
    with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=TIMEOUT_S) as resp:  # noqa: S310
        if keep is None or resp.status == 206:
            return bytes(resp.read())
        if not tail:  # a server that ignores Range: read what is kept, no more
            return bytes(resp.read(keep))
        window = bytearray()
        while chunk := resp.read(1 << 20):
            window += chunk
            del window[: max(len(window) - keep, 0)]
        return bytes(window)


def _trusted(url: str, api_url: str) -> bool:
    host = (urllib.parse.urlsplit(url).hostname or "").lower()
    scheme = urllib.parse.urlsplit(url).scheme
    return (scheme == "https" and host in SLACK_FILE_HOSTS) or host == urllib.parse.urlsplit(api_url).hostname


def _mib(n: int) -> str:
    return f"{n / (1 << 20):.1f} MiB" if n >= 1 << 20 else f"{n / 1024:.1f} KiB"
