"""Closed loop with requests.

One thread per user, each with its own Session (a Session is not thread-safe).
"""

import threading
import time
import weakref
from typing import Any

from .errors import error_kind
from .recorder import FLUSH_EVERY_S, Recorder
from .shares import Share
from .wire import NO_ERROR


def run(spec: dict[str, Any], share: Share, recorder: Recorder) -> None:
    import requests  # here, not at the top: only this client needs it

    headers = {} if spec["keep_alive"] else {"Connection": "close"}
    lock = threading.Lock()  # guards the shared count of requests and the in-flight count
    issued = 0
    # urllib3 may reconnect under the same connection object; the socket names a connection.
    numbers: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()

    def may_send() -> bool:
        nonlocal issued
        with lock:
            if issued >= share["requests"] or recorder.now() >= spec["max_duration_s"]:
                return False
            issued += 1
            recorder.in_flight += 1
            return True

    def connection_number(response: requests.Response) -> int:
        sock = getattr(getattr(response.raw, "connection", None), "sock", None)
        if sock is None:
            # An answer with "Connection: close" takes the socket over from its connection (http.client does so);
            # it is still under the answer's file object. Private names, so looked up with care.
            file = getattr(getattr(response.raw, "_fp", None), "fp", None)
            sock = getattr(getattr(file, "raw", None), "_sock", None)
        if sock is None:
            return -1
        with lock:
            number = numbers.get(sock)
            if number is None:
                number = numbers[sock] = recorder.new_connection()
        return number

    def user(number: int) -> None:
        with requests.Session() as session:
            while may_send():
                start = recorder.now()
                connection = -1
                try:
                    # stream=True leaves the connection attached until the body is read, so it can be named.
                    response = session.get(spec["url"], headers=headers, timeout=spec["timeout_s"], stream=True)
                    connection = connection_number(response)
                    size = len(response.content)
                    recorder.add((start, start, recorder.now(), response.status_code, size, NO_ERROR, number, connection))
                except requests.RequestException as error:
                    code = recorder.error_code(error_kind(error))
                    recorder.add((start, start, recorder.now(), 0, 0, code, number, connection))
                with lock:
                    recorder.in_flight -= 1

    users = [threading.Thread(target=user, args=(n,), daemon=True) for n in share["users"]]
    recorder.wait_for_go()
    for thread in users:
        thread.start()
    while any(thread.is_alive() for thread in users):
        time.sleep(FLUSH_EVERY_S)
        recorder.flush()
