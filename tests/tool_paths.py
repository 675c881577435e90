"""Where CI runs each lesson without the optional programs and where with them.

The optional programs are wrk, ab, nginx, strace, ss and redis-server. CI has them (.ci/run installs binder/apt.txt's
packages) and Chromium, so every lesson runs once in JupyterLab in the browser (test_browser.py), and the papermill
runs of the lessons are few (conftest, test_notebooks.py), all of them without the programs. Running every lesson
both ways would add about a run per lesson to CI. Instead:

* the lessons below run in the browser without the programs; what they do with them is run by the tests named beside
  each (the same library calls on real servers, with the programs);
* the other lessons that call a program run in the browser with the programs, and under papermill without them
  (test_notebooks.py's instructor's and not-attempted runs);
* a lesson that calls none has one path, taken in the browser.

test_notebooks.py checks that this covers every lesson both ways.
"""

TOOLS_OFF_IN_BROWSER = {
    "00-start-here": (
        "tests/test_environment.py",  # environment.report(), the table of the machine lesson 00 shows, tools found
    ),
    "02-sync-vs-async": (
        "tests/test_benchtools.py",  # ab against a real server, its report parsed, its two lines one division
        "tests/lessons/sync_async/test_experiment.py",  # the listen queue read with ss, while the handler sleeps
        "tests/test_listening.py",
    ),
    "06-workers-threads-processes": (
        "tests/lessons/workers/test_measure.py",  # nginx + Tornado and nginx alone measured, nginx's own D
        "tests/lessons/workers/test_claims.py",  # the claims with nginx's figures, and Exercise 7 judged on them
    ),
    "07-c10k": (
        "tests/lessons/c10k/test_scene.py",  # the wrk scene on four sync workers and Tornado, timeouts and all
        "tests/test_listening.py",  # ss on a real listener: the backlog the lesson reads
    ),
    "08-pipelining": (
        "tests/lessons/pipelining/test_runs.py",  # runs driven by wrk, a batch's system calls counted with strace
        "tests/test_syscalls.py",
        "tests/test_thirdparty_servers.py",  # nginx, the ladder's top rung
    ),
    "09-measuring-right": (
        "tests/lessons/measuring/test_with_programs.py",  # ab's lines, wrk's timeout, wrk's errors: its last cell's claims
        "tests/test_benchtools.py",
    ),
    "12-long-lived-connections": (
        "tests/lessons/long_lived/test_proxy.py",  # section 6 through nginx_ws_proxy: Upgrade headers, read timeouts
    ),
    "15-running-a-service": (
        "tests/lessons/service/test_upstreams.py",  # section 3's restart behind nginx_balancer, abrupt and taken out
        "tests/test_thirdparty_servers.py",  # nginx_balancer's reload and its refusals
    ),
}
