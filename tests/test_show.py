"""show: a server's handlers shown from the file that runs."""

import pytest

from iolab import show


def test_server_source_shows_named_handlers_from_the_running_file():
    code = show.server_source("tornado_app", "SyncSleep", "AsyncSleep").data
    assert "time.sleep" in code and "await asyncio.sleep" in code and "class Instant" not in code
    with pytest.raises(ValueError, match="no top-level"):
        show.server_source("tornado_app", "NoSuchHandler")
