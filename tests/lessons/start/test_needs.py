"""Lesson 00's check of what every lesson needs: each server's programs and packages are named, with their lessons."""

import re
from pathlib import Path

from iolab import environment, registry

REPO = Path(__file__).resolve().parents[3]
NOTEBOOKS = {path.name[:2] for path in (REPO / "notebooks").glob("[0-9][0-9]-*.ipynb")}


def named():
    """Every program and package lesson 00 checks, by the name a server lists it under (psycopg_pool too)."""
    names = set(environment.LESSON_PROGRAMS) | set(environment.LESSON_PACKAGES) | set(environment.PACKAGES)
    return names | {name.replace("-", "_") for name in names}


def test_every_program_and_package_a_server_needs_is_checked_by_lesson_00():
    unnamed = {}
    for name in registry.names():
        info = registry.get(name)
        for need in (*info.needs_programs, *info.needs_modules):
            if need not in named():
                unnamed.setdefault(need, []).append(name)
    assert not unnamed, f"lesson 00 does not check what these servers need: {unnamed}"


def test_each_need_names_real_lessons_and_an_installer():
    for need in environment.lesson_needs():
        lessons = set()
        for first, last in re.findall(r"(\d{2})(?:-(\d{2}))?", need["lessons"]):
            lessons |= {f"{n:02d}" for n in range(int(first), int(last or first) + 1)}
        assert lessons and lessons <= NOTEBOOKS, f"{need['name']}: lessons {need['lessons']!r} are not all lessons"
        assert need["install"], need["name"]
    programs = [need["name"] for need in environment.lesson_needs() if need["kind"] == "program"]
    assert {"postgres", "pgbouncer", "redis-server", "nginx", "wrk", "ab"} <= set(programs)
    requirements = (REPO / "binder" / "requirements.txt").read_text().lower()
    for package in environment.LESSON_PACKAGES:
        assert f"\n{package}==" in f"\n{requirements}", f"{package} is not pinned in binder/requirements.txt"


def test_a_missing_need_is_named_with_its_lessons_and_how_to_install_it():
    needs = [{"name": "pgbouncer", "kind": "program", "lessons": "13", "for": "pooling", "found": None,
              "install": "the Debian package pgbouncer"},
             {"name": "nginx", "kind": "program", "lessons": "06", "for": "a proxy", "found": "/usr/sbin/nginx",
              "install": "the Debian package nginx"}]
    assert environment.missing_needs(needs) == [
        "pgbouncer (program) is missing: lessons 13 need it for pooling; install the Debian package pgbouncer"]
