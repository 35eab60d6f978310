"""Who did what, and who may: the alias edit history, the audit log of every door, API tokens.
The audit log and the tokens belong to no save."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from memory.models.saves import SaveScoped


class AliasChange(SaveScoped):
    """History of one viewer's alias for one target: who, when, before -> after."""

    viewer_id = models.TextField(db_index=True)
    target_id = models.TextField()
    before = models.TextField(null=True, blank=True)
    after = models.TextField(null=True, blank=True)
    changed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    changed_at = models.DateTimeField(default=timezone.now, editable=False)
    source = models.TextField(default="")
    # The world's clock when the change happened in play (the follower saw the game change the
    # alias: its world's clock_iso in the same batch); "" for an edit made from outside play,
    # which has a wall time only. What a pair over time and a prompt at a moment read.
    world_time = models.TextField(default="", blank=True)

    class Meta(SaveScoped.Meta):
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
