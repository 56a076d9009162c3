"""Credentials never reach a message, a repr or a log line.

``redact(url)`` masks the password of one URL; ``redact_text(text)`` masks every
``scheme://user:password@`` it finds in free text (an error message that quotes a URL,
a driver message). Every ``PowerContextError`` passes its message through
``redact_text``, so a URL quoted anywhere in the library is masked even if the code
that quoted it forgot to.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit, urlunsplit

MASK = "***"

# scheme://user:password@ — the password runs up to the last '@' before the host part
# (passwords may contain '@' when not percent-encoded; hosts never do).
_CREDENTIALS = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.\-]*://[^:/@\s'\"\[\]]*:)(?P<secret>[^\s'\"/]*)@(?=[^@\s'\"]*(?:[/\s'\"]|$))")


def redact(target: str) -> str:
    """``target`` with its password replaced by ``***`` (anything else unchanged)."""
    if not isinstance(target, str) or "@" not in target:
        return target
    try:
        parts = urlsplit(target)
        password = parts.password
    except ValueError:
        return redact_text(target)
    if password is None:
        return target
    user = parts.username or ""
    host = parts.netloc.rsplit("@", 1)[1]
    return urlunsplit(parts._replace(netloc=f"{user}:{MASK}@{host}"))


def redact_text(text: str) -> str:
    """``text`` with every ``scheme://user:password@`` masked."""
    if not isinstance(text, str) or "://" not in text:
        return text
    return _CREDENTIALS.sub(lambda m: f"{m.group('head')}{MASK}@", text)
