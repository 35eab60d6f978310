"""The first rows of each of many keys in one statement: how the prompt context reads its
newest memories and newest sessions for a chunk of viewers at once (issue 25 item 4).

One statement per chunk of keys, a UNION ALL of one `ORDER BY … LIMIT n` subquery per key.
Each member is the index seek a single viewer's read is, so the planner has no other plan to
pick, and nothing reads past a key's first rows: a window function (ROW_NUMBER() OVER
(PARTITION BY owner …)) would number every row of every key first, 100,000 of them for one
busy viewer. The outer ORDER BY repeats each member's order by column position, after the
member's number, so the rows of a key come back in exactly the order a read of that key
alone returns them, in the database's own collation.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

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
    for chunk in chunks(wanted, KEYS_PER_STATEMENT):
        members = [
            f"SELECT * FROM (SELECT {n} AS k, {select} FROM {table} "
            f"WHERE game_save_id = %(save)s AND {key_column} = %s{bound} "
            f"ORDER BY {inner_order} LIMIT {int(limit)}) AS r{n}"
            for n in range(len(chunk))
        ]
        params = [p for key in chunk for p in ((key, until[1]) if until else (key,))]
        with scoped_cursor() as cursor:
            cursor.execute(f"{' UNION ALL '.join(members)} ORDER BY 1, {outer_order}", params)
            rows = cursor.fetchall()
        for row in rows:
            found[chunk[row[0]]].append(row[1:])
    return found
