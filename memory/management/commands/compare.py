from __future__ import annotations

import json

from memory.engine.compare import (
    AliasDiff,
    BufferDiff,
    Named,
    ProjectionDiff,
    SavesComparison,
    SessionRef,
    ViewersComparison,
    compare_saves,
    compare_viewers,
)
from memory.engine.errors import DomainError
from memory.management.commands._base import OmniaCommand, refuse


def _who(n: Named) -> str:
    return n.id if n.name == n.id else f"{n.id} ({n.name})"


def _label(label: str | None) -> str:
    return "-" if label is None else json.dumps(label, ensure_ascii=False)


def _session(s: SessionRef) -> str:
    where = f" at {_who(s.place)}" if s.place else ""
    return (
        f"{s.kind} {s.session_key}{where}, {s.first_at} .. {s.last_at}, {s.memory_count} memories"
    )


class Command(OmniaCommand):
    # The rest is said by the arguments' help: a playthrough diff (buffer lines, aliases,
    # sessions, episodes, leak findings) or what viewer A knows that viewer B doesn't.
    help = "Compare one viewer in two saves (every viewer without --viewer), or two in one save."
    examples = (
        "tavern-1 tavern-2 --viewer alice",
        "tavern-1 tavern-2 --json --fail-on-new-leak",
        "alice charlie --save tavern-1",
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("a", help="save A (or, with --save, viewer A)")
        parser.add_argument("b", help="save B (or, with --save, viewer B)")
        parser.add_argument("--viewer", help="compare this viewer only (default: every viewer)")
        parser.add_argument("--save", help="compare two viewers (A and B) in this save")
        parser.add_argument("--json", action="store_true", help="one JSON object on stdout")
        parser.add_argument(
            "--fail-on-new-leak",
            action="store_true",
            help="exit 1 when B has an open leak finding A did not have",
        )
        parser.add_argument(
            "--fold",
            action="store_true",
            help="fold a save's unfolded rows first (else its sessions are not compared)",
        )

    def handle(self, *args, a: str, b: str, **options) -> None:
        save, viewer = options.get("save"), options.get("viewer")
        if save and viewer:
            raise refuse("--viewer compares two saves; with --save, A and B are the viewers")
        if save and options["fail_on_new_leak"]:
            raise refuse("--fail-on-new-leak compares two saves: drop --save")
        try:
            if save:
                result = compare_viewers(save, a, b)
            else:
                result = compare_saves(a, b, viewer, refresh=True, fold=options["fold"])
        except DomainError as exc:
            raise refuse(str(exc)) from None
        if options["json"]:
            self.stdout.write(json.dumps(result.as_dict(), ensure_ascii=False, indent=2))
        elif isinstance(result, SavesComparison):
            self._saves(result)
        else:
            self._viewers(result)
        new_leaks = result.new_leaks if isinstance(result, SavesComparison) else 0
        if options["fail_on_new_leak"] and new_leaks:
            self.stderr.write(f"{new_leaks} new leak finding(s) in {result.save_b}")
            raise SystemExit(1)

    # --- text ---------------------------------------------------------------------------------

    def _out(self, line: str = "") -> None:
        self.stdout.write(line)

    def _buffer(self, title: str, diff: BufferDiff, a: str = "A", b: str = "B") -> None:
        self._out(
            f"{title}: matched by {diff.matching} ({diff.why}); {len(diff.only_a)} only in {a}, "
            f"{len(diff.only_b)} only in {b}, {len(diff.changed)} read differently, "
            f"{diff.same} the same"
        )
        for line in diff.only_a:
            self._out(f"  - [{line.id}] {line.text}")
        for line in diff.only_b:
            self._out(f"  + [{line.id}] {line.text}")
        for c in diff.changed:
            ids = c.a.id if c.a.id == c.b.id else f"{c.a.id} / {c.b.id}"
            self._out(f"  ~ [{ids}]")
            self._out(f"      {a}: {c.a.text}")
            self._out(f"      {b}: {c.b.text}")

    def _aliases(self, diff: AliasDiff, a: str = "A", b: str = "B") -> None:
        self._out(
            f"aliases: {len(diff.only_a)} only in {a}, {len(diff.only_b)} only in {b}, "
            f"{len(diff.changed)} different, {len(diff.same)} the same"
        )
        for item in diff.only_a:
            self._out(f"  - {_who(item.target)}: {_label(item.a)}")
        for item in diff.only_b:
            self._out(f"  + {_who(item.target)}: {_label(item.b)}")
        for item in diff.changed:
            self._out(f"  ~ {_who(item.target)}: {_label(item.a)} -> {_label(item.b)}")

    def _projection(self, title: str, diff: ProjectionDiff | None) -> None:
        if diff is None:
            self._out(f"{title}: not compared (see above)")
            return
        changed = f", {len(diff.changed)} changed" if title == "sessions" else ""
        self._out(
            f"{title}: {len(diff.added)} added, {len(diff.gone)} gone{changed}, {diff.same} the same"
        )
        for sign, items in (("+", diff.added), ("-", diff.gone), ("~", diff.changed)):
            for item in items:
                if isinstance(item, SessionRef):
                    self._out(f"  {sign} {_session(item)}")
                else:
                    state = "open" if item.is_open else "closed"
                    self._out(
                        f"  {sign} {item.first_at} .. {item.last_at}, "
                        f"{item.member_count} memories, {state}"
                    )

    def _saves(self, r: SavesComparison) -> None:
        self._out(f"compare save A {r.save_a!r} with save B {r.save_b!r}")
        for notice in r.notices:
            self._out(f"note: {notice}")
        if r.viewers_only_a:
            self._out("viewers only in A: " + ", ".join(_who(v) for v in r.viewers_only_a))
        if r.viewers_only_b:
            self._out("viewers only in B: " + ", ".join(_who(v) for v in r.viewers_only_b))
        for v in r.viewers:
            self._out()
            self._out(f"== viewer {_who(v.viewer)}")
            self._buffer("buffer", v.buffer)
            self._aliases(v.aliases)
            self._projection("sessions", v.sessions)
            self._projection("episodes", v.episodes)
            leaks = v.leaks
            self._out(
                f"leaks: {len(leaks.new)} new, {len(leaks.fixed)} fixed, "
                f"{len(leaks.unchanged)} unchanged"
            )
            for sign, items in (("new", leaks.new), ("fixed", leaks.fixed)):
                for f in items:
                    accepted = " [accepted]" if f.state == "accepted" else ""
                    self._out(f"  {sign} [{f.section}] {f.kind} {f.text!r}: {f.reason}{accepted}")
        self._out()
        self._out(
            f"{len(r.viewers)} viewer(s) compared; {r.new_leaks} new open leak finding(s) in B"
        )

    def _viewers(self, r: ViewersComparison) -> None:
        a, b = r.viewer_a.id, r.viewer_b.id
        self._out(f"compare {_who(r.viewer_a)} with {_who(r.viewer_b)} in save {r.save!r}")
        for notice in r.notices:
            self._out(f"note: {notice}")
        self._aliases(r.aliases, a, b)
        self._out(
            f"private attributes: {len(r.private_only_a)} only {a} may see, "
            f"{len(r.private_only_b)} only {b} may see, {r.private_both} both"
        )
        for sign, items in (("-", r.private_only_a), ("+", r.private_only_b)):
            for item in items:
                self._out(f"  {sign} {_who(item.object)}.{item.name} = {item.value!r}")
        self._out(
            f"sessions: {len(r.sessions_only_a)} only {a} has, {len(r.sessions_only_b)} only "
            f"{b} has, {r.sessions_shared} both"
        )
        for sign, items in (("-", r.sessions_only_a), ("+", r.sessions_only_b)):
            for s in items:
                self._out(f"  {sign} {_session(s)}")
        self._buffer("memories", r.memories, a, b)
