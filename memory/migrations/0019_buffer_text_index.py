"""The buffer's text index: a search for a word reads only the rows that hold it (issue 25).

The words of a row are its stored text as it stands: the intent and outcome JSON, whose
strings are what a line says and whose ids are who it names. Raw, not decoded, so one
expression serves both databases and never fails on a row the fold would quarantine. A JSON
escape that joins a letter to a word (`\\n`, `\\u2019`) would hide the word after it: such a row
also carries the word `zzanyword`, and every search reads it.

SQLite: an FTS5 table (unicode61 words; no positions, no sizes) over the view `buffer_words`,
kept by triggers on buffer_entries; the view alone says what a row's words are, so the
triggers, the bulk doors' one-statement fill and FTS5's `rebuild` and `integrity-check` cannot
disagree.
Its words also carry `zzowner<save>x<hex of owner>`, so one lookup answers for one viewer.
PostgreSQL: a GIN index over the function `buffer_words`, kept by the database itself.

A later migration that makes SQLite remake buffer_entries (an AlterField does) drops the
triggers with the old table: create them again there (tests/test_text_index.py fails until).
"""

from django.db import migrations

SQLITE_VIEW = r"""
CREATE VIEW buffer_words (uid, game_save_id, words) AS
SELECT uid, game_save_id,
    intent_json || ' ' || coalesce(outcome_json, '')
    || ' zzowner' || game_save_id || 'x' || hex(owner_id)
    || CASE WHEN intent_json GLOB '*\[bfnrtu]*' OR outcome_json GLOB '*\[bfnrtu]*'
            THEN ' zzanyword' ELSE '' END
FROM buffer_entries
"""
# The words go in after a row lands and come out (FTS5 needs them to find the entries to
# remove) while it still stands.
SQLITE_TRIGGERS = {
    "buffer_words_insert": """
CREATE TRIGGER buffer_words_insert AFTER INSERT ON buffer_entries BEGIN
    INSERT INTO buffer_fts (rowid, words) SELECT uid, words FROM buffer_words WHERE uid = new.uid;
END""",
    "buffer_words_delete": """
CREATE TRIGGER buffer_words_delete BEFORE DELETE ON buffer_entries BEGIN
    INSERT INTO buffer_fts (buffer_fts, rowid, words)
    SELECT 'delete', uid, words FROM buffer_words WHERE uid = old.uid;
END""",
    "buffer_words_update_out": """
CREATE TRIGGER buffer_words_update_out
BEFORE UPDATE OF uid, game_save_id, owner_id, intent_json, outcome_json ON buffer_entries BEGIN
    INSERT INTO buffer_fts (buffer_fts, rowid, words)
    SELECT 'delete', uid, words FROM buffer_words WHERE uid = old.uid;
END""",
    "buffer_words_update_in": """
CREATE TRIGGER buffer_words_update_in
AFTER UPDATE OF uid, game_save_id, owner_id, intent_json, outcome_json ON buffer_entries BEGIN
    INSERT INTO buffer_fts (rowid, words) SELECT uid, words FROM buffer_words WHERE uid = new.uid;
END""",
}
SQLITE_UP = [
    SQLITE_VIEW,
    "CREATE VIRTUAL TABLE buffer_fts USING fts5(words, content='buffer_words', "
    "content_rowid='uid', detail='none', columnsize=0, tokenize='unicode61')",
    # How many rows each word is in: what a search looks at before choosing its way.
    "CREATE VIRTUAL TABLE buffer_fts_terms USING fts5vocab(buffer_fts, 'row')",
    *SQLITE_TRIGGERS.values(),
    "INSERT INTO buffer_fts (buffer_fts) VALUES ('rebuild')",  # the rows already here
]
SQLITE_DOWN = [
    *(f"DROP TRIGGER {name}" for name in SQLITE_TRIGGERS),
    "DROP TABLE buffer_fts_terms",
    "DROP TABLE buffer_fts",
    "DROP VIEW buffer_words",
]

# The words straight into a tsvector, no parser between: it reads "12e4x" as a number and a
# word and a host or a path as one word, where a search reads one word, or several. A row too
# long for a tsvector (1 MB), or with a run of letters longer than a word may be (2,047 bytes:
# 500 letters of up to 4), is read by every search instead. PL/pgSQL and a high cost: never
# inlined into the query, so the planner weighs it as what it is (some 40 us a row) and reads
# the index rather than computing the words of every row of a viewer as a filter.
POSTGRES_UP = [
    r"""
CREATE FUNCTION buffer_words(intent text, outcome text) RETURNS tsvector
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE COST 1000 AS $$
DECLARE
    t text := intent || ' ' || coalesce(outcome, '');
BEGIN
    IF length(t) > 100000 OR (length(t) > 500 AND t ~ '([[:alnum:]]{100}){5}') THEN
        RETURN array_to_tsvector(ARRAY['zzanyword']);
    END IF;
    RETURN array_to_tsvector(
        array_remove(regexp_split_to_array(lower(t), '[^[:alnum:]]+'), '')
        || CASE WHEN t ~ '\\[bfnrtu]' THEN ARRAY['zzanyword'] ELSE ARRAY[]::text[] END
    );
END
$$""",
    "CREATE INDEX buffer_entries_words ON buffer_entries "
    "USING gin (buffer_words(intent_json, outcome_json))",
]
POSTGRES_DOWN = [
    "DROP INDEX buffer_entries_words",
    "DROP FUNCTION buffer_words(text, text)",
]


def _run(statements):
    def run(apps, schema_editor):
        vendor = schema_editor.connection.vendor
        for sql in statements[vendor]:
            schema_editor.execute(sql, params=None)

    return run


class Migration(migrations.Migration):
    dependencies = [("memory", "0018_carried_times_kept")]

    operations = [
        migrations.RunPython(
            _run({"sqlite": SQLITE_UP, "postgresql": POSTGRES_UP}),
            _run({"sqlite": SQLITE_DOWN, "postgresql": POSTGRES_DOWN}),
        )
    ]
