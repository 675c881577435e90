"""The slow backend of lesson 10: a Celery app on the lab's Redis.

One task waits N ms and one burns N ms of CPU.
"""

import os
import time

from celery import Celery, signals

from iolab.contract import burn_cpu

BROKER_ENV = "IOLAB_BROKER_URL"  # the Redis URL, for the worker (set by celery_worker.py) and the front ends
READY_FD_ENV = "IOLAB_WORKER_READY_FD"  # where the worker writes one byte once it consumes
QUEUE = "celery"  # Celery's default queue: a Redis list of that name, so LLEN celery is the backlog
WAIT_TASK = "backend.wait"
CPU_TASK = "backend.cpu"

app = Celery("backend_tasks")


def configure(broker_url):
    """Point the app at the lab's Redis, as broker and as result store, with every wait bounded."""
    app.conf.update(
        broker_url=broker_url,
        result_backend=broker_url,
        # Each worker process reserves one task per slot of its pool and no more, and a task is
        # acknowledged only when it is done: the rest stay in the broker's list, where LLEN counts them.
        worker_prefetch_multiplier=1,
        task_acks_late=True,
        result_expires=600,  # results of waits nobody collected leave Redis after ten minutes, not a day
        # A broker that is gone must fail a call quickly, never hang it.
        broker_connection_timeout=1.0,
        broker_connection_retry_on_startup=False,
        broker_transport_options={"socket_timeout": 5.0, "socket_connect_timeout": 1.0},
        task_publish_retry=False,
        redis_socket_connect_timeout=1.0,
        redis_socket_timeout=5.0,
        redis_retry_on_timeout=False,
        result_backend_transport_options={"retry_policy": {"max_retries": 0}},
        worker_hijack_root_logger=False,
        worker_redirect_stdouts=False,  # the worker's stdout is the wrapper's stderr already
    )


configure(os.environ.get(BROKER_ENV, "redis://127.0.0.1:6379/0"))


@app.task(name=WAIT_TASK)
def wait(ms):
    """A slow API or database: the worker's slot is held for ms, its CPU idle."""
    time.sleep(ms / 1000)
    return ms


@app.task(name=CPU_TASK)
def cpu(ms):
    """Work that needs the worker's CPU for ms."""
    burn_cpu(ms)
    return ms


ACK_WAKE_S = 0.005  # see wake_the_consumer


@signals.worker_ready.connect
def say_ready(sender=None, **_):
    wake_the_consumer(sender)
    # celery_worker.py announces LISTENING only after this byte: the worker is consuming from the queue.
    fd = os.environ.get(READY_FD_ENV)
    if fd:
        try:
            os.write(int(fd), b"+")
        except OSError:
            pass


def wake_the_consumer(consumer):
    """Celery's thread pool acknowledges a finished task only when the consumer's loop next wakes up.

    With every slot busy (prefetch 1) nothing else wakes that loop, so the next
    task waited seconds (celery/celery#6941, open). A timer that does nothing,
    every ACK_WAKE_S, bounds that wait; the workaround is the issue's own.
    """
    if consumer is not None and type(consumer.pool).__module__.endswith(".thread"):
        consumer.timer.call_repeatedly(ACK_WAKE_S, lambda: None)
