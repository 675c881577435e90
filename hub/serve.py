"""Start JupyterHub for a class on this host (`make hub`): the lab installed where every student can read it.

Usage (as root): python hub/serve.py [--env DIR] [--port N] [--students "ana ben cy"] [--state DIR] [--quick]
                 [--cpu-limit X] [--mem-limit SIZE]
The class password, if any, comes from the IOLAB_HUB_PASSWORD variable (never on a command line, which `ps` shows).

Steps: the environment in --env (a venv from --base-python, binder/requirements.txt, the lab's copy, the proxy from
npm), reinstalled only when a requirements file changed; a check that an unprivileged user can run it; an account
for each student named who has none; then JupyterHub in the foreground, with hub/jupyterhub_config.py. Ctrl-C stops
the hub and every student's server. --python, --lab and --proxy name ready parts instead (the test uses them).
"""

import argparse
import hashlib
import os
import pwd
import re
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
HUB = REPO / "hub"
CONFIG = HUB / "jupyterhub_config.py"
# What the students' copy of the lab holds: the package, the servers it starts, the tools, the lessons.
LAB_PARTS = ("lib", "servers", "tools", "notebooks", "jupyter", "pyproject.toml", "README.md")
# Any change to these reinstalls the environment.
INSTALLED_FROM = ("binder/requirements.txt", "pyproject.toml", "hub/package.json", "hub/package-lock.json")
STAMP = ".iolab-hub-installed"
NOBODY = "nobody"  # on every Linux, owns nothing: if it can run the lab, every student can
# The lab imported; the hub's single-user server and JupyterLab found (importing them takes seconds); a server read.
PROBE = ("import importlib.util, sys, iolab; missing = [name for name in ('jupyterhub', 'jupyterlab')"
         " if importlib.util.find_spec(name) is None]; open(sys.argv[1], 'rb').close();"
         " sys.exit(f'{missing} not installed' if missing else 0)")
STUDENT_NAME = re.compile(r"^[a-z_][a-z0-9_-]{0,31}$")
MIN_PASSWORD = 8  # SharedPasswordAuthenticator refuses a shorter one


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="hub/serve.py", description=__doc__.split("\n")[0])
    parser.add_argument("--env", type=Path, default=Path("/opt/iolab-hub"),
                        help="where the class's environment is installed (every user must be able to read it)")
    parser.add_argument("--base-python", default="/usr/bin/python3",
                        help="the Python 3.11+ the environment is made from (not one under /root)")
    parser.add_argument("--uv-version", default="0.13.9")
    parser.add_argument("--port", type=int, default=8000, help="the hub's public port, on 127.0.0.1")
    parser.add_argument("--students", default="", help="the class list: who may log in; missing accounts are made")
    parser.add_argument("--state", type=Path, default=Path("/var/lib/iolab-hub"),
                        help="the hub's database, cookie secret and pid file")
    parser.add_argument("--quick", action="store_true", help="every lesson at its small sizes (IOLAB_QUICK=1)")
    parser.add_argument("--cpu-limit", default="", help="CPUs per student, declared to the spawner (not enforced)")
    parser.add_argument("--mem-limit", default="", help="memory per student, e.g. 1G, declared (not enforced)")
    parser.add_argument("--python", help="a ready students' Python instead of --env's")
    parser.add_argument("--lab", type=Path, help="a ready copy of the lab instead of --env's")
    parser.add_argument("--proxy", help="a ready configurable-http-proxy instead of --env's")
    args = parser.parse_args(argv)
    bad = [name for name in args.students.split() if not STUDENT_NAME.match(name)]
    if bad:
        parser.error(f"--students: {bad[0]!r} is not a Unix user name (lower case letters, digits, _ and -)")
    if not 0 < args.port < 65536:
        parser.error(f"--port: {args.port} is not a port")
    password = os.environ.get("IOLAB_HUB_PASSWORD", "")
    if password and len(password) < MIN_PASSWORD:
        parser.error(f"HUB_PASSWORD: a class password needs at least {MIN_PASSWORD} characters")
    return args


def run(argv, **kwargs):
    print("+", " ".join(map(str, argv)), flush=True)
    subprocess.run(list(map(str, argv)), check=True, **kwargs)


def digest():
    hashed = hashlib.sha256()
    for name in INSTALLED_FROM:
        hashed.update((REPO / name).read_bytes())
    return hashed.hexdigest()


def copy_lab(env):
    """The lab's copy in env/lab, afresh each start; the instructor's notebooks (with solutions) for root only."""
    lab = env / "lab"
    lab.mkdir(parents=True, exist_ok=True)
    for part in LAB_PARTS:
        source, target = REPO / part, lab / part
        if source.is_dir():
            shutil.rmtree(target, ignore_errors=True)
            shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        else:
            shutil.copy2(source, target)
    (lab / "notebooks").chmod(0o700)  # make_student.py reads them as root; students get their copies
    subprocess.run([str(env / "bin" / "python"), "-m", "compileall", "-q", str(lab / "lib"), str(lab / "servers")],
                   check=False)  # students cannot write __pycache__ here: compiled once, for every import
    return lab


def install_environment(env, base_python, uv_version):
    """A venv in `env` with the lab's pinned packages (jupyterhub among them) and the proxy, unless already there."""
    wanted = digest()
    stamp = env / STAMP
    if not (env / "bin" / "python").exists():
        run([base_python, "-m", "venv", env])
    lab = copy_lab(env)
    if stamp.exists() and stamp.read_text() == wanted:
        return
    python = env / "bin" / "python"
    run([python, "-m", "pip", "install", "--quiet", f"uv=={uv_version}"])
    run([python, "-m", "uv", "pip", "install", "--python", python, "--compile-bytecode",
         "-r", REPO / "binder" / "requirements.txt"])
    run([python, "-m", "uv", "pip", "install", "--python", python, "--no-deps", "-e", lab])
    # The lab's JupyterLab settings (no news prompt), where JupyterLab reads them for everyone using this env.
    settings = env / "share" / "jupyter" / "lab" / "settings"
    settings.mkdir(parents=True, exist_ok=True)
    shutil.copy2(REPO / "jupyter" / "lab-settings" / "overrides.json", settings / "overrides.json")
    install_proxy(env / "proxy")
    stamp.write_text(wanted)


def install_proxy(folder):
    """configurable-http-proxy at the version hub/package-lock.json pins, by `npm ci`; returns its program."""
    if not shutil.which("npm"):
        sys.exit("make hub: npm is missing: JupyterHub's proxy (configurable-http-proxy) runs on Node.js;"
                 " install Node.js 20 or newer with npm (Debian 12's own nodejs, 18, is too old for it)")
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("package.json", "package-lock.json"):
        shutil.copy2(HUB / name, folder / name)
    run(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=folder)
    return folder / "node_modules" / ".bin" / "configurable-http-proxy"


def why_students_cannot_run(python, lab):
    """None if an unprivileged user can start the lab from `python` and read `lab`, else the reason."""
    account = pwd.getpwnam(NOBODY)
    try:
        probe = subprocess.run([str(python), "-c", PROBE, str(lab / "servers" / "_wrapper.py")], cwd="/",
                               capture_output=True, text=True, timeout=120, user=account.pw_uid,
                               group=account.pw_gid, extra_groups=[])
    except OSError as refused:
        return f"{python}: {refused}"
    if probe.returncode:
        return (probe.stderr.strip().splitlines() or ["no message"])[-1]
    return None


def add_students(names):
    """An account with a home for each student named who has none; an existing account is left as it is."""
    for name in names:
        try:
            pwd.getpwnam(name)
        except KeyError:
            run(["useradd", "--create-home", "--shell", "/bin/bash", name])


def hub_environment(args, python, lab, proxy):
    env = {k: v for k, v in os.environ.items() if not k.startswith("IOLAB_HUB_") or k == "IOLAB_HUB_PASSWORD"}
    env.update({
        "IOLAB_HUB_STATE": str(args.state), "IOLAB_HUB_PYTHON": str(python), "IOLAB_HUB_LAB": str(lab),
        "IOLAB_HUB_PROXY": str(proxy), "IOLAB_HUB_PORT": str(args.port), "IOLAB_HUB_STUDENTS": args.students,
        "IOLAB_HUB_QUICK": "1" if args.quick else "0", "IOLAB_HUB_CPU_LIMIT": args.cpu_limit,
        "IOLAB_HUB_MEM_LIMIT": args.mem_limit,
    })
    return env


def main(argv):
    args = parse_args(argv)
    if not sys.platform.startswith("linux") or os.geteuid() != 0:
        sys.exit("make hub: run it as root on Linux: the hub starts each student's server as that student's user")
    os.umask(0o022)
    if args.python and args.lab:
        python, lab = Path(args.python), args.lab
    else:
        install_environment(args.env, args.base_python, args.uv_version)
        python, lab = args.env / "bin" / "python", args.env / "lab"
    proxy = args.proxy or args.env / "proxy" / "node_modules" / ".bin" / "configurable-http-proxy"
    if not Path(proxy).exists():
        proxy = install_proxy(args.env / "proxy")
    reason = why_students_cannot_run(python, lab)
    if reason:
        sys.exit(f"make hub: the students' user cannot run the lab from {python} and {lab} ({reason}); make the"
                 f" environment from a Python every user may read (--base-python, HUB_PYTHON=/usr/bin/python3)")
    add_students(args.students.split())
    args.state.mkdir(mode=0o700, parents=True, exist_ok=True)
    hub_python = python if not args.python else sys.executable
    if not args.students:
        print("make hub: no STUDENTS named, so nobody may log in yet: name the class, e.g. STUDENTS=\"ana ben cy\"",
              file=sys.stderr, flush=True)
    print(f"JupyterHub for {args.students or 'nobody'} on http://127.0.0.1:{args.port}/", flush=True)
    os.execve(str(hub_python), [str(hub_python), "-m", "jupyterhub", "-f", str(CONFIG)],
              hub_environment(args, python, lab, proxy))


if __name__ == "__main__":
    main(sys.argv[1:])
