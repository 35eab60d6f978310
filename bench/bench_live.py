"""Live follow: lag from the game's commit to the row being visible in the API twin, and the
follower's CPU share, with the game stand-in writing at a steady rate.

    .venv/bin/python bench/bench_live.py                    # 100 rows/s for 60 s
    .venv/bin/python bench/bench_live.py --rate 200 --seconds 30
    .venv/bin/python bench/bench_live.py --smoke            # 40 rows/s for 2 s

A fresh inspector database (SQLite in a temporary folder, or DATABASE_URL when set) is
migrated; `manage.py follow_omnia` runs as a real process (--interval 0.1) on a save the
stand-in (memory.worlds.standin, in a thread here) writes: one buffer row per witness, names
learned, a row deleted every 25 turns, rollback journal, each commit's wall time kept per
row. This process polls GET /live/ every 50 ms as a page does (ETag, 304 while unchanged) and,
when the version moves, reads each viewer's newest buffer page from the API twin
(/api/saves/bench/viewers/<id>/buffer); a row's lag is the first time it is seen there minus its commit.
Rows deleted before they were seen are left out (counted). The follower's CPU share is its
user+system time over the wall time of the run (of one core), read from /proc. At the end
`rebuild_projections --verify` must report no drift, and the stand-in's longest lock wait
is reported beside the lag.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rate", type=float, default=100.0, help="buffer rows a second")
    parser.add_argument("--seconds", type=float, default=60.0, help="how long the game writes")
    parser.add_argument("--smoke", action="store_true", help="40 rows/s for 2 s")
    parser.add_argument("--json", action="store_true", help="the figures as one JSON line")
    parser.add_argument("--writer", metavar="OUT", help=argparse.SUPPRESS)  # the game process
    parser.add_argument("--save-file", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.writer:
        write_game(Path(args.save_file), args.rate, args.seconds, Path(args.writer))
        return
    rate, seconds = (40.0, 2.0) if args.smoke else (args.rate, args.seconds)

    work = Path(tempfile.mkdtemp(prefix="bench-live-"))
    save = work / "game.sqlite"
    env = dict(os.environ)
    env.setdefault("DATABASE_URL", f"sqlite:///{work / 'inspector.sqlite3'}")
    # DEBUG off: with it on Django keeps every query in memory.
    env.update(OMNIA_DEBUG="0", OMNIA_SECRET_KEY="bench-only", PYTHONUNBUFFERED="1")
    os.environ.update(
        DATABASE_URL=env["DATABASE_URL"],
        OMNIA_SECRET_KEY="bench-only",
        OMNIA_TESTING="1",
        DJANGO_SETTINGS_MODULE="omnia_site.settings",
    )
    manage = [sys.executable, "manage.py"]
    subprocess.run([*manage, "migrate", "-v0"], cwd=ROOT, env=env, check=True)

    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.test import Client

    from memory.worlds.standin import CAST, StandIn

    StandIn(save, seed=11).close()  # the world, before the follower starts
    user = get_user_model().objects.create_user("bench", password="bench-only-pw")
    client = Client()
    client.force_login(user)
    follower = subprocess.Popen(
        [*manage, "follow_omnia", str(save), "--interval", "0.1", "--as", "bench"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    # The follower's first batch (the world) lands before the clock starts.
    while not client.get("/live/").json()["follows"] or not client.get("/live/").json()["age_s"]:
        time.sleep(0.1)
    # The game in a process of its own, as a game is: its commits and lock waits are not
    # slowed by this process's polling.
    report_path = work / "game.json"
    writer = subprocess.Popen(
        [sys.executable, __file__, "--writer", str(report_path), "--save-file", str(save),
         "--rate", str(rate), "--seconds", str(seconds)],
        cwd=ROOT,
    )  # fmt: skip
    cpu_start, wall_start = cpu_seconds(follower.pid), time.monotonic()

    seen: dict[str, float] = {}
    etag = None
    api_reads = polls = not_modified = 0
    viewers = [c[0] for c in CAST]
    deadline = wall_start + seconds + 15

    def committed() -> dict[str, float]:
        if not report_path.exists():
            return {}
        return dict(json.loads(report_path.read_text())["commits"])

    while time.monotonic() < deadline:
        polls += 1
        response = client.get("/live/", headers={"If-None-Match": etag} if etag else {})
        if response.status_code == 304:
            not_modified += 1
        else:
            etag = response["ETag"]
            now = time.time()
            for viewer in viewers:
                page = client.get(f"/api/saves/bench/viewers/{viewer}/buffer?limit=200").json()
                api_reads += 1
                for item in page["items"]:
                    seen.setdefault(item["id"], now)
        if writer.poll() is not None:
            waiting = set(committed()) - set(seen)
            if not waiting or waiting <= deleted_ids(save, waiting):
                break
        time.sleep(0.05)
    wall = time.monotonic() - wall_start
    cpu = cpu_seconds(follower.pid) - cpu_start
    follower.terminate()
    _out, err = follower.communicate(timeout=60)
    writer.wait(timeout=30)
    game = json.loads(report_path.read_text())

    commits = committed()
    lags = [seen[i] - t for i, t in commits.items() if i in seen]
    unseen = [i for i in commits if i not in seen]
    gone = deleted_ids(save, set(unseen))
    verify = subprocess.run(
        [*manage, "rebuild_projections", "--verify"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    figures = {
        "rate_rows_s": rate,
        "seconds": seconds,
        "rows_committed": len(commits),
        "rows_seen": len(lags),
        "rows_deleted_before_seen": len([i for i in unseen if i in gone]),
        "rows_never_seen": len([i for i in unseen if i not in gone]),
        "lag_p50_s": round(statistics.median(lags), 3) if lags else None,
        "lag_p99_s": round(percentile(lags, 0.99), 3) if lags else None,
        "lag_max_s": round(max(lags), 3) if lags else None,
        "follower_cpu_share": round(cpu / wall, 3),
        "writer_max_lock_wait_ms": round(game["max_lock_wait_ms"], 2),
        "polls": polls,
        "polls_304": not_modified,
        "api_reads": api_reads,
        "follower_exit": follower.returncode,
        "verify_exit": verify.returncode,
    }
    if args.json:
        print(json.dumps(figures))
    else:
        for name, value in figures.items():
            print(f"{name:28} {value}")
    problems = []
    if figures["rows_never_seen"]:
        problems.append(f"{figures['rows_never_seen']} rows never became visible")
    if verify.returncode != 0:
        problems.append("rebuild_projections --verify found drift:\n" + verify.stdout)
    if follower.returncode != 0:
        problems.append(f"follower exit {follower.returncode}: {err[-2000:]}")
    if problems:
        sys.exit("\n".join(problems))


def write_game(save: Path, rate: float, seconds: float, out: Path) -> None:
    """The game process: the stand-in at `rate` for `seconds`, then its report with every
    row's commit time (written once, at the end, so it never competes with the game)."""
    from memory.worlds.standin import StandIn

    game = StandIn(save, seed=11, keep_commits=True)
    report = game.run(int(rate * seconds), rate)
    game.close()
    out.write_text(json.dumps({**report.as_dict(), "commits": report.commits}))


def deleted_ids(save: Path, committed: set[str]) -> set[str]:
    """Committed rows the game has deleted since (no longer in the file)."""
    with sqlite3.connect(f"file:{save}?mode=ro", uri=True) as conn:
        present = {r[0] for r in conn.execute("SELECT id FROM buffer_entries")}
    return committed - present


if __name__ == "__main__":
    main()
