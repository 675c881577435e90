"""The load clients behind iolab.load, one module per kind.

Each kind runs inside a client process of its own; a module is on one side of
that process's pipe, or is shared by both (adding a kind: README.md).

In the client process (python -m iolab.clients.process, or .holder):
process                                 a client process: its share of the run, the start signal, the report
recorder                                the process's clock, its rows of finished requests, its frames to the parent
closed_async, closed_raw, closed_sync   closed loop: each user sends when its last answer is in
open_loop                               open loop: requests leave on a schedule, whatever the answers do
pipelined                               several requests in flight on each connection
batch                                   numbered pipelined batches, counted, not kept (lesson 08)
library                                 calls through one HTTP library at its default limits (lesson 11)
subscribers                             long-lived subscribers of one transport, a row per message (lesson 12)
holder                                  subscribers held open, answering the parent over a pipe (lesson 12)
raw_connection                          one raw keep-alive connection: connect, broken, lost (the raw clients)
errors                                  short, stable names for what went wrong with a request

In the process that drives a run (iolab.load, a lesson, a test):
aggregate                               counts per time bin and latency histograms, for very large runs
held_subscribers                        Held: starts a holder and asks it over the pipe
push_routes                             a push server's /stats and /publish, asked while subscribers run

On both sides:
kinds                                   every kind: its module, loop and options, checked when made
wire                                    the row of one request and the frames that carry rows to the parent
event_loops                             the one place a client picks its event loop (uvloop or asyncio)
shares                                  how a run's users and requests are split between its processes
"""
