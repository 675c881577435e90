"""iolab.wrk_lua: the Lua scripts it writes for wrk, and the check.

iolab.wrk_lua: the pipelining scripts it writes for wrk, and the order check it reads back (wrk
itself runs in test_pipeline_app).
"""

import pytest

from iolab import wrk_lua


def test_lua_string_escapes_what_lua_would_misread():
    assert wrk_lua.lua_string('say "hi"\\\n') == '"say \\"hi\\"\\\\\\n"'


def test_the_script_sends_every_path_in_one_batch():
    script = wrk_lua.pipeline_script(["/", "/cpu?ms=1"])
    assert 'local paths = {"/", "/cpu?ms=1"}' in script
    assert "request = function() return pipelined end" in script
    assert "response" not in script  # no check asked for: wrk need not keep the bodies


def test_the_order_check_compares_each_body_with_its_place():
    script = wrk_lua.pipeline_script(["/", "/missing"], ["hello world\n", "404 no route for /missing\n"])
    assert 'local expected = {"hello world\\n", "404 no route for /missing\\n"}' in script
    assert "position = position % #expected + 1" in script


def test_bad_arguments_are_refused_by_name():
    with pytest.raises(ValueError, match="paths"):
        wrk_lua.pipeline_script([])
    with pytest.raises(ValueError, match="expected_bodies"):
        wrk_lua.pipeline_script(["/"], ["a", "b"])
    with pytest.raises(ValueError, match="one connection per wrk thread"):
        wrk_lua.run_pipelined("http://127.0.0.1:1/", ["/"], 4, 1, script_path="/dev/null", expected_bodies=["x"],
                              threads=1)
    with pytest.raises(ValueError, match="loopback"):
        wrk_lua.run_pipelined("http://10.0.0.1:1/", ["/"], 1, 1, script_path="/dev/null")


def test_parse_order_reads_the_line_the_script_prints():
    assert wrk_lua.parse_order("Requests/sec: 5\nORDER checked 320 wrong 2\n") == (320, 2)
    assert wrk_lua.parse_order("Requests/sec: 5\n") is None
