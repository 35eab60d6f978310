"""omnia's own tables, mirrored column for column (PRODUCT.md §2), so an omnia world file and
this database hold the same rows.

Their tables are created by raw DDL in migration 0001 because the cascades must be real
database foreign keys (ON DELETE CASCADE): a row deleted by any client, not only Django, takes
its buffer with it. Django therefore declares those relations DO_NOTHING and lets the database
cascade.
"""

from __future__ import annotations

from django.db import models

from memory.models.saves import SaveScoped, save_column


def _omnia_save_column() -> models.ForeignKey:
    """The save column of omnia's tables: a real foreign key with ON DELETE CASCADE in the
    database (migration 0001), so Django leaves the cascade to the database."""
    return save_column(models.DO_NOTHING)


class ObjectType(models.TextChoices):
    WORLD = "world"
    ENTITY = "entity"
    LOCATION = "location"


class Visibility(models.TextChoices):
    PUBLIC = "PUBLIC"
    PRIVATE = "PRIVATE"


class WorldObject(SaveScoped):
    # A row's own key (the admin needs one column); people and omnia see `id`, unique per save.
    uid = models.BigAutoField(primary_key=True)
    game_save = _omnia_save_column()
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

    class Meta(SaveScoped.Meta):
        db_table = "objects"
        managed = True
        ordering = ["id"]
        verbose_name = "object"
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


class Attribute(SaveScoped):
    pk = models.CompositePrimaryKey("game_save", "object_id", "name")
    game_save = _omnia_save_column()
    object_id = models.TextField()
    name = models.TextField()
    value = models.TextField()
    visibility = models.TextField(choices=Visibility.choices)
    file_order = models.IntegerField(null=True, blank=True)  # as on WorldObject

    class Meta(SaveScoped.Meta):
        db_table = "attributes"

    def __str__(self) -> str:
        return f"{self.object_id}.{self.name}"


class AttributeAcl(SaveScoped):
    pk = models.CompositePrimaryKey("game_save", "object_id", "attribute_name", "entity_id")
    game_save = _omnia_save_column()
    # The database constraint is the composite (save, object_id, attribute_name) -> attributes.
    object_id = models.TextField()
    attribute_name = models.TextField()
    entity_id = models.TextField()
    file_order = models.IntegerField(null=True, blank=True)  # as on WorldObject

    class Meta(SaveScoped.Meta):
        db_table = "attribute_acl"


class BufferEntry(SaveScoped):
    """A canonical memory row: omnia's buffer entry plus the fold's bookkeeping (§6)."""

    uid = models.BigAutoField(primary_key=True)  # as on WorldObject
    game_save = _omnia_save_column()
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

    class Meta(SaveScoped.Meta):
        db_table = "buffer_entries"
        verbose_name_plural = "buffer entries"
        constraints = [
            models.UniqueConstraint(fields=["game_save", "id"], name="buffer_entries_save_id")
        ]

    def __str__(self) -> str:
        return self.id


class LedgerEntry(SaveScoped):
    """Long-term memory: omnia's ledger row, extended with scope, slug and names (seed 004).

    Omnia's rows live in their owner's write home; layer entries have no owner.
    """

    uid = models.BigAutoField(primary_key=True)  # as on WorldObject
    game_save = _omnia_save_column()
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

    class Meta(SaveScoped.Meta):
        db_table = "ledger_entries"
        verbose_name_plural = "ledger entries"
        constraints = [
            models.UniqueConstraint(fields=["game_save", "id"], name="ledger_entries_save_id")
        ]

    def __str__(self) -> str:
        return self.id


class LedgerInvolvedEntity(SaveScoped):
    pk = models.CompositePrimaryKey("game_save", "entry_id", "entity_id")
    game_save = _omnia_save_column()
    entry_id = models.TextField()
    entity_id = models.TextField()
    file_order = models.IntegerField(null=True, blank=True)  # as on WorldObject

    class Meta(SaveScoped.Meta):
        db_table = "ledger_involved_entities"
