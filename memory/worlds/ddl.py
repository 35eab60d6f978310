"""DDL: omnia's own schema in both eras, exactly as omnia's repository creates it.

Export and the benchmarks write true omnia files with these scripts. (The inspector's mirror
of omnia's tables is made by migration 0001, which carries its own frozen copy.)
"""

from __future__ import annotations

OMNIA_V1_DDL = """
CREATE TABLE IF NOT EXISTS objects (
  id TEXT PRIMARY KEY, type TEXT NOT NULL, world_id TEXT, clock_iso TEXT, location_id TEXT,
  aliases_json TEXT,
  FOREIGN KEY (world_id) REFERENCES objects(id) ON DELETE CASCADE);
CREATE TABLE IF NOT EXISTS attributes (
  object_id TEXT NOT NULL, name TEXT NOT NULL, value TEXT NOT NULL, visibility TEXT NOT NULL,
  PRIMARY KEY (object_id, name),
  FOREIGN KEY (object_id) REFERENCES objects(id) ON DELETE CASCADE);
CREATE TABLE IF NOT EXISTS attribute_acl (
  object_id TEXT NOT NULL, attribute_name TEXT NOT NULL, entity_id TEXT NOT NULL,
  PRIMARY KEY (object_id, attribute_name, entity_id),
  FOREIGN KEY (object_id, attribute_name) REFERENCES attributes(object_id, name) ON DELETE CASCADE);
CREATE TABLE IF NOT EXISTS buffer_entries (
  id TEXT PRIMARY KEY, owner_id TEXT NOT NULL, timestamp TEXT NOT NULL, location_id TEXT,
  intent_json TEXT NOT NULL, outcome_json TEXT,
  FOREIGN KEY (owner_id) REFERENCES objects(id) ON DELETE CASCADE);
"""

OMNIA_V2_DDL = """
CREATE TABLE IF NOT EXISTS objects (
  id TEXT PRIMARY KEY, type TEXT NOT NULL, world_id TEXT, clock_iso TEXT, location_id TEXT,
  aliases_json TEXT, connections_json TEXT, is_agent INTEGER,
  FOREIGN KEY (world_id) REFERENCES objects(id) ON DELETE CASCADE);
CREATE TABLE IF NOT EXISTS attributes (
  object_id TEXT NOT NULL, name TEXT NOT NULL, value TEXT NOT NULL, visibility TEXT NOT NULL,
  PRIMARY KEY (object_id, name),
  FOREIGN KEY (object_id) REFERENCES objects(id) ON DELETE CASCADE);
CREATE TABLE IF NOT EXISTS attribute_acl (
  object_id TEXT NOT NULL, attribute_name TEXT NOT NULL, entity_id TEXT NOT NULL,
  PRIMARY KEY (object_id, attribute_name, entity_id),
  FOREIGN KEY (object_id, attribute_name) REFERENCES attributes(object_id, name) ON DELETE CASCADE);
CREATE TABLE IF NOT EXISTS buffer_entries (
  id TEXT PRIMARY KEY, owner_id TEXT NOT NULL, timestamp TEXT NOT NULL, location_id TEXT,
  intent_json TEXT NOT NULL, outcome_json TEXT, pinned INTEGER DEFAULT 0,
  FOREIGN KEY (owner_id) REFERENCES objects(id) ON DELETE CASCADE);
CREATE TABLE IF NOT EXISTS ledger_entries (
  id TEXT PRIMARY KEY, owner_id TEXT NOT NULL, timestamp TEXT NOT NULL, location_id TEXT,
  content TEXT NOT NULL, quotes_json TEXT, importance INTEGER NOT NULL, embedding BLOB,
  FOREIGN KEY (owner_id) REFERENCES objects(id) ON DELETE CASCADE);
CREATE TABLE IF NOT EXISTS ledger_involved_entities (
  entry_id TEXT NOT NULL, entity_id TEXT NOT NULL, PRIMARY KEY (entry_id, entity_id),
  FOREIGN KEY (entry_id) REFERENCES ledger_entries(id) ON DELETE CASCADE);
CREATE INDEX IF NOT EXISTS idx_ledger_owner ON ledger_entries(owner_id);
CREATE INDEX IF NOT EXISTS idx_ledger_location ON ledger_entries(location_id);
CREATE INDEX IF NOT EXISTS idx_ledger_importance ON ledger_entries(importance);
CREATE INDEX IF NOT EXISTS idx_ledger_involved_entity ON ledger_involved_entities(entity_id);
"""


def statements(script: str) -> list[str]:
    return [part.strip() for part in script.split(";") if part.strip()]
