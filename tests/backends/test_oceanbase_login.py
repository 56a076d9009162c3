"""A refused login says the credentials were refused (issue 45: a wrong password was
told to start a server that was running), and never shows the password."""

from urllib.parse import urlsplit

import pytest

import powercontext as pc
from powercontext.backends.seekdb.urls import database_url


async def test_a_wrong_password_is_told_as_refused_credentials_not_a_missing_server(oceanbase_url):
    parts = urlsplit(oceanbase_url)
    assert parts.password
    wrong = database_url(oceanbase_url.replace(f":{parts.password}@", ":Not-The-Password-7@"), "pc_login_check")
    with pytest.raises(pc.BackendUnavailableError) as refused:
        await pc.open(wrong)
    message = str(refused.value)
    assert f"refused the credentials of {parts.username!r}" in message and "check the URL's user and password" in message
    assert "Start one" not in message and "Not-The-Password-7" not in message and parts.password not in message
    # the server is running: a server that is not there still gets the advice to start one
    with pytest.raises(pc.BackendUnavailableError, match="Start one with"):
        await pc.open(database_url(oceanbase_url.replace(f":{parts.port}", ":1"), "pc_login_check"))
