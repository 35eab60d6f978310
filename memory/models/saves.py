"""Saves, and what every row of a save carries.

A save is a world as one file or scenario brought it. Every other table of the app but the
access records (audit, tokens) holds rows of one save: `SaveScoped` gives them the column and
the two managers once, as Django's `AbstractBaseUser` gives every user model its fields.
"""

from __future__ import annotations

from django.db import models
from django.db.models.functions import Lower
from django.utils import timezone

from memory.active_save import SaveScopedManager, plain_active_id


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
        constraints = [
            # demo, Demo and DEMO would be one save to a person: one may exist. Names are
            # ASCII (engine/saves.py NAME_PATTERN), where lower() is the case fold and NFKC
            # changes nothing; a fullwidth or accented name is refused before it gets here.
            models.UniqueConstraint(Lower("name"), name="memory_saves_name_folded_unique"),
        ]

    def __str__(self) -> str:
        return self.name


def save_column(on_delete=models.CASCADE, **kwargs) -> models.ForeignKey:
    """The save a row belongs to; the active save unless given (active_save.py)."""
    return models.ForeignKey(
        Save, on_delete=on_delete, default=plain_active_id, related_name="+", **kwargs
    )


class SaveScoped(models.Model):
    """A row of one save. `objects` reads the active save's rows alone and refuses to run
    without one (a query that forgot its save fails loudly instead of mixing playthroughs);
    code that means every save says so with `every_save`, which related lookups and cascades
    use too (the base manager)."""

    game_save = save_column()

    objects = SaveScopedManager()
    every_save = models.Manager()

    class Meta:
        abstract = True
        base_manager_name = "every_save"
