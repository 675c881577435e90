"""The load clients behind iolab.load, one module per kind.

Each runs inside a client process of its own.

kinds                                   every kind: its module, loop and options (adding one: README.md)
closed_async, closed_raw, closed_sync   closed loop: each user sends when its last answer is in
open_loop                               open loop: requests leave on a schedule, whatever the answers do
pipelined                               several requests in flight on each connection
raw_connection                          one raw keep-alive connection: connect, broken, lost (the three raw clients)
process                                 a client process: its share of the run, the start signal, the report
wire                                    the row of one request and the frames that carry rows to the parent
aggregate                               counts per time bin and latency histograms, for very large runs
batch                                   numbered pipelined batches, counted; batch.run adds up the totals
"""
