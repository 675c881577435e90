"""The batch path's parts beside its teaching file.

The pattern of the one request it knows, the answers, and full parsers that say when they are between requests.
"""

import re

from pipeline.answers import MAX_SEQ_DIGITS, clock
from pipeline.parsers import HttptoolsParser, OurParser

# The one request the batch path knows: GET / or GET /?seq=N, HTTP/1.1, its one Host header (printable, no spaces),
# nothing else. HTTP/1.1 demands the Host header, so a request without one is the full parser's to refuse (400).
# Any other header (Connection, Content-Length, Transfer-Encoding...) could change what the request means, so a
# request with one goes to the full parser too.
_REQUEST = rb"GET /(?:\?seq=([0-9]{1,%d}))? HTTP/1\.1\r\nHost: [!-~]{1,255}\r\n\r\n" % MAX_SEQ_DIGITS
# As many whole requests as follow one another from the first byte, possessively (no backtracking: the request
# has one way to match). match() of it ends where the first byte that is not one of them starts.
RECOGNISED = re.compile(b"(?:" + _REQUEST.replace(b"([0-9]", b"(?:[0-9]") + b")*+")
# The same request with its number captured: findall over the recognised bytes gives each request's number
# (b"" when it has none), in order. The request matches only one way, so findall cuts the bytes exactly where
# RECOGNISED did.
NUMBERS = re.compile(_REQUEST)


def recognise(data):
    """(end, numbers): how far whole recognised requests tile `data` from its first byte, and their numbers in order.

    The usual read of a benchmark is one request many times over, numbered: then, once the first is checked by the
    pattern, splitting the rest at what lies between two numbers must leave nothing but numbers, and when it does
    the read is those requests back to back, byte for byte. One split in C instead of two passes of the pattern.
    """
    first = NUMBERS.match(data)
    if first is not None and first.start(1) >= 0:
        before, after = data[: first.start(1)], data[first.end(1) : first.end()]
        if data.endswith(after):
            numbers = data[len(before) : len(data) - len(after)].split(after + before)
            # Every piece 1 to 16 digits: nothing else, and nothing skipped, between the requests.
            if b"".join(numbers).isdigit() and b"" not in numbers and max(map(len, numbers)) <= MAX_SEQ_DIGITS:
                return len(data), numbers
    end = RECOGNISED.match(data).end()
    return end, NUMBERS.findall(data, 0, end)


def answers(numbers):
    """The answers to recognised requests, in order, as one bytes object: hello world, echoing each request's number."""
    before, after = clock.numbered_before, clock.numbered_after
    if b"" not in numbers:  # every request numbered: a checking client's batch, joined in C
        return before + (after + before).join(numbers) + after
    if not any(numbers):  # none numbered: wrk's batch
        return clock.hello * len(numbers)
    return b"".join(before + number + after if number else clock.hello for number in numbers)


class OursBetweenRequests(OurParser):
    """Our parser, saying whether it holds the start of a request: the batch path may read only when it does not."""

    @property
    def idle(self):
        return not self.unparsed and not self.broken


class HttptoolsBetweenRequests(HttptoolsParser):
    """httptools, saying whether llhttp is inside a request: told by the callbacks for a request's start and end."""

    idle = True

    def on_message_begin(self):
        self.idle = False

    def on_message_complete(self):
        self.idle = True
        super().on_message_complete()


FULL_PARSERS = {"ours": OursBetweenRequests, "httptools": HttptoolsBetweenRequests}
