"""iolab.http1, the client's side of HTTP/1.1.

Requests as bytes, answers cut apart on a socket and in a protocol.
"""

import socket

import pytest

from iolab import http1


def test_a_request_for_a_url_or_a_bare_path():
    assert http1.get_request("http://127.0.0.1:8000/cpu?ms=5") == b"GET /cpu?ms=5 HTTP/1.1\r\nHost: 127.0.0.1:8000\r\n\r\n"
    assert http1.get_request("/", keep_alive=False) == b"GET / HTTP/1.1\r\nHost: lab\r\nConnection: close\r\n\r\n"
    assert http1.get_request("http://127.0.0.1:8000/", path="/x") == b"GET /x HTTP/1.1\r\nHost: 127.0.0.1:8000\r\n\r\n"


ANSWER = b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\nConnection: close\r\n\r\nhello"


def test_answer_length_waits_for_the_whole_body():
    assert http1.answer_length(ANSWER[:-1]) == 0
    assert http1.answer_length(ANSWER + b"HTTP/1.1") == len(ANSWER)
    assert http1.answer_length(ANSWER + ANSWER, start=len(ANSWER)) == len(ANSWER)
    assert http1.closes(ANSWER, 0, ANSWER.find(http1.HEADER_END))
    with pytest.raises(http1.ProtocolError, match="without Content-Length"):
        http1.answer_length(b"HTTP/1.1 200 OK\r\n\r\n")


def test_the_socket_reader_keeps_the_next_answers_bytes():
    ours, theirs = socket.socketpair()
    with ours, theirs:
        theirs.sendall(ANSWER + ANSWER[:10])
        reader = http1.AnswerReader(ours)
        assert reader.read() == (200, {"content-length": "5", "connection": "close"}, "hello")
        theirs.sendall(ANSWER[10:])
        assert reader.body() == "hello"
        theirs.close()
        assert reader.closed_by_server(wait_s=1.0)


class Answers:
    """An owner for http1.AnswerProtocol that keeps what it is handed."""

    def __init__(self):
        self.answers, self.errors = [], []

    def answered(self, status, length, closes, body):
        self.answers.append((status, length, closes, body))

    def broken(self, error):
        self.errors.append(str(error))


@pytest.mark.parametrize(
    "raw, expected",
    [
        (b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", (200, 5, False)),
        (b"HTTP/1.1 404 Not Found\r\ncontent-length: 3\r\nconnection: close\r\n\r\nno\n", (404, 3, True)),
        (b"HTTP/1.1 200 OK\r\nConnection: Close\r\nContent-Length: 0\r\n\r\n", (200, 0, True)),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-Note: not closed\r\n\r\nok", (200, 2, False)),
        (b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok", (200, 2, True)),
        (b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\r\nok", (200, 2, False)),
    ],
)
def test_answers_are_cut_by_content_length_however_they_are_spelled(raw, expected):
    owner = Answers()
    reader = http1.BodyKeepingProtocol(owner)
    # Byte by byte, then two at once: an answer split anywhere, or sharing a read with the next, reads the same.
    for i in range(len(raw)):
        reader.data_received(raw[i : i + 1])
    reader.data_received(raw + raw)
    assert not owner.errors
    assert [answer[:3] for answer in owner.answers] == [expected] * 3
    assert owner.answers[0][3] == raw[len(raw) - expected[1]:]


def test_a_read_like_the_last_reads_the_same_and_any_other_is_cut_afresh():
    # The hot path remembers the last read that held one whole answer: the same bytes again are that answer again.
    first = b"HTTP/1.1 200 OK\r\nDate: Fri, 27 Nov 2026 09:00:00 GMT\r\nContent-Length: 2\r\n\r\nok"
    ticked = first.replace(b":00 GMT", b":01 GMT")
    closing = first.replace(b"\r\n\r\n", b"\r\nConnection: close\r\n\r\n")
    other = b"HTTP/1.1 404 Not Found\r\nContent-Length: 3\r\n\r\nno\n"
    owner = Answers()
    reader = http1.BodyKeepingProtocol(owner)
    for raw in (first, first, ticked, first, closing, other, other, first[:30], first[30:], first, first + first):
        reader.data_received(raw)
    ok, ok_closing, not_found = (200, 2, False, b"ok"), (200, 2, True, b"ok"), (404, 3, False, b"no\n")
    assert not owner.errors
    assert owner.answers == [ok, ok, ok, ok, ok_closing, not_found, not_found, ok, ok, ok, ok]
    # Only a whole answer is remembered: the tail of one, arriving alone, is not taken for an answer.
    owner = Answers()
    reader = http1.AnswerProtocol(owner)
    for raw in (first, first[:30], first[30:], first[30:]):
        reader.data_received(raw)
    assert len(owner.answers) == 2 and "does not start with HTTP/1.x" in owner.errors[0]


@pytest.mark.parametrize(
    "raw, words",
    [
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", "without Content-Length"),
        (b"SSH-2.0-OpenSSH\r\nContent-Length: 0\r\n\r\n", "does not start with HTTP/1.x"),
    ],
)
def test_what_is_not_an_answer_is_reported(raw, words):
    owner = Answers()
    http1.AnswerProtocol(owner).data_received(raw)
    assert owner.answers == [] and words in owner.errors[0]
