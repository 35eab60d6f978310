"""Ways in and out of the inspector's database, one module each:

- `omnia_import`: an omnia SQLite world file (either era);
- `scenario`: an omnia scenario JSON, with our layers, memories and abstractions;
- `demo`: the bundled demo world;
- `export`: back out to an omnia SQLite file (`ddl` holds omnia's schemas);
- `report`, `bulk`, `validation`: what they answer, how they write, how they check rows.

Every way in is atomic: the whole input is read and validated first, rows are written in one
transaction, and a bad row aborts everything with a message naming the file, table and row.

Nothing is imported here, so `memory.worlds.ddl` stays importable without Django (bench/).
"""
