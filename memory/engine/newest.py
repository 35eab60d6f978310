"""The first rows of each of many keys in one statement: how the prompt context reads its
newest memories and newest sessions for a chunk of viewers at once (issue 25 item 4).

One statement per chunk of keys, a UNION ALL of one `ORDER BY … LIMIT n` subquery per key.
Each member is the index seek a single viewer's read is, so the planner has no other plan to
pick, and nothing reads past a key's first rows: a window function (ROW_NUMBER() OVER
(PARTITION BY owner …)) would number every row of every key first, 100,000 of them for one
busy viewer. The outer ORDER BY repeats each member's order by column position, after the
member's number, so the rows of a key come back in exactly the order a read of that key
alone returns them, in the database's own collation.

PostgreSQL is given the same seeks as one LATERAL subquery run per key of an array: it plans
a 200-member UNION ALL for 30 ms and sorts its 10,000 wide rows on disk (work_mem), where the
LATERAL form is planned in 0.2 ms and sorts each key's rows alone (an incremental sort):
25 ms against 51–112 ms a chunk of the leak rescan's newest memories at 1M rows.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from django.db import connection

from memory.active_save import scoped_cursor

# SQLite refuses a compound SELECT of more than 500 members; 200 keys keep a statement's
# parameters (two per key) and its text small on both backends.
KEYS_PER_STATEMENT = 200


def chunks(items: Sequence, size: int) -> Iterable[Sequence]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def first_rows_of_each(
    table: str,
    key_column: str,
    keys: Iterable[str],
    columns: Sequence[str],
    order: Sequence[tuple[str, bool]],
    limit: int,
    until: tuple[str, str] | None = None,
) -> dict[str, list[tuple]]:
    """key -> the first `limit` rows of `table` (the active save's) whose `key_column` is that
    key, as `columns` tuples in `order` ((column, descending) pairs, each among `columns`).
    Every key asked for is in the answer, with [] when it has no row. `until` (column, value)
    keeps the rows whose column is at most the value: the rows as they stood at a moment."""
    wanted = list(dict.fromkeys(keys))
    found: dict[str, list[tuple]] = {key: [] for key in wanted}
    inner_order = ", ".join(f"{c} DESC" if desc else c for c, desc in order)
    # Position 1 is the member's number; the columns follow it.
    outer_order = ", ".join(f"{columns.index(c) + 2}{' DESC' if desc else ''}" for c, desc in order)
    select = ", ".join(columns)
    bound = f" AND {until[0]} <= %s" if until else ""
    lateral = connection.vendor == "postgresql"
    for chunk in chunks(wanted, KEYS_PER_STATEMENT):
        if lateral:  # ordinality counts from 1: the key's place in the chunk is k.n - 1
            sql = (
                f"SELECT k.n - 1, r.* FROM unnest(%s::text[]) WITH ORDINALITY AS k(key, n) "
                f"CROSS JOIN LATERAL (SELECT {select} FROM {table} "
                f"WHERE game_save_id = %(save)s AND {key_column} = k.key{bound} "
                f"ORDER BY {inner_order} LIMIT {int(limit)}) AS r"
            )
            params = [list(chunk), *((until[1],) if until else ())]
        else:
            sql = " UNION ALL ".join(
                f"SELECT * FROM (SELECT {n} AS k, {select} FROM {table} "
                f"WHERE game_save_id = %(save)s AND {key_column} = %s{bound} "
                f"ORDER BY {inner_order} LIMIT {int(limit)}) AS r{n}"
                for n in range(len(chunk))
            )
            params = [p for key in chunk for p in ((key, until[1]) if until else (key,))]
        with scoped_cursor() as cursor:
            cursor.execute(f"{sql} ORDER BY 1, {outer_order}", params)
            rows = cursor.fetchall()
        for row in rows:
            found[chunk[row[0]]].append(row[1:])
    return found
