"""Who each buffer row names (issue 25): `memory_buffer_mentions`, one row per (save, owner,
named entity, buffer row), kept by the database itself so that every door that writes or
deletes buffer rows — import, the live follower, remember, a save's purge — keeps it without
knowing it exists.

The viewer's `uses=` filter ("the lines naming this person") reads it: an index range instead
of a read of every row the viewer holds (448 ms for a 100,000-row viewer at 1M rows). It is a
superset by design: the actorId and every string of targetIds, read as the database's JSON
reader reads them, every duplicate key included; a row whose intent the database cannot read
is listed under the entity '' ("check me"), and so is one holding an escaped NUL, which
SQLite's JSON reader cuts a string at. The page still renders each candidate and keeps
only the lines that name the person, so an entry here never decides what is shown.

No Django model: nothing reads it but that one statement, and a model would let code write
it behind the triggers' back.
"""

from django.db import migrations

SQLITE_NAMED = """
    SELECT a.value AS value FROM json_each(CASE WHEN json_valid({row}.intent_json)
        THEN {row}.intent_json ELSE '[]' END) AS a
      WHERE a.key = 'actorId' AND a.type = 'text'
    UNION SELECT t.value FROM json_each(CASE WHEN json_valid({row}.intent_json)
        THEN {row}.intent_json ELSE '[]' END) AS a, json_each(a.value) AS t
      WHERE a.key = 'targetIds' AND a.type = 'array' AND t.type = 'text'
    UNION SELECT '' WHERE NOT json_valid({row}.intent_json)
        OR instr({row}.intent_json, '\\u0000') > 0
"""

SQLITE_FORWARD = [
    """
    CREATE TABLE memory_buffer_mentions (
        game_save_id integer NOT NULL,
        owner_id text NOT NULL,
        entity_id text NOT NULL,
        entry_uid integer NOT NULL,
        PRIMARY KEY (game_save_id, owner_id, entity_id, entry_uid)
    ) WITHOUT ROWID
    """,
    f"""
    CREATE TRIGGER buffer_mentions_insert AFTER INSERT ON buffer_entries BEGIN
        INSERT OR IGNORE INTO memory_buffer_mentions
        SELECT new.game_save_id, new.owner_id, m.value, new.uid
        FROM ({SQLITE_NAMED.format(row="new")}) AS m;
    END
    """,
    f"""
    CREATE TRIGGER buffer_mentions_delete AFTER DELETE ON buffer_entries BEGIN
        DELETE FROM memory_buffer_mentions
        WHERE game_save_id = old.game_save_id AND owner_id = old.owner_id
          AND entry_uid = old.uid
          AND entity_id IN ({SQLITE_NAMED.format(row="old")});
    END
    """,
    f"""
    CREATE TRIGGER buffer_mentions_update
    AFTER UPDATE OF intent_json, owner_id, game_save_id ON buffer_entries BEGIN
        DELETE FROM memory_buffer_mentions
        WHERE game_save_id = old.game_save_id AND owner_id = old.owner_id
          AND entry_uid = old.uid
          AND entity_id IN ({SQLITE_NAMED.format(row="old")});
        INSERT OR IGNORE INTO memory_buffer_mentions
        SELECT new.game_save_id, new.owner_id, m.value, new.uid
        FROM ({SQLITE_NAMED.format(row="new")}) AS m;
    END
    """,
    # The rows already stored (a subquery in FROM cannot see `b`: three joins instead).
    """
    INSERT OR IGNORE INTO memory_buffer_mentions
    SELECT b.game_save_id, b.owner_id, a.value, b.uid
    FROM buffer_entries AS b, json_each(CASE WHEN json_valid(b.intent_json)
        THEN b.intent_json ELSE '[]' END) AS a
    WHERE a.key = 'actorId' AND a.type = 'text'
    """,
    """
    INSERT OR IGNORE INTO memory_buffer_mentions
    SELECT b.game_save_id, b.owner_id, t.value, b.uid
    FROM buffer_entries AS b, json_each(CASE WHEN json_valid(b.intent_json)
        THEN b.intent_json ELSE '[]' END) AS a, json_each(a.value) AS t
    WHERE a.key = 'targetIds' AND a.type = 'array' AND t.type = 'text'
    """,
    """
    INSERT OR IGNORE INTO memory_buffer_mentions
    SELECT game_save_id, owner_id, '', uid FROM buffer_entries
    WHERE NOT json_valid(intent_json) OR instr(intent_json, '\\u0000') > 0
    """,
]

SQLITE_BACKWARD = [
    "DROP TRIGGER IF EXISTS buffer_mentions_insert",
    "DROP TRIGGER IF EXISTS buffer_mentions_delete",
    "DROP TRIGGER IF EXISTS buffer_mentions_update",
    "DROP TABLE IF EXISTS memory_buffer_mentions",
]

# PostgreSQL: one function reads an intent as `json` (which keeps duplicate keys, as
# Python's reader sees the last of them and the index must hold every one); anything it
# cannot read is listed as '' — the parse runs in its own exception block so that no intent,
# however hostile, can fail the write that carries it. Statement triggers with transition
# tables: one set-based statement per import batch, not a function call per row.
POSTGRES_FORWARD = [
    """
    CREATE TABLE memory_buffer_mentions (
        game_save_id integer NOT NULL,
        owner_id text NOT NULL,
        entity_id text NOT NULL,
        entry_uid bigint NOT NULL,
        PRIMARY KEY (game_save_id, owner_id, entity_id, entry_uid)
    )
    """,
    """
    CREATE FUNCTION memory_buffer_named(intent text) RETURNS SETOF text
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
    BEGIN
        BEGIN
            RETURN QUERY
            SELECT DISTINCT v FROM (
                SELECT e.value #>> '{}' AS v FROM json_each(intent::json) AS e
                WHERE e.key = 'actorId' AND json_typeof(e.value) = 'string'
                UNION ALL
                SELECT t #>> '{}' FROM json_each(intent::json) AS e,
                    json_array_elements(CASE WHEN json_typeof(e.value) = 'array'
                        THEN e.value ELSE '[]'::json END) AS t
                WHERE e.key = 'targetIds' AND json_typeof(t) = 'string'
            ) AS named;
        EXCEPTION WHEN others THEN
            RETURN NEXT '';
        END;
    END
    $$
    """,
    """
    CREATE FUNCTION memory_buffer_mentions_added() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        INSERT INTO memory_buffer_mentions
        SELECT n.game_save_id, n.owner_id, m, n.uid
        FROM added AS n, LATERAL memory_buffer_named(n.intent_json) AS m
        ON CONFLICT DO NOTHING;
        RETURN NULL;
    END
    $$
    """,
    """
    CREATE FUNCTION memory_buffer_mentions_removed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        DELETE FROM memory_buffer_mentions AS x
        USING removed AS o, LATERAL memory_buffer_named(o.intent_json) AS m
        WHERE x.game_save_id = o.game_save_id AND x.owner_id = o.owner_id
          AND x.entity_id = m AND x.entry_uid = o.uid;
        RETURN NULL;
    END
    $$
    """,
    """
    CREATE FUNCTION memory_buffer_mentions_changed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        DELETE FROM memory_buffer_mentions AS x
        USING removed AS o, LATERAL memory_buffer_named(o.intent_json) AS m
        WHERE x.game_save_id = o.game_save_id AND x.owner_id = o.owner_id
          AND x.entity_id = m AND x.entry_uid = o.uid;
        INSERT INTO memory_buffer_mentions
        SELECT n.game_save_id, n.owner_id, m, n.uid
        FROM added AS n, LATERAL memory_buffer_named(n.intent_json) AS m
        ON CONFLICT DO NOTHING;
        RETURN NULL;
    END
    $$
    """,
    """
    CREATE TRIGGER buffer_mentions_insert AFTER INSERT ON buffer_entries
    REFERENCING NEW TABLE AS added
    FOR EACH STATEMENT EXECUTE FUNCTION memory_buffer_mentions_added()
    """,
    """
    CREATE TRIGGER buffer_mentions_delete AFTER DELETE ON buffer_entries
    REFERENCING OLD TABLE AS removed
    FOR EACH STATEMENT EXECUTE FUNCTION memory_buffer_mentions_removed()
    """,
    """
    CREATE TRIGGER buffer_mentions_update AFTER UPDATE ON buffer_entries
    REFERENCING OLD TABLE AS removed NEW TABLE AS added
    FOR EACH STATEMENT EXECUTE FUNCTION memory_buffer_mentions_changed()
    """,
    """
    INSERT INTO memory_buffer_mentions
    SELECT b.game_save_id, b.owner_id, m, b.uid
    FROM buffer_entries AS b, LATERAL memory_buffer_named(b.intent_json) AS m
    ON CONFLICT DO NOTHING
    """,
]

POSTGRES_BACKWARD = [
    "DROP TRIGGER IF EXISTS buffer_mentions_insert ON buffer_entries",
    "DROP TRIGGER IF EXISTS buffer_mentions_delete ON buffer_entries",
    "DROP TRIGGER IF EXISTS buffer_mentions_update ON buffer_entries",
    "DROP FUNCTION IF EXISTS memory_buffer_mentions_added()",
    "DROP FUNCTION IF EXISTS memory_buffer_mentions_removed()",
    "DROP FUNCTION IF EXISTS memory_buffer_mentions_changed()",
    "DROP FUNCTION IF EXISTS memory_buffer_named(text)",
    "DROP TABLE IF EXISTS memory_buffer_mentions",
]


def forward(apps, schema_editor):
    statements = SQLITE_FORWARD if schema_editor.connection.vendor == "sqlite" else POSTGRES_FORWARD
    for sql in statements:
        schema_editor.execute(sql)


def backward(apps, schema_editor):
    statements = (
        SQLITE_BACKWARD if schema_editor.connection.vendor == "sqlite" else POSTGRES_BACKWARD
    )
    for sql in statements:
        schema_editor.execute(sql)


class Migration(migrations.Migration):
    dependencies = [("memory", "0018_carried_times_kept")]

    operations = [migrations.RunPython(forward, backward)]
