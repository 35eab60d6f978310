"""Django models over omnia's tables, and the inspector's own beside them.

The first group mirrors omnia's SQLite schema column for column (PRODUCT.md §2), so an omnia
world file and this database hold the same rows. Their tables are created by raw DDL in
migration 0001 because the cascades must be real database foreign keys (ON DELETE CASCADE):
a row deleted by any client, not only Django, takes its buffer with it. Django therefore
declares those relations DO_NOTHING and lets the database cascade.

The second group is the inspector's: projections, long-term layers, histories, tokens.
Their relations to mirrored rows carry no database constraint (db_constraint=False), so a
plain-SQL delete of an object never fails on them; derived rows left behind are rebuilt away.

One module on purpose, though past 400 lines: Django finds an app's models here, and every
table of the app in one file is the schema a newcomer reads first.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models


class ObjectType(models.TextChoices):
    WORLD = "world"
    ENTITY = "entity"
    LOCATION = "location"


class Visibility(models.TextChoices):
    PUBLIC = "PUBLIC"
    PRIVATE = "PRIVATE"


# --- omnia's tables ---------------------------------------------------------------------


class WorldObject(models.Model):
    id = models.TextField(primary_key=True)
    type = models.TextField(choices=ObjectType.choices)
    world = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.DO_NOTHING,
        db_column="world_id",
        related_name="members",
    )
    clock_iso = models.TextField(null=True, blank=True)
    location_id = models.TextField(null=True, blank=True)
    aliases_json = models.TextField(null=True, blank=True)
    connections_json = models.TextField(null=True, blank=True)
    is_agent = models.IntegerField(null=True, blank=True)
    # Where the row stood in the file or scenario it came from (omnia's rowid order), so an
    # export writes rows in the order the game wrote them; null for rows made here.
    file_order = models.IntegerField(null=True, blank=True)

    class Meta:
        db_table = "objects"
        managed = True
        ordering = ["id"]
        verbose_name = "object"

    def __str__(self) -> str:
        return self.id

    @property
    def world_id_or_self(self) -> str:
        return self.id if self.type == ObjectType.WORLD else (self.world_id or self.id)


class Entity(WorldObject):
    """Entities only, for the admin; the same `objects` rows."""

    class Meta:
        proxy = True
        verbose_name_plural = "entities"


class Attribute(models.Model):
    pk = models.CompositePrimaryKey("object_id", "name")
    object = models.ForeignKey(
        WorldObject, on_delete=models.DO_NOTHING, db_column="object_id", related_name="attributes"
    )
    name = models.TextField()
    value = models.TextField()
    visibility = models.TextField(choices=Visibility.choices)
    file_order = models.IntegerField(null=True, blank=True)  # as on WorldObject

    class Meta:
        db_table = "attributes"

    def __str__(self) -> str:
        return f"{self.object_id}.{self.name}"


class AttributeAcl(models.Model):
    pk = models.CompositePrimaryKey("object_id", "attribute_name", "entity_id")
    # The database constraint is the composite (object_id, attribute_name) -> attributes.
    object = models.ForeignKey(
        WorldObject,
        on_delete=models.DO_NOTHING,
        db_column="object_id",
        db_constraint=False,
        related_name="attribute_acl",
    )
    attribute_name = models.TextField()
    entity_id = models.TextField()
    file_order = models.IntegerField(null=True, blank=True)  # as on WorldObject

    class Meta:
        db_table = "attribute_acl"


class BufferEntry(models.Model):
    """A canonical memory row: omnia's buffer entry plus the fold's bookkeeping (§6)."""

    id = models.TextField(primary_key=True)
    owner = models.ForeignKey(
        WorldObject,
        on_delete=models.DO_NOTHING,
        db_column="owner_id",
        related_name="buffer_entries",
    )
    timestamp = models.TextField()
    location_id = models.TextField(null=True, blank=True)
    intent_json = models.TextField()
    outcome_json = models.TextField(null=True, blank=True)
    pinned = models.IntegerField(null=True, blank=True, default=0)
    # Engine write time in integer microseconds since the epoch: exact, identical on every
    # backend, and with `id` the fold order. Assigned under the shard lock (see remember).
    created_at = models.BigIntegerField()
    shard = models.SmallIntegerField(default=0)
    conversation_id = models.TextField(null=True, blank=True)
    retracted_at = models.DateTimeField(null=True, blank=True)
    abstracted_into = models.TextField(null=True, blank=True)
    # The timestamp names no instant: a row omnia wrote that import keeps as it is, shown
    # undeliverable and kept out of time arithmetic (the write doors refuse such a time).
    untimed = models.BooleanField(db_default=False)

    class Meta:
        db_table = "buffer_entries"
        verbose_name_plural = "buffer entries"

    def __str__(self) -> str:
        return self.id


class LedgerEntry(models.Model):
    """Long-term memory: omnia's ledger row, extended with scope, slug and names (seed 004).

    Omnia's rows live in their owner's write home; layer entries have no owner.
    """

    id = models.TextField(primary_key=True)
    owner = models.ForeignKey(
        WorldObject,
        null=True,
        blank=True,
        on_delete=models.DO_NOTHING,
        db_column="owner_id",
        related_name="ledger_entries",
    )
    timestamp = models.TextField()
    location_id = models.TextField(null=True, blank=True)
    content = models.TextField()
    quotes_json = models.TextField(null=True, blank=True)
    importance = models.IntegerField()
    embedding = models.BinaryField(null=True, blank=True)
    scope_id = models.TextField()
    slug = models.TextField()
    name = models.TextField(null=True, blank=True)
    draft_name = models.TextField(null=True, blank=True)
    withheld = models.BooleanField(default=False)
    created_at = models.BigIntegerField()
    # The rollup that absorbed this entry (seed 003 rule 10: the per-row mark abstract()
    # writes beside the edge, as on buffer rows). Not omnia's column: export leaves it out.
    abstracted_into = models.TextField(null=True, blank=True)

    class Meta:
        db_table = "ledger_entries"
        verbose_name_plural = "ledger entries"

    def __str__(self) -> str:
        return self.id


class LedgerInvolvedEntity(models.Model):
    pk = models.CompositePrimaryKey("entry_id", "entity_id")
    entry = models.ForeignKey(
        LedgerEntry, on_delete=models.DO_NOTHING, db_column="entry_id", related_name="involved"
    )
    entity_id = models.TextField()
    file_order = models.IntegerField(null=True, blank=True)  # as on WorldObject

    class Meta:
        db_table = "ledger_involved_entities"


# --- the inspector's tables -----------------------------------------------------------------


class WorldSource(models.Model):
    """Where a world came from, so export can write the same era back."""

    world_id = models.TextField(primary_key=True)
    era = models.TextField()  # "v1" (omnia 74ffb45) or "v2" (later omnia)
    kind = models.TextField()  # "sqlite", "scenario", "demo"
    source_path = models.TextField(blank=True, default="")
    source_sha256 = models.TextField(blank=True, default="")
    name = models.TextField(blank=True, default="")
    imported_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "memory_world_sources"


class OwnerState(models.Model):
    """Per-owner write generation: every write bumps it; abstract() pins it."""

    owner_id = models.TextField(primary_key=True)
    generation = models.BigIntegerField(default=0)

    class Meta:
        db_table = "memory_owner_state"


class ProjectionShard(models.Model):
    """One shard of the fold: its watermark, claimed with a row lock by one worker at a time.

    remember() also locks its shard's row while it assigns created_at, so commit order and
    (created_at, id) order agree within a shard and a watermark never skips a late commit.
    """

    shard = models.SmallIntegerField(primary_key=True)
    last_created_at = models.BigIntegerField(default=0)
    last_id = models.TextField(default="")
    last_assigned_at = models.BigIntegerField(default=0)
    last_cycle_at = models.DateTimeField(null=True, blank=True)
    last_cycle_rows = models.BigIntegerField(default=0)
    # The OMNIA_PROJECTION_SHARDS the rows were partitioned under (0: a store from before this
    # was kept, taken as its number of shard rows). A different setting re-partitions.
    layout = models.SmallIntegerField(default=0)

    class Meta:
        db_table = "memory_projection_shards"


class ProjectionProblem(models.Model):
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

    class Meta:
        db_table = "memory_projection_problems"
        ordering = ["first_seen", "id"]
        constraints = [
            models.UniqueConstraint(fields=["table_name", "row_ref"], name="uniq_problem_row")
        ]

    def __str__(self) -> str:
        return f"{self.table_name} {self.row_ref}: {self.reason}"


class MemorySession(models.Model):
    """The session projection: one row per (owner, session key); exact terms only (seed 003)."""

    owner = models.ForeignKey(
        WorldObject, on_delete=models.CASCADE, db_constraint=False, related_name="+"
    )
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

    class Meta:
        db_table = "memory_sessions"
        constraints = [
            models.UniqueConstraint(fields=["owner", "session_key"], name="uniq_session_owner_key")
        ]
        indexes = [
            models.Index(fields=["owner", "last_key", "session_key"], name="idx_session_owner_lkey")
        ]


class SessionSummary(models.Model):
    """Words about a session from the language seam, keyed by the hash they describe."""

    owner_id = models.TextField()
    session_key = models.TextField()
    content_hash = models.TextField()
    text = models.TextField()
    source = models.TextField(default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "memory_session_summaries"
        constraints = [
            models.UniqueConstraint(
                fields=["owner_id", "session_key", "content_hash"], name="uniq_summary_session_hash"
            )
        ]


class Episode(models.Model):
    """A burst of one owner's memories, cut by gaps in world time (not a fold)."""

    owner = models.ForeignKey(
        WorldObject, on_delete=models.CASCADE, db_constraint=False, related_name="+"
    )
    ordinal = models.IntegerField()
    first_at = models.TextField()
    last_at = models.TextField()
    first_member_id = models.TextField()
    last_member_id = models.TextField()
    member_count = models.BigIntegerField()
    is_open = models.BooleanField(default=True)

    class Meta:
        db_table = "memory_episodes"
        constraints = [
            models.UniqueConstraint(fields=["owner", "ordinal"], name="uniq_episode_owner_ordinal")
        ]
        indexes = [
            models.Index(
                fields=["owner"], condition=models.Q(is_open=True), name="idx_episode_open"
            )
        ]


class Layer(models.Model):
    """A named read-only long-term scope (faction lore, world canon…)."""

    id = models.TextField(primary_key=True)
    world = models.ForeignKey(
        WorldObject,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        db_constraint=False,
        related_name="+",
    )
    title = models.TextField(blank=True, default="")

    class Meta:
        db_table = "memory_layers"
        ordering = ["id"]

    def __str__(self) -> str:
        return self.id


class LayerSubscription(models.Model):
    entity = models.ForeignKey(
        WorldObject, on_delete=models.CASCADE, db_constraint=False, related_name="subscriptions"
    )
    layer = models.ForeignKey(Layer, on_delete=models.CASCADE, related_name="subscribers")
    position = models.IntegerField()

    class Meta:
        db_table = "memory_layer_subscriptions"
        ordering = ["entity_id", "position"]
        constraints = [
            models.UniqueConstraint(fields=["entity", "layer"], name="uniq_subscription"),
            models.UniqueConstraint(fields=["entity", "position"], name="uniq_subscription_pos"),
        ]


class AbstractionEdge(models.Model):
    """member --abstracted_into--> rollup. A member is absorbed at most once."""

    member_id = models.TextField(unique=True)
    member_kind = models.TextField()  # "buffer" or "ledger"
    rollup_id = models.TextField(db_index=True)
    owner_id = models.TextField(db_index=True)
    created_at = models.BigIntegerField()

    class Meta:
        db_table = "memory_abstraction_edges"


class AliasChange(models.Model):
    """History of one viewer's alias for one target: who, when, before -> after."""

    viewer_id = models.TextField(db_index=True)
    target_id = models.TextField()
    before = models.TextField(null=True, blank=True)
    after = models.TextField(null=True, blank=True)
    changed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    changed_at = models.DateTimeField(auto_now_add=True)
    source = models.TextField(default="")

    class Meta:
        db_table = "memory_alias_changes"
        ordering = ["-changed_at", "-id"]

    def __str__(self) -> str:
        return f"{self.viewer_id}→{self.target_id}: {self.before!r} → {self.after!r}"


class AuditLog(models.Model):
    """One row per write through any door."""

    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # Who, in words, when no account did it: "cli:<os user>" for a management command.
    actor_label = models.TextField(default="", blank=True)
    at = models.DateTimeField(auto_now_add=True)
    action = models.TextField()
    target = models.TextField(default="")
    before_json = models.TextField(null=True, blank=True)
    after_json = models.TextField(null=True, blank=True)

    class Meta:
        db_table = "memory_audit_log"
        ordering = ["-at", "-id"]

    def __str__(self) -> str:
        return f"{self.action} {self.target}"


class ApiToken(models.Model):
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    name = models.TextField()
    prefix = models.TextField(db_index=True)
    key_hash = models.TextField(unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    # Past this moment the token authenticates nothing; null = it never expires.
    expires_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "memory_api_tokens"

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"


class LeakScan(models.Model):
    """The leak-findings projection's bookkeeping, one row per viewer: the fingerprint of the
    inputs its stored findings were computed from, and whether a fold since has moved its
    prompt (new rows change the recent buffer and the session digest)."""

    viewer_id = models.TextField(primary_key=True)
    world_id = models.TextField(null=True, blank=True)
    fingerprint = models.TextField(default="")
    stale = models.BooleanField(default=True)
    scanned_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "memory_leak_scans"
        indexes = [models.Index(fields=["stale"], name="leak_scans_stale")]


class LeakFinding(models.Model):
    """One stored leak finding in one viewer's prompt context (PRODUCT §7)."""

    viewer_id = models.TextField()
    ordinal = models.IntegerField()  # the scanner's order within the viewer's prompt
    section = models.TextField()
    kind = models.TextField()
    start = models.IntegerField()
    end = models.IntegerField()
    text = models.TextField()
    entity_id = models.TextField(null=True, blank=True)
    attribute_name = models.TextField(null=True, blank=True)
    reason = models.TextField()
    # One row per distinct leak in a section (issue 13 item 10): start/end are its first
    # occurrence; every occurrence is kept as [[start, end, source row id], ...].
    world_id = models.TextField(null=True, blank=True)
    count = models.IntegerField(default=1)
    source_id = models.TextField(null=True, blank=True)
    occurrences_json = models.TextField(default="[]")
    context_before = models.TextField(default="")
    context_after = models.TextField(default="")

    class Meta:
        db_table = "memory_leak_findings"
        indexes = [models.Index(fields=["viewer_id", "ordinal"], name="leak_findings_viewer")]


class LeakAcceptance(models.Model):
    """An editor's "expected, not a leak" for one finding, kept by what identifies it to a
    person (viewer, section, kind, text): it survives rescans while those are unchanged."""

    viewer_id = models.TextField()
    section = models.TextField()
    kind = models.TextField()
    text = models.TextField()
    reason = models.TextField()
    accepted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    accepted_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "memory_leak_acceptances"
        constraints = [
            models.UniqueConstraint(
                fields=["viewer_id", "section", "kind", "text"], name="leak_acceptance_once"
            )
        ]

    def __str__(self) -> str:
        return f"{self.viewer_id} [{self.section}] {self.kind} {self.text!r}"


class ClockMark(models.Model):
    """The world clock the projection cycle last closed episodes by: a clock that moves is an
    input the cycle notices (episodes the new time has passed get closed)."""

    world_id = models.TextField(primary_key=True)
    clock_iso = models.TextField()

    class Meta:
        db_table = "memory_world_clock_marks"


# --- the live follower (follow_omnia) ---------------------------------------------------------


class LiveFollow(models.Model):
    """follow_omnia's resume state for one followed save file: how far each append-only table
    has been applied (the file's rowid, and the id that stood there, which tells a reused rowid
    from the row we saw), a content hash of the small tables, the file's identity (a new game
    written over the path is a new file), and the owners whose deleted rows still have to be
    folded out of their projections. Written in the same transaction as the rows it describes,
    so a follower killed at any point resumes without a gap or a duplicate."""

    path = models.TextField(unique=True)
    name = models.TextField(default="", blank=True)
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

    class Meta:
        db_table = "memory_live_follows"


class LiveRow(models.Model):
    """Which row of an append-only table stood at which rowid of the followed file: the one
    way to name the rows the game deleted without reading every id of the file again."""

    follow = models.ForeignKey(LiveFollow, on_delete=models.CASCADE, related_name="+")
    table_name = models.TextField()  # buffer_entries | ledger_entries
    rowid = models.BigIntegerField()
    entry_id = models.TextField()

    class Meta:
        db_table = "memory_live_rows"
        constraints = [
            models.UniqueConstraint(
                fields=["follow", "table_name", "rowid"], name="uniq_live_row_rowid"
            )
        ]
