"""The fold's tables (seed 003): write generations, shard watermarks, quarantined rows, the
session and episode projections, summaries, and the world clock the cycle last closed by.

Like every table of the inspector's own, their relations to mirrored rows carry no database
constraint, so a plain-SQL delete of an object never fails on them; derived rows left behind
are rebuilt away.
"""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from memory.models.saves import SaveScoped


class OwnerState(SaveScoped):
    """Per-owner write generation: every write bumps it; abstract() pins it."""

    pk = models.CompositePrimaryKey("game_save", "owner_id")
    owner_id = models.TextField()
    generation = models.BigIntegerField(default=0)

    class Meta(SaveScoped.Meta):
        db_table = "memory_owner_state"


class ProjectionShard(SaveScoped):
    """One shard of the fold: its watermark, claimed with a row lock by one worker at a time.

    remember() also locks its shard's row while it assigns created_at, so commit order and
    (created_at, id) order agree within a shard and a watermark never skips a late commit.
    """

    pk = models.CompositePrimaryKey("game_save", "shard")
    shard = models.SmallIntegerField()
    last_created_at = models.BigIntegerField(default=0)
    last_id = models.TextField(default="")
    last_assigned_at = models.BigIntegerField(default=0)
    last_cycle_at = models.DateTimeField(null=True, blank=True)
    last_cycle_rows = models.BigIntegerField(default=0)
    # The OMNIA_PROJECTION_SHARDS the rows were partitioned under (0: a store from before this
    # was kept, taken as its number of shard rows). A different setting re-partitions.
    layout = models.SmallIntegerField(default=0)

    class Meta(SaveScoped.Meta):
        db_table = "memory_projection_shards"


class ProjectionProblem(SaveScoped):
    """A canonical row the fold could not fold, quarantined: the fold skips it (its watermark
    moves on) and every other row still folds. A derived row like the projections: rebuild
    re-derives the set, verify compares it. `row_ref` names the row even when its id is NULL
    (SQLite lets a TEXT PRIMARY KEY be NULL): then it is "rowid N"."""

    table_name = models.TextField()
    row_ref = models.TextField()
    row_id = models.TextField(null=True, blank=True)
    world_id = models.TextField(null=True, blank=True)
    owner_id = models.TextField(null=True, blank=True)
    shard = models.SmallIntegerField(null=True, blank=True)
    created_at = models.BigIntegerField(null=True, blank=True)
    reason = models.TextField()
    first_seen = models.DateTimeField(auto_now_add=True)

    class Meta(SaveScoped.Meta):
        db_table = "memory_projection_problems"
        ordering = ["first_seen", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["game_save", "table_name", "row_ref"], name="uniq_problem_row"
            )
        ]

    def __str__(self) -> str:
        return f"{self.table_name} {self.row_ref}: {self.reason}"


class MemorySession(SaveScoped):
    """The session projection: one row per (owner, session key); exact terms only (seed 003)."""

    owner_id = models.TextField()
    session_key = models.TextField()
    first_at = models.TextField()
    last_at = models.TextField()
    memory_count = models.BigIntegerField()
    dialogue_count = models.BigIntegerField()
    last_member_id = models.TextField()
    content_hash = models.TextField()
    # time_key(last_at): UTC, microseconds, so text order is time order ("09:00+09:00" is
    # 00:00Z). Not a term of the session (no hash covers it); the doors order and page by it.
    last_key = models.TextField(default="")

    class Meta(SaveScoped.Meta):
        db_table = "memory_sessions"
        constraints = [
            models.UniqueConstraint(
                fields=["game_save", "owner_id", "session_key"], name="uniq_session_owner_key"
            )
        ]
        indexes = [
            models.Index(
                fields=["game_save", "owner_id", "last_key", "session_key"],
                name="idx_session_owner_lkey",
            )
        ]


class SessionSummary(SaveScoped):
    """Words about a session from the language seam, keyed by the hash they describe."""

    owner_id = models.TextField()
    session_key = models.TextField()
    content_hash = models.TextField()
    text = models.TextField()
    source = models.TextField(default="")
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta(SaveScoped.Meta):
        db_table = "memory_session_summaries"
        constraints = [
            models.UniqueConstraint(
                fields=["game_save", "owner_id", "session_key", "content_hash"],
                name="uniq_summary_session_hash",
            )
        ]


class Episode(SaveScoped):
    """A burst of one owner's memories, cut by gaps in world time (not a fold)."""

    owner_id = models.TextField()
    ordinal = models.IntegerField()
    first_at = models.TextField()
    last_at = models.TextField()
    first_member_id = models.TextField()
    last_member_id = models.TextField()
    member_count = models.BigIntegerField()
    is_open = models.BooleanField(default=True)

    class Meta(SaveScoped.Meta):
        db_table = "memory_episodes"
        constraints = [
            models.UniqueConstraint(
                fields=["game_save", "owner_id", "ordinal"], name="uniq_episode_owner_ordinal"
            )
        ]
        indexes = [
            models.Index(
                fields=["game_save", "owner_id"],
                condition=models.Q(is_open=True),
                name="idx_episode_open",
            )
        ]


class ClockMark(SaveScoped):
    """The world clock the projection cycle last closed episodes by: a clock that moves is an
    input the cycle notices (episodes the new time has passed get closed)."""

    pk = models.CompositePrimaryKey("game_save", "world_id")
    world_id = models.TextField()
    clock_iso = models.TextField()

    class Meta(SaveScoped.Meta):
        db_table = "memory_world_clock_marks"
