"""The machine's limits from fake cgroup trees: v1 and v2 quotas (whole and fractional), memory, usage, throttling."""

import os

import pytest

from helpers import run_with_file_limits
from iolab import environment
from iolab.environment import Cgroups
from iolab.lessons.workers import cores, model


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def v1_tree(tmp_path, quota_us=-1, period_us=100_000, memory=str(environment.UNLIMITED + 1), group="/kubepods/pod1"):
    """A v1 hierarchy as Docker or Kubernetes lays it out: cpu, cpuacct and memory mounts, our group inside each."""
    root = tmp_path / "cgroup"
    for controller in ("cpu", "cpuacct", "memory"):
        (root / controller).mkdir(parents=True)
    inner = group.lstrip("/")
    write(root / "cpu" / inner / "cpu.cfs_quota_us", f"{quota_us}\n")
    write(root / "cpu" / inner / "cpu.cfs_period_us", f"{period_us}\n")
    write(root / "cpu" / "cpu.cfs_quota_us", "-1\n")
    write(root / "cpu" / "cpu.cfs_period_us", "100000\n")
    write(root / "cpu" / inner / "cpu.stat", "nr_periods 40\nnr_throttled 7\nthrottled_time 1500000000\n")
    write(root / "cpuacct" / inner / "cpuacct.usage", "2500000000\n")
    write(root / "memory" / inner / "memory.limit_in_bytes", memory + "\n")
    write(root / "memory" / inner / "memory.usage_in_bytes", "104857600\n")
    write(root / "memory" / inner / "memory.max_usage_in_bytes", "209715200\n")
    write(root / "memory" / "memory.limit_in_bytes", str(environment.UNLIMITED + 1) + "\n")
    proc = tmp_path / "self-cgroup"
    proc.write_text(f"12:memory:{group}\n4:cpuacct:{group}\n3:cpu:{group}\n1:name=systemd:/\n0::/\n")
    return Cgroups(root, proc)


def v2_tree(tmp_path, cpu_max="max 100000", memory_max="max", group="/user.slice/lab"):
    root = tmp_path / "cgroup2"
    inner = group.lstrip("/")
    write(root / "cgroup.controllers", "cpuset cpu io memory pids\n")
    write(root / inner / "cpu.max", cpu_max + "\n")
    write(root / inner / "cpu.stat", "usage_usec 3000000\nuser_usec 2000000\nsystem_usec 1000000\n"
                                     "nr_periods 50\nnr_throttled 9\nthrottled_usec 2250000\n")
    write(root / inner / "memory.max", memory_max + "\n")
    write(root / inner / "memory.current", "52428800\n")
    write(root / inner / "memory.peak", "73400320\n")
    proc = tmp_path / "self-cgroup"
    proc.write_text(f"0::{group}\n")
    return Cgroups(root, proc)


def test_v1_quota_of_one_cpu_memory_limit_usage_and_throttling(tmp_path):
    groups = v1_tree(tmp_path, quota_us=100_000, memory=str(2 << 30))
    assert groups.version == 1
    assert groups.cpu_quota() == 1.0
    assert groups.memory_limit_bytes() == 2 << 30
    cpu = groups.cpu()
    assert cpu.used_s == 2.5 and cpu.throttled == 7 and cpu.throttled_s == 1.5
    memory = groups.memory()
    assert memory.current == 100 << 20 and memory.peak == 200 << 20


def test_v2_fractional_quota_and_memory(tmp_path):
    groups = v2_tree(tmp_path, cpu_max="150000 100000", memory_max=str(1 << 30))
    assert groups.version == 2
    assert groups.cpu_quota() == 1.5  # a float, not rounded to whole CPUs
    assert groups.memory_limit_bytes() == 1 << 30
    cpu = groups.cpu()
    assert cpu.used_s == 3.0 and cpu.throttled == 9 and cpu.throttled_s == 2.25
    assert groups.memory().peak == 70 << 20


@pytest.mark.parametrize("make", [v1_tree, v2_tree])
def test_no_limit_set(tmp_path, make):
    groups = make(tmp_path)
    assert groups.cpu_quota() is None and groups.memory_limit_bytes() is None


def test_v1_half_a_cpu(tmp_path):
    assert v1_tree(tmp_path, quota_us=50_000).cpu_quota() == 0.5


def test_a_quota_set_on_a_parent_group_applies(tmp_path):
    groups = v2_tree(tmp_path, group="/kubepods/pod1/container")
    write(groups.root / "kubepods" / "pod1" / "cpu.max", "50000 100000\n")
    write(groups.root / "kubepods" / "pod1" / "memory.max", f"{512 << 20}\n")
    assert groups.cpu_quota() == 0.5 and groups.memory_limit_bytes() == 512 << 20
    assert groups.container() == groups.root / "kubepods" / "pod1"  # whose usage counts as the container's


def test_inside_a_cgroup_namespace_the_mount_root_is_the_container(tmp_path):
    # /proc names a host path the container's mount does not show: the mount's root is the container's group.
    groups = v2_tree(tmp_path, cpu_max="100000 100000", group="/")
    (tmp_path / "self-cgroup").write_text("0::/kubepods/burstable/pod9/abc\n")
    groups = Cgroups(groups.root, tmp_path / "self-cgroup")
    assert groups.cpu_quota() == 1.0


def test_no_cgroup_filesystem(tmp_path):
    groups = Cgroups(tmp_path / "nothing", tmp_path / "no-such-file")
    assert groups.version is None
    assert groups.cpu_quota() is None and groups.memory_limit_bytes() is None
    assert groups.cpu() is None and groups.memory() is None


def test_usable_cpus_is_the_smaller_of_affinity_and_quota(tmp_path, monkeypatch):
    for quota_us, expected in ((100_000, 1.0), (50_000, 0.5), (150_000, 1.5), (800_000, None), (-1, None)):
        groups = v1_tree(tmp_path / str(quota_us), quota_us=quota_us)
        monkeypatch.setattr(environment, "cgroups", lambda groups=groups: groups)
        affinity = len(os.sched_getaffinity(0))
        want = min(affinity, expected) if expected is not None else affinity
        assert environment.usable_cpus() == want
        assert environment.usable_cpus(cpus=1) == min(1, want)
        assert environment.usable_cores() >= 1 and environment.usable_cores() >= environment.usable_cpus()


def test_under_a_quota_others_share_is_the_containers_own(tmp_path, monkeypatch):
    """Other users' containers on the node take nothing from this one's quota: the share comes from our cgroup."""
    groups = v1_tree(tmp_path, quota_us=100_000)
    before_cpu = groups.cpu()
    before = cores.CoreTimes(tasks_s=100.0, interrupts_s=1.0, stolen_s=0.0, idle_s=50.0, own_s=1.0, group=before_cpu)
    # The node ran 20 s of tasks in 10 s (everyone's); our container 8 s: 3 s the server, 4 s the notebook, 1 s others.
    after = cores.CoreTimes(tasks_s=120.0, interrupts_s=1.5, stolen_s=0.0, idle_s=50.0, own_s=5.0,
                            group=environment.GroupCpu(before_cpu.used_s + 8.0, 140, 27, 4.5))
    use = cores.between(before, after, wall_s=10.0, server_s=3.0, cores=1.0)
    assert use.others_share == pytest.approx(0.1)
    assert use.idle_share == pytest.approx(0.2)
    assert (use.throttled, use.throttled_s) == (20, 3.0)
    node_wide = cores.between(cores.CoreTimes(100.0, 1.0, 0.0, 50.0, 1.0), cores.CoreTimes(120.0, 1.5, 0.0, 50.0, 5.0),
                              wall_s=10.0, server_s=3.0, cores=2)
    assert node_wide.others_share > 0.6  # without the quota, the node's other tasks would count as disturbance


def test_a_throttled_run_says_so_in_its_verdict():
    demands = model.Demands(app_ms=5.0, client_ms=0.5)
    setup = model.Setup(processes=2, threads=1, one_thread=True)
    predicted = model.predict(demands, setup, users=16, cores=1.0)

    class Run:
        rps = predicted.rps * 0.6
        others_share, idle_share = 0.0, 0.0
        throttled, throttled_s = 12, 0.84

    verdict = model.judge(Run, predicted, predicted, demands, demands, setup, predicted)
    assert verdict.kind == "reported"
    assert "throttled this run 12 times, 0.84 s" in verdict.reason
    Run.rps = predicted.rps  # a hit still says it was throttled
    verdict = model.judge(Run, predicted, predicted, demands, demands, setup, predicted)
    assert verdict.kind == "predicted" and "0.84 s" in verdict.reason


def test_the_lab_counts_the_quota(tmp_path, monkeypatch):
    from iolab.lessons.workers import sweep

    groups = v1_tree(tmp_path, quota_us=50_000)
    monkeypatch.setattr(environment, "cgroups", lambda: groups)
    lab = sweep.Lab(wait_ms=20, cpu_ms=5, run_seconds=0.2, users=8)
    assert lab.cores == 0.5


def test_a_short_window_may_catch_one_more_period_of_quota(tmp_path, monkeypatch):
    groups = v1_tree(tmp_path, quota_us=50_000, period_us=100_000)
    monkeypatch.setattr(environment, "cgroups", lambda: groups)
    assert groups.quota_period_s() == 0.1
    assert environment.cpus_within(10.0, cpus=2) == pytest.approx(0.505)
    assert environment.cpus_within(0.25, cpus=2) == pytest.approx(0.7)
    assert environment.cpus_within(0.01, cpus=2) == 2  # never more than the cores
    free = v1_tree(tmp_path / "free")
    monkeypatch.setattr(environment, "cgroups", lambda: free)
    assert environment.cpus_within(0.25, cpus=2) == 2.0


def test_a_short_run_above_the_quotas_average_is_explained_by_the_period():
    demands = model.Demands(app_ms=0.2, client_ms=0.05)
    setup = model.Setup(processes=2, threads=1, one_thread=True)
    explained = model.predict(demands, setup, users=16, cores=1.0)
    most = model.predict(demands, setup, users=16, cores=1.4)  # environment.cpus_within of a 0.25 s run

    class Run:
        rps = explained.rps * 1.25
        others_share, idle_share, throttled, throttled_s = 0.0, 0.0, 0, 0.0

    verdict = model.judge(Run, explained, explained, demands, demands, setup, most)
    assert verdict.kind == "explained" and "caught the unused rest" in verdict.reason


def test_environment_report_has_what_lesson_00_shows():
    found = environment.report()
    assert found["cores"] >= 1 and found["rlimit_nofile"]["soft"] > 0
    assert found["versions"]["tornado"] and set(found["tools"]) == set(environment.OPTIONAL_TOOLS)
    assert environment.problems(found) == []
    broken = {**found, "rlimit_nofile": {"soft": 64, "hard": 64}}
    assert any("RLIMIT_NOFILE is 64" in problem for problem in environment.problems(broken))


@pytest.mark.parametrize("make", ["v1", "v2"])
def test_the_containers_cpu_files_read_as_its_cpu(tmp_path, make):
    groups = v1_tree(tmp_path, quota_us=50_000) if make == "v1" else v2_tree(tmp_path, cpu_max="50000 100000")
    files = groups.cpu_files()
    assert environment.read_group_cpu(files, groups.version) == groups.cpu()
    assert groups.cpu().used_s == (2.5 if make == "v1" else 3.0)


def test_a_container_trace_cuts_out_exactly_the_window_asked_for(tmp_path, monkeypatch):
    """Readings either side of the window are interpolated: a run's first send and last answer fall between them."""
    from iolab import usage

    monkeypatch.setattr(environment, "cgroups", lambda: v2_tree(tmp_path, cpu_max="50000 100000"))
    trace = usage.ContainerTrace()
    assert trace.quota == 0.5
    # 0.4 CPU-s per s from t=10 to 11, then stopped (throttled) for 0.1 s of the next 0.1 s
    trace.points = [(10.0, 1.0, 3, 0.0), (11.0, 1.4, 3, 0.0), (11.1, 1.4, 4, 0.1)]
    window = trace.window(10.5, 11.05)
    assert window.window_s == pytest.approx(0.55)
    assert window.cpu_s == pytest.approx(0.2)
    assert window.throttled_s == pytest.approx(0.05)
    assert window.utilization == pytest.approx(0.2 / 0.55)
    assert trace.window(10.5, 11.1).throttled == 1
    assert trace.window(11.0, 10.0) is None


def test_no_quota_no_trace(tmp_path, monkeypatch):
    from iolab import usage

    monkeypatch.setattr(environment, "cgroups", lambda: v2_tree(tmp_path))
    trace = usage.ContainerTrace().start()
    assert trace._thread is None and trace.stop().window(0.0, 1.0) is None


def test_raise_file_limit_lifts_the_soft_limit_to_the_hard_one():
    code = "from iolab import environment; print(*environment.raise_file_limit())"
    assert run_with_file_limits(1024, 4000, code) == ["4000", "4000"]
    # Asked for no more than the soft limit gives, it leaves it alone; asked for more, it goes all the way.
    code = "from iolab import environment; print(*environment.raise_file_limit(500), *environment.raise_file_limit(1500))"
    assert run_with_file_limits(1024, 4000, code) == ["1024", "4000", "4000", "4000"]


def test_a_hubs_declared_limits_are_read_and_bad_ones_ignored():
    assert environment.declared_limits({"CPU_LIMIT": "0.5", "MEM_LIMIT": "1073741824"}) == {
        "declared_cpus": 0.5, "declared_memory_bytes": 2**30}
    assert environment.declared_limits({"CPU_LIMIT": "", "MEM_LIMIT": "1G"}) == {
        "declared_cpus": None, "declared_memory_bytes": None}  # JupyterHub writes bytes; anything else is no limit
    assert environment.declared_limits({"CPU_LIMIT": "-1", "MEM_LIMIT": "0"}) == {
        "declared_cpus": None, "declared_memory_bytes": None}


def test_a_declared_limit_nothing_enforces_is_named_with_what_the_lab_plans_with():
    found = {"cpus": 2.0, "cpu_quota": None, "memory_limit_bytes": None,
             **environment.declared_limits({"CPU_LIMIT": "0.5", "MEM_LIMIT": str(2**30)})}
    cpu, memory = environment.unenforced_limits(found)
    assert "0.5 CPU" in cpu and "nothing enforces it" in cpu and "the 2 CPUs" in cpu
    assert "1.00 GiB" in memory and "nothing enforces it" in memory and "the machine's memory" in memory


def test_declared_limits_a_cgroup_enforces_say_nothing_and_others_say_what_is_enforced():
    declared = environment.declared_limits({"CPU_LIMIT": "0.5", "MEM_LIMIT": str(2**30)})
    assert environment.unenforced_limits({"cpus": 0.5, "cpu_quota": 0.5, "memory_limit_bytes": 2**30, **declared}) == []
    looser = environment.unenforced_limits({"cpus": 2.0, "cpu_quota": 2.0, "memory_limit_bytes": 2**31, **declared})
    assert "quota is 2" in looser[0] and "limit is 2.00 GiB" in looser[1]
    assert environment.unenforced_limits({"cpus": 2.0, "cpu_quota": None, "memory_limit_bytes": None}) == []
