"""Section 2: tasks nobody keeps, collected while they wait.

Tasks nobody keeps a reference to, run in a child process of its own.
The loop keeps only weak references to its tasks. A task waiting on a future that nothing else holds is then
garbage, with its future, and a collection destroys it mid-flight. This module runs each way in a fresh process
(`python -m iolab.lessons.service.lost_tasks N`), so the notebook's own loop and its output are left alone.
"""

import asyncio
import gc
import json
import sys

from iolab.children import python, run

DESTROYED = "Task was destroyed but it is pending!"  # what asyncio logs when it collects a pending task


async def wait_forever():
    """Await a future that only this coroutine holds: nothing will ever set it."""
    await asyncio.get_running_loop().create_future()


async def fire_and_forget(n):
    """n tasks started and not kept."""
    for _ in range(n):
        asyncio.create_task(wait_forever())
    await asyncio.sleep(0)  # each task runs up to its await
    gc.collect()
    return len(asyncio.all_tasks()) - 1  # the tasks still alive, less this coroutine's own


async def kept_in_a_set(n):
    """n tasks kept in a set until each is done: the usual fix."""
    tasks = set()
    for _ in range(n):
        task = asyncio.create_task(wait_forever())
        tasks.add(task)
        task.add_done_callback(tasks.discard)
    await asyncio.sleep(0)
    gc.collect()
    alive = len(asyncio.all_tasks()) - 1
    for task in list(tasks):
        task.cancel()
    return alive


class Done(Exception):
    """Raised inside the TaskGroup to end it: it cancels its tasks on the way out."""


async def in_a_task_group(n):
    """n tasks in a TaskGroup, which holds each until it ends."""
    try:
        async with asyncio.TaskGroup() as group:
            for _ in range(n):
                group.create_task(wait_forever())
            await asyncio.sleep(0)
            gc.collect()
            alive = len(asyncio.all_tasks()) - 1
            raise Done
    except* Done:
        pass  # the group cancelled its tasks on the way out
    return alive


WAYS = {"fire and forget": fire_and_forget, "kept in a set": kept_in_a_set, "in a TaskGroup": in_a_task_group}


async def count(way, n):
    """Run `way` with n tasks; how many asyncio reported destroyed while pending, and how many were still alive
    right after the collection (the loop's own list of tasks, as the way counted it)."""
    destroyed = []
    loop = asyncio.get_running_loop()
    loop.set_exception_handler(lambda loop, context: destroyed.append(context.get("message") == DESTROYED))
    alive = await WAYS[way](n)
    return {"way": way, "tasks": n, "destroyed": sum(destroyed), "alive": alive}


def main(n):
    print(json.dumps([asyncio.run(count(way, n)) for way in WAYS]))


def measure(n, timeout_s=60):
    """Each way with n tasks, in a child process: a list of {"way", "tasks", "destroyed", "alive"}."""
    done = run(python("-m", "iolab.lessons.service.lost_tasks", n), timeout_s)
    if done.returncode:
        raise RuntimeError(f"the lost-tasks child exited with {done.returncode}: {done.stderr[-2000:]}")
    return json.loads(done.stdout)


if __name__ == "__main__":
    main(int(sys.argv[1]))
