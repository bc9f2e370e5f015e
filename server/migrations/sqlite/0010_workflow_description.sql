-- A workflow's one-line description (issue 28), shown under its name in the
-- list; the document holds it too. Empty for workflows saved before.
ALTER TABLE workflows ADD COLUMN description TEXT NOT NULL DEFAULT '';
