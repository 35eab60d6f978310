"""Leak scanner benchmark (PRODUCT.md §10): the Aho-Corasick automaton against one regex per
pattern, same findings, in one run.

    .venv/bin/python bench/bench_leaks.py                    # 2,000 entities, 200,000 lines
    .venv/bin/python bench/bench_leaks.py --smoke            # 50 entities, 2,000 lines, seconds
    .venv/bin/python bench/bench_leaks.py --entities 2000 --lines 200000 --naive-seconds 60

A world of N entities (true names, aliases, private values, UUID and slug ids, locations) and
the buffer lines its viewers would read are generated at run time; nothing is written to disk.
Lines go to viewers round-robin in blocks of 100 (a prompt's buffer). About 2% of lines carry
a leak: a true name, an id, or a private value. The automaton scans everything; the baseline
scans blocks until --naive-seconds is spent (or everything, if it finishes), its findings are
compared with the automaton's on exactly those blocks, and its full time is extrapolated from
its measured rate when it did not scan everything (the output says which).

    .venv/bin/python bench/bench_leaks.py --db               # the same world, in a database

`--db` stores the generated world (objects, attributes, ACLs, and the lines as v1 buffer rows
of their viewers) in a fresh database (DATABASE_URL, else a temporary SQLite file) and times
`memory.engine.leaks.world_scan.scan_world`: every viewer's prompt context rendered and scanned, one automaton for
the world. It then scans the same prompt texts again with the automaton alone and with the
one-regex-per-pattern baseline, for the MB/s ratio on real prompts.
"""

from __future__ import annotations

import argparse
import random
import resource
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from memory.engine.leaks.naive import build_naive_index, scan_text_naive  # noqa: E402
from memory.engine.leaks.scanner import (  # noqa: E402
    LeakWorld,
    PrivateValue,
    build_leak_index,
    scan_text,
)

SYLLABLES = [
    "ar",
    "bel",
    "cor",
    "dan",
    "el",
    "fen",
    "gar",
    "hal",
    "is",
    "jor",
    "kel",
    "lin",
    "mar",
    "nor",
    "or",
    "pel",
    "quin",
    "ros",
    "sel",
    "tor",
    "ul",
    "val",
    "wen",
    "yor",
    "zan",
    "bri",
    "cas",
    "dor",
    "fal",
    "gwen",
    "har",
    "ith",
    "lor",
    "mir",
    "nim",
    "os",
    "rav",
    "sil",
    "tam",
    "ven",
    "wyn",
]
ADJECTIVES = [
    "hooded",
    "tall",
    "short",
    "old",
    "young",
    "scarred",
    "bearded",
    "limping",
    "quiet",
    "loud",
    "one-eyed",
    "red-haired",
    "grey-cloaked",
    "nervous",
    "cheerful",
    "tired",
    "burly",
    "thin",
    "freckled",
    "tattooed",
]
NOUNS = [
    "figure",
    "man",
    "woman",
    "stranger",
    "merchant",
    "guard",
    "traveller",
    "bard",
    "priest",
    "sailor",
    "farmer",
    "hunter",
    "smith",
    "scholar",
    "pilgrim",
    "mercenary",
    "beggar",
    "noble",
    "servant",
    "innkeeper",
]
FILLER = [
    "the",
    "ale",
    "is",
    "warm",
    "tonight",
    "and",
    "the",
    "road",
    "north",
    "was",
    "long",
    "we",
    "should",
    "leave",
    "before",
    "dawn",
    "did",
    "you",
    "hear",
    "the",
    "bells",
    "there",
    "is",
    "rain",
    "coming",
    "keep",
    "your",
    "voice",
    "down",
    "nobody",
    "saw",
    "anything",
    "bring",
    "me",
    "another",
    "drink",
    "the",
    "price",
    "of",
    "salt",
    "went",
    "up",
    "again",
    "watch",
    "the",
    "door",
]
SECRETS = (
    "owes {n} silver to the thieves' guild",
    "hides a map under the {adj} floorboard",
    "deserted the {adj} legion in the spring",
    "carries a letter sealed with {n} wax marks",
)
BLOCK_LINES = 100


def make_world(rng: random.Random, entities: int) -> tuple[LeakWorld, list[str]]:
    ids: list[str] = []
    true_names: dict[str, str] = {}
    seen_names: set[str] = set()
    for n in range(entities):
        while True:
            name = "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 3))).capitalize()
            if name not in seen_names:
                seen_names.add(name)
                break
        entity_id = (
            str(uuid.UUID(int=rng.getrandbits(128), version=4)) if n % 2 else f"{name.lower()}-{n}"
        )
        ids.append(entity_id)
        true_names[entity_id] = name
    locations = [f"loc-{n:03d}" for n in range(max(1, entities // 40))]
    aliases: dict[str, dict[str, str]] = {}
    for viewer in ids:
        known = rng.sample(ids, min(20, len(ids)))
        aliases[viewer] = {
            target: true_names[target]
            if rng.random() < 0.3
            else f"the {rng.choice(ADJECTIVES)} {rng.choice(NOUNS)}"
            for target in known
            if target != viewer
        }
    privates = [
        PrivateValue(
            entity_id,
            "secret",
            rng.choice(SECRETS).format(n=rng.randint(2, 999), adj=rng.choice(ADJECTIVES)),
            frozenset(rng.sample(ids, 3)),
        )
        for entity_id in ids
    ]
    world = LeakWorld(
        object_ids=frozenset([*ids, *locations, "bench-world"]),
        true_names=true_names,
        aliases=aliases,
        private_values=privates,
    )
    return world, ids


def make_texts(
    rng: random.Random, world: LeakWorld, ids: list[str], lines: int
) -> list[tuple[str, str]]:
    def alias(viewer: str, target: str) -> str:
        if target == viewer:
            return "you"
        return world.aliases[viewer].get(target, "an unfamiliar figure")

    def leak() -> str:
        roll = rng.random()
        victim = rng.choice(ids)
        if roll < 0.5:
            return world.true_names[victim]
        if roll < 0.8:
            return victim
        return world.private_values[rng.randrange(len(world.private_values))].value

    texts: list[tuple[str, str]] = []
    block: list[str] = []
    viewer_index = 0
    for n in range(lines):
        viewer = ids[viewer_index % len(ids)]
        known = list(world.aliases[viewer])
        actor = rng.choice(known + [viewer]) if known else viewer
        target = rng.choice(known) if known else viewer
        words = rng.sample(FILLER, rng.randint(6, 12))
        if rng.random() < 0.02:
            words.insert(rng.randrange(len(words)), leak())
        said = " ".join(words).capitalize()
        hour, minute, second = rng.randint(1, 12), rng.randint(0, 59), rng.randint(0, 59)
        stamp = f"[{hour}:{minute:02d}:{second:02d} {rng.choice(('AM', 'PM'))}]"
        if rng.random() < 0.6:
            line = f'{stamp} {alias(viewer, actor)} spoke to {alias(viewer, target)}: "{said}"'
        else:
            line = f"{stamp} {alias(viewer, actor)} {said.lower()} (Outcome: Succeeded)"
        block.append(line)
        if len(block) == BLOCK_LINES or n == lines - 1:
            texts.append((viewer, "\n".join(block)))
            block = []
            viewer_index += 1
    return texts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entities", type=int, default=2000)
    parser.add_argument("--lines", type=int, default=200_000)
    parser.add_argument("--naive-seconds", type=float, default=60.0)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--smoke", action="store_true", help="50 entities, 2,000 lines")
    parser.add_argument(
        "--db", action="store_true", help="scan every viewer's prompt via scan_world"
    )
    args = parser.parse_args()
    if args.smoke:
        args.entities, args.lines, args.naive_seconds = 50, 2000, 10.0
    if args.db:
        run_db(args)
        return

    rng = random.Random(args.seed)
    t0 = time.perf_counter()
    world, ids = make_world(rng, args.entities)
    texts = make_texts(rng, world, ids, args.lines)
    sizes = [len(text.encode()) for _, text in texts]
    total_mb = sum(sizes) / 1e6
    print(
        f"world: {args.entities:,} entities, {len(world.object_ids):,} ids, "
        f"{sum(len(a) for a in world.aliases.values()):,} aliases, "
        f"{len(world.private_values):,} private values; "
        f"generated in {time.perf_counter() - t0:.1f} s"
    )
    print(f"texts: {len(texts):,} blocks, {args.lines:,} lines, {total_mb:.2f} MB")

    t0 = time.perf_counter()
    index = build_leak_index(world)
    build_s = time.perf_counter() - t0
    print(f"automaton: {index.pattern_count:,} patterns built in {build_s:.2f} s")

    t0 = time.perf_counter()
    found = [scan_text(index, viewer, text) for viewer, text in texts]
    auto_s = time.perf_counter() - t0
    auto_rate = total_mb / auto_s
    kinds: dict[str, int] = {}
    for findings in found:
        for f in findings:
            kinds[f.kind] = kinds.get(f.kind, 0) + 1
    print(
        f"automaton: scanned {total_mb:.2f} MB in {auto_s:.2f} s = {auto_rate:.1f} MB/s; "
        f"findings {sum(kinds.values()):,} {dict(sorted(kinds.items()))}"
    )

    t0 = time.perf_counter()
    naive = build_naive_index(world)
    print(f"naive: {len(naive.regexes):,} regexes compiled in {time.perf_counter() - t0:.2f} s")
    order = list(range(len(texts)))
    random.Random(args.seed + 1).shuffle(order)
    naive_s = 0.0
    naive_mb = 0.0
    checked = 0
    mismatches = 0
    for i in order:
        viewer, text = texts[i]
        t0 = time.perf_counter()
        naive_found = scan_text_naive(naive, viewer, text)
        naive_s += time.perf_counter() - t0
        naive_mb += sizes[i] / 1e6
        checked += 1
        mismatches += naive_found != found[i]
        if naive_s >= args.naive_seconds:
            break
    naive_rate = naive_mb / naive_s
    sample = "all" if checked == len(texts) else f"a random sample of {checked:,}"
    print(
        f"naive: scanned {sample} blocks ({naive_mb:.3f} MB) in {naive_s:.2f} s = "
        f"{naive_rate:.4f} MB/s"
    )
    if checked < len(texts):
        print(
            f"naive: full {total_mb:.2f} MB EXTRAPOLATED at that rate: "
            f"{total_mb / naive_rate / 3600:.1f} h (not measured)"
        )
    print(
        f"same findings on the {checked:,} blocks both scanned: "
        f"{'yes' if mismatches == 0 else f'NO, {mismatches} blocks differ'}"
    )
    print(f"ratio automaton / naive: {auto_rate / naive_rate:,.0f}x")
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS: {peak_mb:.0f} MB")
    if mismatches:
        sys.exit(1)


# --- --db: the world stored, every viewer's prompt rendered and scanned ---------------------


def _django(tmp: str) -> None:
    import os

    os.environ.setdefault("DATABASE_URL", f"sqlite:///{tmp}/bench_leaks.sqlite3")
    os.environ.setdefault("OMNIA_DEBUG", "1")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "omnia_site.settings")
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)


def store_world(rng: random.Random, world: LeakWorld, ids: list[str], lines: int) -> int:
    import json

    from django.db import transaction

    from memory.models import Attribute, AttributeAcl, BufferEntry, WorldObject

    if WorldObject.objects.filter(pk="bench-world").exists():
        sys.exit("bench-world already exists in this database; use a fresh one")
    locations = sorted(i for i in world.object_ids if i.startswith("loc-"))
    # Line n's leak draws come from the same generator as the pure bench, so the rates compare.
    texts = make_texts(rng, world, ids, lines)
    with transaction.atomic():
        root = WorldObject.objects.create(
            id="bench-world", type="world", clock_iso="2026-07-06T12:30:00.000Z"
        )
        WorldObject.objects.bulk_create(
            WorldObject(id=loc, type="location", world=root) for loc in locations
        )
        Attribute.objects.bulk_create(
            Attribute(
                object_id=loc, name="description", value=f"a room numbered {n}", visibility="PUBLIC"
            )
            for n, loc in enumerate(locations)
        )
        WorldObject.objects.bulk_create(
            WorldObject(
                id=entity_id,
                type="entity",
                world=root,
                location_id=locations[n % len(locations)],
                aliases_json=json.dumps(list(world.aliases[entity_id].items())),
                is_agent=1,
            )
            for n, entity_id in enumerate(ids)
        )
        attrs = [
            Attribute(object_id=i, name="name", value=world.true_names[i], visibility="PRIVATE")
            for i in ids
        ]
        attrs += [
            Attribute(
                object_id=p.object_id, name=p.attribute_name, value=p.value, visibility="PRIVATE"
            )
            for p in world.private_values
        ]
        Attribute.objects.bulk_create(attrs, batch_size=2000)
        AttributeAcl.objects.bulk_create(
            (
                AttributeAcl(
                    object_id=p.object_id, attribute_name=p.attribute_name, entity_id=allowed
                )
                for p in world.private_values
                for allowed in sorted(p.allowed)
            ),
            batch_size=2000,
        )
        rows = []
        for block, (viewer, text) in enumerate(texts):
            for n, line in enumerate(text.split("\n")):
                # The generated line already reads as the viewer sees it; stored as a v1
                # action whose actor is the viewer, it renders as "you <line>".
                intent = {"type": "action", "actorId": viewer, "targetIds": [], "description": line}
                rows.append(
                    BufferEntry(
                        id=f"b{block}-{n}",
                        owner_id=viewer,
                        timestamp=f"2026-07-06T{n // 60:02d}:{n % 60:02d}:00.000Z",
                        intent_json=json.dumps(intent),
                        created_at=block * 1000 + n,
                    )
                )
        BufferEntry.objects.bulk_create(rows, batch_size=5000)
    return len(rows)


def run_db(args: argparse.Namespace) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        _django(tmp)
        from memory.engine.leaks.world_scan import leak_world, scan_world

        rng = random.Random(args.seed)
        world, ids = make_world(rng, args.entities)
        t0 = time.perf_counter()
        stored = store_world(rng, world, ids, args.lines)
        print(
            f"db: {args.entities:,} entities, {stored:,} buffer rows stored in {time.perf_counter() - t0:.1f} s"
        )

        t0 = time.perf_counter()
        scans = scan_world("bench-world")
        world_s = time.perf_counter() - t0
        prompts = [(scan.viewer_id, scan.prompt.text) for scan in scans]
        total_mb = sum(len(text.encode()) for _, text in prompts) / 1e6
        kinds: dict[str, int] = {}
        for scan in scans:
            for f in scan.findings:
                kinds[f.finding.kind] = kinds.get(f.finding.kind, 0) + 1
        print(
            f"scan_world: {len(scans):,} viewer prompts ({total_mb:.2f} MB) rendered and scanned in "
            f"{world_s:.2f} s = {len(scans) / world_s:,.0f} viewers/s; "
            f"findings {sum(kinds.values()):,} {dict(sorted(kinds.items()))}"
        )

        index = build_leak_index(leak_world("bench-world"))
        t0 = time.perf_counter()
        found = [scan_text(index, viewer, text) for viewer, text in prompts]
        auto_s = time.perf_counter() - t0
        auto_rate = total_mb / auto_s
        print(f"automaton alone on the prompts: {auto_s:.3f} s = {auto_rate:.1f} MB/s")

        naive = build_naive_index(leak_world("bench-world"))
        naive_s = naive_mb = 0.0
        checked = mismatches = 0
        for (viewer, text), expected in zip(prompts, found, strict=True):
            t0 = time.perf_counter()
            got = scan_text_naive(naive, viewer, text)
            naive_s += time.perf_counter() - t0
            naive_mb += len(text.encode()) / 1e6
            checked += 1
            mismatches += got != expected
            if naive_s >= args.naive_seconds:
                break
        naive_rate = naive_mb / naive_s
        print(
            f"naive on {checked:,} of {len(prompts):,} prompts ({naive_mb:.3f} MB): {naive_s:.2f} s = "
            f"{naive_rate:.4f} MB/s; same findings: {'yes' if not mismatches else f'NO ({mismatches})'}"
        )
        print(f"ratio automaton / naive on prompts: {auto_rate / naive_rate:,.0f}x")
        peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"peak RSS: {peak_mb:.0f} MB")
        if mismatches:
            sys.exit(1)


if __name__ == "__main__":
    main()
