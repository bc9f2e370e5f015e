-- Long-lived API tokens for automation carry an id (to list and revoke
-- them) and a name; session and sign-in tokens leave both empty.
ALTER TABLE api_tokens ADD COLUMN id TEXT;
ALTER TABLE api_tokens ADD COLUMN name TEXT;
CREATE UNIQUE INDEX api_tokens_id ON api_tokens (id);
CREATE INDEX api_tokens_user ON api_tokens (user_id, kind);
