"""The live follower's resume state (follow_omnia, memory.worlds.live)."""

from __future__ import annotations

from django.db import models

from memory.models.saves import Save, SaveScoped


class LiveFollow(SaveScoped):
    """follow_omnia's resume state for the save it feeds from a game's file: how far each
    append-only table has been applied (the file's rowid, and the id that stood there, which
    tells a reused rowid from the row we saw), a content hash of the small tables, the file's
    identity (a new game written over the path is a new file), and the owners whose deleted
    rows still have to be folded out of their projections. Written in the same transaction as
    the rows it describes, so a follower killed at any point resumes without a gap or a
    duplicate. One per save; it goes with its save."""

    # One follow per save, named by the follower (no active-save default).
    game_save = models.OneToOneField(Save, on_delete=models.CASCADE, related_name="+")
    path = models.TextField()
    world_id = models.TextField(default="", blank=True)
    device = models.BigIntegerField(default=0)
    inode = models.BigIntegerField(default=0)
    buffer_mark = models.BigIntegerField(default=0)
    buffer_mark_id = models.TextField(default="", blank=True)
    ledger_mark = models.BigIntegerField(default=0)
    ledger_mark_id = models.TextField(default="", blank=True)
    involved_mark = models.BigIntegerField(default=0)
    small_tables_hash = models.TextField(default="", blank=True)
    pending_refold = models.TextField(default="[]")  # JSON list of owner ids
    version = models.BigIntegerField(default=0)  # one more per applied batch: the pages' cue
    batches = models.BigIntegerField(default=0)
    applied_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)  # the follower is running

    class Meta(SaveScoped.Meta):
        db_table = "memory_live_follows"


class LiveRow(SaveScoped):
    """Which row of an append-only table stood at which rowid of the followed file: the one
    way to name the rows the game deleted without reading every id of the file again."""

    table_name = models.TextField()  # buffer_entries | ledger_entries
    rowid = models.BigIntegerField()
    entry_id = models.TextField()

    class Meta(SaveScoped.Meta):
        db_table = "memory_live_rows"
        constraints = [
            models.UniqueConstraint(
                fields=["game_save", "table_name", "rowid"], name="uniq_live_row_rowid"
            )
        ]
