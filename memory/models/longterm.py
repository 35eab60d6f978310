"""Long-term memory's own tables (seed 004): read-only layers, who subscribes to them, and
the edges abstract() writes from a member to the rollup that absorbed it."""

from __future__ import annotations

from django.db import models

from memory.models.saves import SaveScoped


class Layer(SaveScoped):
    """A named read-only long-term scope (faction lore, world canon…)."""

    pk = models.CompositePrimaryKey("game_save", "id")
    id = models.TextField()
    world_id = models.TextField(null=True, blank=True)
    title = models.TextField(blank=True, default="")

    class Meta(SaveScoped.Meta):
        db_table = "memory_layers"
        ordering = ["id"]

    def __str__(self) -> str:
        return self.id


class LayerSubscription(SaveScoped):
    entity_id = models.TextField()
    layer_id = models.TextField()
    position = models.IntegerField()

    class Meta(SaveScoped.Meta):
        db_table = "memory_layer_subscriptions"
        ordering = ["entity_id", "position"]
        constraints = [
            models.UniqueConstraint(
                fields=["game_save", "entity_id", "layer_id"], name="uniq_subscription"
            ),
            models.UniqueConstraint(
                fields=["game_save", "entity_id", "position"], name="uniq_subscription_pos"
            ),
        ]


class AbstractionEdge(SaveScoped):
    """member --abstracted_into--> rollup. A member is absorbed at most once."""

    member_id = models.TextField()
    member_kind = models.TextField()  # "buffer" or "ledger"
    rollup_id = models.TextField(db_index=True)
    owner_id = models.TextField(db_index=True)
    created_at = models.BigIntegerField()

    class Meta(SaveScoped.Meta):
        db_table = "memory_abstraction_edges"
        constraints = [
            models.UniqueConstraint(fields=["game_save", "member_id"], name="uniq_edge_member")
        ]
