"""pipeline_app with a batch path: a read's requests recognised at once, answered in one write.

Lesson 08's last rung. pipeline_app runs Python for every request: a parser
callback, a request object, a route, an answer queued. Here a read made only of
the one request a benchmark repeats (GET / or GET /?seq=N, with its Host header
and nothing else) costs a few calls into C, however many requests it holds:

  1. recognise() finds how far whole recognised requests tile the read, one
     right after the other from its first byte, nothing skipped between, and
     takes each request's number: one compiled pattern (or, for a read of one
     request repeated, one split) does it in C;
  2. answers() joins every answer, each echoing its request's number, and one
     transport.write sends them all.

Anything else (another route, another header, a broken request) goes to
pipeline_app's full path in its place in line, so every route, error answer and
limit of pipeline_app holds here too. The pattern and the answers are in
pipeline/batch.py.

    --loop asyncio|uvloop           the event loop
    --parser ours|httptools         the full parser, for whatever the pattern does not recognise
    --max-waiting N                 requests that may wait at once on one connection (the full path's /async-sleep)
"""

from iolab.contract import parse_args
from pipeline.batch import FULL_PARSERS, answers, recognise
from pipeline.parsers import MAX_HEAD_BYTES
from pipeline_app import PipelinedHTTP, Settings, add_common_arguments, run


class BatchHTTP(PipelinedHTTP):
    """pipeline_app's connection, with a batch path in front of its parser for the reads it recognises whole."""

    def __init__(self, settings):
        super().__init__(settings)
        self.unread = b""  # the start of a request that the end of a read cut off
        self.recognised = 0  # requests the batch path answered, which the full parser never counted

    def data_received(self, data):
        if self.unread:
            data, self.unread = self.unread + data, b""
        if not self.between_requests():
            super().data_received(data)  # the full path is in the middle of something: it keeps the order
            return
        end, numbers = recognise(data)  # whole recognised requests, back to back from the first byte
        if end:
            self.ready.append(answers(numbers))
            self.recognised += len(numbers)
        rest = data[end:]
        if b"\r\n\r\n" in rest or len(rest) > MAX_HEAD_BYTES:
            super().data_received(rest)  # a whole request the pattern does not know: the full path, after these
            return
        self.unread = rest  # nothing, or the start of the next request: wait for the rest of it
        self.write_ready()

    def request_progress(self):
        """The slow-request check's reading (pipeline/hardening.py), with the batch path's requests and `unread` in it."""
        # A slowloris's head, sent a byte at a time, stays in `unread` and never reaches the parser: without this it
        # would hold its connection for ever, where the full path answers it 408.
        completed, pending = super().request_progress()
        return completed + self.recognised, pending or bool(self.unread)

    def between_requests(self):
        """True when an answer of the batch path may go straight out: nothing in line, the full parser holding nothing."""
        return not (self.blocked or self.held or self.closing or self.peer_done) and self.parser.idle


def main():
    args = parse_args(__doc__.splitlines()[0], add_common_arguments)
    run(args, Settings(FULL_PARSERS[args.parser], True, args.max_waiting), BatchHTTP)


if __name__ == "__main__":
    main()
