-- SQLite's 0013 keeps run events and spans in their primary key's B-tree
-- (WITHOUT ROWID). Postgres has no such table kind (a heap and its key's
-- index); this migration keeps the two backends' schema versions equal.
SELECT 1;
