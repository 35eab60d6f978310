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
from django.utils import timezone

from memory.active_save import SaveScopedManager, plain_active_id, saves_changed


class ObjectType(models.TextChoices):
    WORLD = "world"
    ENTITY = "entity"
    LOCATION = "location"


class Visibility(models.TextChoices):
    PUBLIC = "PUBLIC"
    PRIVATE = "PRIVATE"


# --- saves ---------------------------------------------------------------------------------


class SaveQuerySet(models.QuerySet):
    def live(self):
        """Saves people see: not one a `--replace` has just retired (purged soon after)."""
        return self.filter(retired_at__isnull=True)


class Save(models.Model):
    """A world as one file or scenario brought it: a playthrough, under a name people choose.

    Every row of a world belongs to exactly one save, and ids are unique within a save only,
    so two playthroughs of one scenario live side by side. The rest is provenance: where the
    rows came from, who brought them, with which command, and how many of each there were.
    """

    name = models.TextField(unique=True)
    kind = models.TextField()  # "sqlite", "scenario", "demo"
    era = models.TextField(default="")  # "v1" (omnia 74ffb45) or "v2" (later omnia)
    source_name = models.TextField(default="", blank=True)
    source_path = models.TextField(default="", blank=True)
    source_size = models.BigIntegerField(null=True, blank=True)
    source_sha256 = models.TextField(default="", blank=True)
    title = models.TextField(default="", blank=True)  # the scenario's own name, if it has one
    world_ids_json = models.TextField(default="[]")
    counts_json = models.TextField(default="{}")
    command = models.TextField(default="", blank=True)
    imported_at = models.DateTimeField(default=timezone.now)
    imported_by = models.TextField(default="", blank=True)
    # Set when `--replace` swapped a new save in under this one's name: no page shows it, and
    # it is purged once no request that began before the swap can still be reading it.
    retired_at = models.DateTimeField(null=True, blank=True)

    objects = SaveQuerySet.as_manager()

    class Meta:
        db_table = "memory_saves"
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def save(self, *args, **kwargs):
        super().save(*args, **kwargs)
        saves_changed()

    def delete(self, *args, **kwargs):
        result = super().delete(*args, **kwargs)
        saves_changed()
        return result


def _save_column(on_delete=models.CASCADE, **kwargs) -> models.ForeignKey:
    """The save a row belongs to; the active save unless given (active_save.py)."""
    return models.ForeignKey(
        Save, on_delete=on_delete, default=plain_active_id, related_name="+", **kwargs
    )


# --- omnia's tables ---------------------------------------------------------------------


class WorldObject(models.Model):
    # A row's own key (the admin needs one column); people and omnia see `id`, unique per save.
    uid = models.BigAutoField(primary_key=True)
    game_save = _save_column(models.DO_NOTHING)
    id = models.TextField()
    type = models.TextField(choices=ObjectType.choices)
    world_id = models.TextField(null=True, blank=True)
    clock_iso = models.TextField(null=True, blank=True)
    location_id = models.TextField(null=True, blank=True)
    aliases_json = models.TextField(null=True, blank=True)
    connections_json = models.TextField(null=True, blank=True)
    is_agent = models.IntegerField(null=True, blank=True)
    # Where the row stood in the file or scenario it came from (omnia's rowid order), so an
    # export writes rows in the order the game wrote them; null for rows made here.
    file_order = models.IntegerField(null=True, blank=True)

    objects = SaveScopedManager()
    every_save = models.Manager()

    class Meta:
        db_table = "objects"
        managed = True
        ordering = ["id"]
        verbose_name = "object"
        base_manager_name = "every_save"
        constraints = [models.UniqueConstraint(fields=["game_save", "id"], name="objects_save_id")]

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
    pk = models.CompositePrimaryKey("game_save", "object_id", "name")
    game_save = _save_column(models.DO_NOTHING)
    object_id = models.TextField()
    name = models.TextField()
    value = models.TextField()
    visibility = models.TextField(choices=Visibility.choices)
    file_order = models.IntegerField(null=True, blank=True)  # as on WorldObject

    objects = SaveScopedManager()
    every_save = models.Manager()

    class Meta:
        db_table = "attributes"
        base_manager_name = "every_save"

    def __str__(self) -> str:
        return f"{self.object_id}.{self.name}"


class AttributeAcl(models.Model):
    pk = models.CompositePrimaryKey("game_save", "object_id", "attribute_name", "entity_id")
    game_save = _save_column(models.DO_NOTHING)
    # The database constraint is the composite (save, object_id, attribute_name) -> attributes.
    object_id = models.TextField()
    attribute_name = models.TextField()
    entity_id = models.TextField()
    file_order = models.IntegerField(null=True, blank=True)  # as on WorldObject

    objects = SaveScopedManager()
    every_save = models.Manager()

    class Meta:
        db_table = "attribute_acl"
        base_manager_name = "every_save"


class BufferEntry(models.Model):
    """A canonical memory row: omnia's buffer entry plus the fold's bookkeeping (§6)."""

    uid = models.BigAutoField(primary_key=True)  # as on WorldObject
    game_save = _save_column(models.DO_NOTHING)
    id = models.TextField()
    owner_id = models.TextField()
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

    objects = SaveScopedManager()
    every_save = models.Manager()

    class Meta:
        db_table = "buffer_entries"
        verbose_name_plural = "buffer entries"
        base_manager_name = "every_save"
        constraints = [
            models.UniqueConstraint(fields=["game_save", "id"], name="buffer_entries_save_id")
        ]

    def __str__(self) -> str:
        return self.id


class LedgerEntry(models.Model):
    """Long-term memory: omnia's ledger row, extended with scope, slug and names (seed 004).

    Omnia's rows live in their owner's write home; layer entries have no owner.
    """

    uid = models.BigAutoField(primary_key=True)  # as on WorldObject
    game_save = _save_column(models.DO_NOTHING)
    id = models.TextField()
    owner_id = models.TextField(null=True, blank=True)
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

    objects = SaveScopedManager()
    every_save = models.Manager()

    class Meta:
        db_table = "ledger_entries"
        verbose_name_plural = "ledger entries"
        base_manager_name = "every_save"
        constraints = [
            models.UniqueConstraint(fields=["game_save", "id"], name="ledger_entries_save_id")
        ]

    def __str__(self) -> str:
        return self.id


class LedgerInvolvedEntity(models.Model):
    pk = models.CompositePrimaryKey("game_save", "entry_id", "entity_id")
    game_save = _save_column(models.DO_NOTHING)
    entry_id = models.TextField()
    entity_id = models.TextField()
    file_order = models.IntegerField(null=True, blank=True)  # as on WorldObject

    objects = SaveScopedManager()
    every_save = models.Manager()

    class Meta:
        db_table = "ledger_involved_entities"
        base_manager_name = "every_save"


# --- the inspector's tables -----------------------------------------------------------------


class OwnerState(models.Model):
    """Per-owner write generation: every write bumps it; abstract() pins it."""

    pk = models.CompositePrimaryKey("game_save", "owner_id")
    game_save = _save_column()
    owner_id = models.TextField()
    generation = models.BigIntegerField(default=0)

    objects = SaveScopedManager()
    every_save = models.Manager()

    class Meta:
        db_table = "memory_owner_state"
        base_manager_name = "every_save"


class ProjectionShard(models.Model):
    """One shard of the fold: its watermark, claimed with a row lock by one worker at a time.

    remember() also locks its shard's row while it assigns created_at, so commit order and
    (created_at, id) order agree within a shard and a watermark never skips a late commit.
    """

    pk = models.CompositePrimaryKey("game_save", "shard")
    game_save = _save_column()
    shard = models.SmallIntegerField()
    last_created_at = models.BigIntegerField(default=0)
    last_id = models.TextField(default="")
    last_assigned_at = models.BigIntegerField(default=0)
    last_cycle_at = models.DateTimeField(null=True, blank=True)
    last_cycle_rows = models.BigIntegerField(default=0)
    # The OMNIA_PROJECTION_SHARDS the rows were partitioned under (0: a store from before this
    # was kept, taken as its number of shard rows). A different setting re-partitions.
    layout = models.SmallIntegerField(default=0)

    objects = SaveScopedManager()
    every_save = models.Manager()

    class Meta:
        db_table = "memory_projection_shards"
        base_manager_name = "every_save"


class ProjectionProblem(models.Model):
    """A canonical row the fold could not fold, quarantined: the fold skips it (its watermark
    moves on) and every other row still folds. A derived row like the projections: rebuild
    re-derives the set, verify compares it. `row_ref` names the row even when its id is NULL
    (SQLite lets a TEXT PRIMARY KEY be NULL): then it is "rowid N"."""

    game_save = _save_column()
    table_name = models.TextField()
    row_ref = models.TextField()
    row_id = models.TextField(null=True, blank=True)
    world_id = models.TextField(null=True, blank=True)
    owner_id = models.TextField(null=True, blank=True)
    shard = models.SmallIntegerField(null=True, blank=True)
    created_at = models.BigIntegerField(null=True, blank=True)
    reason = models.TextField()
    first_seen = models.DateTimeField(auto_now_add=True)

    objects = SaveScopedManager()
    every_save = models.Manager()

    class Meta:
        db_table = "memory_projection_problems"
        ordering = ["first_seen", "id"]
        base_manager_name = "every_save"
        constraints = [
            models.UniqueConstraint(
                fields=["game_save", "table_name", "row_ref"], name="uniq_problem_row"
            )
        ]

    def __str__(self) -> str:
        return f"{self.table_name} {self.row_ref}: {self.reason}"


class MemorySession(models.Model):
    """The session projection: one row per (owner, session key); exact terms only (seed 003)."""

    game_save = _save_column()
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

    objects = SaveScopedManager()
    every_save = models.Manager()

    class Meta:
        db_table = "memory_sessions"
        base_manager_name = "every_save"
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


class SessionSummary(models.Model):
    """Words about a session from the language seam, keyed by the hash they describe."""

    game_save = _save_column()
    owner_id = models.TextField()
    session_key = models.TextField()
    content_hash = models.TextField()
    text = models.TextField()
    source = models.TextField(default="")
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    objects = SaveScopedManager()
    every_save = models.Manager()

    class Meta:
        db_table = "memory_session_summaries"
        base_manager_name = "every_save"
        constraints = [
            models.UniqueConstraint(
                fields=["game_save", "owner_id", "session_key", "content_hash"],
                name="uniq_summary_session_hash",
            )
        ]


class Episode(models.Model):
    """A burst of one owner's memories, cut by gaps in world time (not a fold)."""

    game_save = _save_column()
    owner_id = models.TextField()
    ordinal = models.IntegerField()
    first_at = models.TextField()
    last_at = models.TextField()
    first_member_id = models.TextField()
    last_member_id = models.TextField()
    member_count = models.BigIntegerField()
    is_open = models.BooleanField(default=True)

    objects = SaveScopedManager()
    every_save = models.Manager()

    class Meta:
        db_table = "memory_episodes"
        base_manager_name = "every_save"
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


class Layer(models.Model):
    """A named read-only long-term scope (faction lore, world canon…)."""

    pk = models.CompositePrimaryKey("game_save", "id")
    game_save = _save_column()
    id = models.TextField()
    world_id = models.TextField(null=True, blank=True)
    title = models.TextField(blank=True, default="")

    objects = SaveScopedManager()
    every_save = models.Manager()

    class Meta:
        db_table = "memory_layers"
        ordering = ["id"]
        base_manager_name = "every_save"

    def __str__(self) -> str:
        return self.id


class LayerSubscription(models.Model):
    game_save = _save_column()
    entity_id = models.TextField()
    layer_id = models.TextField()
    position = models.IntegerField()

    objects = SaveScopedManager()
    every_save = models.Manager()

    class Meta:
        db_table = "memory_layer_subscriptions"
        ordering = ["entity_id", "position"]
        base_manager_name = "every_save"
        constraints = [
            models.UniqueConstraint(
                fields=["game_save", "entity_id", "layer_id"], name="uniq_subscription"
            ),
            models.UniqueConstraint(
                fields=["game_save", "entity_id", "position"], name="uniq_subscription_pos"
            ),
        ]


class AbstractionEdge(models.Model):
    """member --abstracted_into--> rollup. A member is absorbed at most once."""

    game_save = _save_column()
    member_id = models.TextField()
    member_kind = models.TextField()  # "buffer" or "ledger"
    rollup_id = models.TextField(db_index=True)
    owner_id = models.TextField(db_index=True)
    created_at = models.BigIntegerField()

    objects = SaveScopedManager()
    every_save = models.Manager()

    class Meta:
        db_table = "memory_abstraction_edges"
        base_manager_name = "every_save"
        constraints = [
            models.UniqueConstraint(fields=["game_save", "member_id"], name="uniq_edge_member")
        ]


class AliasChange(models.Model):
    """History of one viewer's alias for one target: who, when, before -> after."""

    game_save = _save_column()
    viewer_id = models.TextField(db_index=True)
    target_id = models.TextField()
    before = models.TextField(null=True, blank=True)
    after = models.TextField(null=True, blank=True)
    changed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    changed_at = models.DateTimeField(default=timezone.now, editable=False)
    source = models.TextField(default="")

    objects = SaveScopedManager()
    every_save = models.Manager()

    class Meta:
        db_table = "memory_alias_changes"
        ordering = ["-changed_at", "-id"]
        base_manager_name = "every_save"

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

    pk = models.CompositePrimaryKey("game_save", "viewer_id")
    game_save = _save_column()
    viewer_id = models.TextField()
    world_id = models.TextField(null=True, blank=True)
    fingerprint = models.TextField(default="")
    stale = models.BooleanField(default=True)
    scanned_at = models.DateTimeField(null=True, blank=True)

    objects = SaveScopedManager()
    every_save = models.Manager()

    class Meta:
        db_table = "memory_leak_scans"
        base_manager_name = "every_save"
        indexes = [models.Index(fields=["game_save", "stale"], name="leak_scans_stale")]


class LeakFinding(models.Model):
    """One stored leak finding in one viewer's prompt context (PRODUCT §7)."""

    game_save = _save_column()
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

    objects = SaveScopedManager()
    every_save = models.Manager()

    class Meta:
        db_table = "memory_leak_findings"
        base_manager_name = "every_save"
        indexes = [
            models.Index(fields=["game_save", "viewer_id", "ordinal"], name="leak_findings_viewer")
        ]


class LeakAcceptance(models.Model):
    """An editor's "expected, not a leak" for one finding, kept by what identifies it to a
    person (viewer, section, kind, text): it survives rescans while those are unchanged."""

    game_save = _save_column()
    viewer_id = models.TextField()
    section = models.TextField()
    kind = models.TextField()
    text = models.TextField()
    reason = models.TextField()
    accepted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    accepted_at = models.DateTimeField(default=timezone.now, editable=False)

    objects = SaveScopedManager()
    every_save = models.Manager()

    class Meta:
        db_table = "memory_leak_acceptances"
        base_manager_name = "every_save"
        constraints = [
            models.UniqueConstraint(
                fields=["game_save", "viewer_id", "section", "kind", "text"],
                name="leak_acceptance_once",
            )
        ]

    def __str__(self) -> str:
        return f"{self.viewer_id} [{self.section}] {self.kind} {self.text!r}"


class ClockMark(models.Model):
    """The world clock the projection cycle last closed episodes by: a clock that moves is an
    input the cycle notices (episodes the new time has passed get closed)."""

    pk = models.CompositePrimaryKey("game_save", "world_id")
    game_save = _save_column()
    world_id = models.TextField()
    clock_iso = models.TextField()

    objects = SaveScopedManager()
    every_save = models.Manager()

    class Meta:
        db_table = "memory_world_clock_marks"
        base_manager_name = "every_save"


# --- the live follower (follow_omnia) ---------------------------------------------------------


class LiveFollow(models.Model):
    """follow_omnia's resume state for the save it feeds from a game's file: how far each
    append-only table has been applied (the file's rowid, and the id that stood there, which
    tells a reused rowid from the row we saw), a content hash of the small tables, the file's
    identity (a new game written over the path is a new file), and the owners whose deleted
    rows still have to be folded out of their projections. Written in the same transaction as
    the rows it describes, so a follower killed at any point resumes without a gap or a
    duplicate. One per save; it goes with its save."""

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

    objects = SaveScopedManager()
    every_save = models.Manager()

    class Meta:
        db_table = "memory_live_follows"
        base_manager_name = "every_save"


class LiveRow(models.Model):
    """Which row of an append-only table stood at which rowid of the followed file: the one
    way to name the rows the game deleted without reading every id of the file again."""

    game_save = _save_column()
    table_name = models.TextField()  # buffer_entries | ledger_entries
    rowid = models.BigIntegerField()
    entry_id = models.TextField()

    objects = SaveScopedManager()
    every_save = models.Manager()

    class Meta:
        db_table = "memory_live_rows"
        base_manager_name = "every_save"
        constraints = [
            models.UniqueConstraint(
                fields=["game_save", "table_name", "rowid"], name="uniq_live_row_rowid"
            )
        ]
