"""Closed loop with aiohttp.

`concurrency` users on one event loop, each sending its next request when the last one answers.
"""

import asyncio
import weakref
from typing import Any

from .errors import error_kind
from .recorder import Recorder
from .shares import Share
from .wire import NO_ERROR


async def run(spec: dict[str, Any], share: Share, recorder: Recorder) -> None:
    import aiohttp  # here, not at the top: it takes most of a second to import, and only this client needs it

    connector = aiohttp.TCPConnector(limit=0, force_close=not spec["keep_alive"])
    timeout = aiohttp.ClientTimeout(total=spec["timeout_s"])
    url = spec["url"]
    issued = 0
    # aiohttp pools connections across users; each connection's protocol object names it.
    numbers: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()

    def connection_number(response: aiohttp.ClientResponse) -> int:
        # A short answer is read whole before `async with` returns, and response.connection is None by then;
        # the response keeps the protocol it was read from (a private name, so looked up with care).
        protocol = getattr(response, "_protocol", None)  # not `or`: an empty protocol is falsy (it has a __len__)
        if protocol is None and response.connection is not None:
            protocol = response.connection.protocol
        if protocol is None:
            return -1
        number = numbers.get(protocol)
        if number is None:
            number = numbers[protocol] = recorder.new_connection()
        return number

    think_s = spec.get("think_s", 0.0)

    async def user(number: int, index: int) -> None:
        nonlocal issued
        if think_s:
            await asyncio.sleep(think_s * index / len(share["users"]))  # spread over one think time
        while issued < share["requests"] and recorder.now() < spec["max_duration_s"]:
            issued += 1
            recorder.in_flight += 1
            start = recorder.now()
            connection = -1
            try:
                async with session.get(url) as response:
                    connection = connection_number(response)
                    body = await response.read()
                recorder.add((start, start, recorder.now(), response.status, len(body), NO_ERROR, number, connection))
            except (TimeoutError, aiohttp.ClientError, OSError) as error:
                code = recorder.error_code(error_kind(error))
                recorder.add((start, start, recorder.now(), 0, 0, code, number, connection))
            recorder.in_flight -= 1
            if think_s:
                await asyncio.sleep(think_s)

    async with aiohttp.ClientSession(connector=connector, timeout=timeout, auto_decompress=False) as session:
        await recorder.wait_for_go_async()  # after the session: creating it can take a quarter of a second
        flusher = asyncio.create_task(recorder.flush_periodically())
        await asyncio.gather(*(user(n, i) for i, n in enumerate(share["users"])))
        flusher.cancel()
