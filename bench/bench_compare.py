"""Compare bounded (issue 29 item 4): a large save against a small replay, on the user's
path (generated omnia files, `manage.py import_omnia`, gunicorn with DEBUG off), the page and
the API twin of one viewer and of every viewer: bytes and seconds of the whole answer, beside
`manage.py compare --json` (everything, unbounded) in the same run.

    .venv/bin/python bench/bench_compare.py                    # 300,000 rows against 2,000
    .venv/bin/python bench/bench_compare.py --smoke

For a before/after, copy this file into bench/ of an older checkout and run it there with
this virtualenv: the same seeds make the same two saves, and every process (the commands,
gunicorn) runs from that checkout's directory, so it serves that checkout's code.
"""

from __future__ import annotations

import argparse
import http.client
import json
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlencode

from _harness import (
    Shape,
    generate_omnia_world,
    gunicorn_argv,
    manage,
    servers,
    session_cookie,
    store_env,
    timed_manage_peak,
)


def fetch(port: int, path: str, headers: dict[str, str]) -> tuple[float, int, int | str]:
    """(seconds to the last byte, bytes, status); a worker gunicorn killed at its timeout
    (300 s) answers no status: "killed"."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=900)
    started = time.perf_counter()
    try:
        conn.request("GET", path, headers=headers)
        response = conn.getresponse()
        body = response.read()
    except (http.client.HTTPException, OSError):
        return time.perf_counter() - started, 0, "killed"
    finally:
        conn.close()
    return time.perf_counter() - started, len(body), response.status


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=300_000)
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args()
    rows = 1_000 if args.smoke else args.rows
    with tempfile.TemporaryDirectory() as tmp:
        env = store_env(f"sqlite:///{tmp}/store.sqlite3")
        manage(env, "migrate", "-v", "0")
        for name, n, seed in (("big", rows, 7), ("small", 2_000, 8)):
            path = Path(tmp) / f"{name}.sqlite"
            # Readable ids: the same people (npc-0000 …) in both, as an older checkout needs.
            shape = Shape(rows=n, entities=500, hot_rows=n // 10, ids="readable", seed=seed)
            generate_omnia_world(path, shape)
            manage(env, "import_omnia", str(path), "--as", name)
        busy = "npc-0000"
        cookie = session_cookie(env)
        headers = {"Cookie": cookie}
        results = []
        one = urlencode({"a": "big", "b": "small", "viewer": busy})
        every = urlencode({"a": "big", "b": "small"})
        with servers(env) as ports:
            port = ports["start"]("gunicorn", gunicorn_argv())
            fetch(port, "/compare/", headers)  # a warm-up: the worker's first imports
            for label, path in (
                ("page, one viewer", f"/compare/?{one}"),
                ("API, one viewer", f"/api/compare?{one}"),
                ("page, every viewer", f"/compare/?{every}"),
                ("API, every viewer", f"/api/compare?{every}"),
            ):
                seconds, size, status = fetch(port, path, headers)
                results.append((label, status, seconds, size))
        seconds, peak, out = timed_manage_peak(
            env, "compare", "big", "small", "--viewer", busy, "--json"
        )
        results.append(("manage.py compare --json, one viewer", 0, seconds, len(out.encode())))
        print(f"rows: big {rows:,}, small 2,000; code: {Path(__file__).resolve().parent.parent}")
        print(f"{'what':40} {'status':>6} {'seconds':>8} {'bytes':>12}")
        for label, status, seconds, size in results:
            print(f"{label:40} {status:>6} {seconds:>8.2f} {size:>12,}")
        print(json.dumps({"command_peak_rss_mb": round(peak)}))


if __name__ == "__main__":
    sys.exit(main())
