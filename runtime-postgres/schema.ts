/**
 * The tables and functions of a sessionfold store in one PostgreSQL schema, as numbered
 * migrations. {@linkcode migrate} brings a schema to {@linkcode SCHEMA_VERSION}, serialised
 * across hosts by a transaction-level advisory lock, so any number of hosts may start at once.
 * docs/POSTGRES.md describes the layout.
 *
 * @module
 */
import { createHash } from "node:crypto";
import type { Client, PoolClient } from "pg";

/** The schema version this code writes and reads. */
export const SCHEMA_VERSION = 6;

/** A quoted PostgreSQL identifier (the store's schema name goes into every statement). */
export function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/**
 * The advisory lock number of `name` in the store `schema`: 64 bits of SHA-256 over both
 * (docs/POSTGRES.md "Writer ownership"), as a decimal string for a `bigint` parameter.
 */
export function advisoryLockKey(schema: string, name: string): string {
  return createHash("sha256").update(`${schema}\0${name}`).digest().readBigInt64BE(0).toString();
}

/**
 * Migration `n` (1-based) as SQL over the schema `s` (already quoted). Version 1:
 * - `entries`: one row per file or folder, keyed by the path in byte order (`COLLATE "C"`),
 *   with its parent folder and name (`list` reads one parent's rows on an index);
 * - `chunks`: a file's bytes as the chunks it was appended in, keyed by the offset where each
 *   chunk ends, so an append is one new row and `readTail` reads only the newest rows;
 * - functions that do each write as one statement (and `run_plan`, a whole commit).
 */
function migrationSql(n: number, s: string): string {
  if (n === 2) return migration2(s);
  if (n === 3) return migration3(s);
  if (n === 4) return migration4(s);
  if (n === 5) return migration5(s);
  if (n === 6) return migration6(s);
  if (n !== 1) throw new Error(`no migration ${n}`);
  return `
CREATE TABLE ${s}.entries (
  path text COLLATE "C" PRIMARY KEY,
  parent text COLLATE "C" NOT NULL,
  name text COLLATE "C" NOT NULL,
  file_id bigint UNIQUE,
  size bigint NOT NULL DEFAULT 0
);
COMMENT ON COLUMN ${s}.entries.file_id IS 'NULL for a folder';
CREATE INDEX entries_by_parent ON ${s}.entries (parent, name);
CREATE SEQUENCE ${s}.file_ids;
CREATE TABLE ${s}.chunks (
  file_id bigint NOT NULL,
  end_offset bigint NOT NULL,
  bytes bytea NOT NULL,
  PRIMARY KEY (file_id, end_offset)
);

CREATE FUNCTION ${s}.parent_of(p text) RETURNS text LANGUAGE sql IMMUTABLE AS
$$ SELECT CASE WHEN strpos(p, '/') = 0 THEN '' ELSE regexp_replace(p, '/[^/]*$', '') END $$;
CREATE FUNCTION ${s}.name_of(p text) RETURNS text LANGUAGE sql IMMUTABLE AS
$$ SELECT regexp_replace(p, '^.*/', '') $$;

-- Creates the folders above p; a file where a folder must be is an error (SF001).
CREATE FUNCTION ${s}.ensure_parents(p text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  parts text[] := string_to_array(p, '/');
  d text := '';
  par text;
BEGIN
  IF EXISTS (SELECT 1 FROM ${s}.entries WHERE path = ${s}.parent_of(p) AND file_id IS NULL) THEN RETURN; END IF;
  FOR i IN 1 .. coalesce(array_length(parts, 1), 0) - 1 LOOP
    par := d;
    d := CASE WHEN d = '' THEN parts[i] ELSE d || '/' || parts[i] END;
    INSERT INTO ${s}.entries (path, parent, name) VALUES (d, par, parts[i]) ON CONFLICT (path) DO NOTHING;
    IF NOT FOUND AND EXISTS (SELECT 1 FROM ${s}.entries WHERE path = d AND file_id IS NOT NULL) THEN
      RAISE EXCEPTION USING ERRCODE = 'SF001', MESSAGE = format('%s is a file, not a folder', d);
    END IF;
  END LOOP;
END $$;

-- The file at p, locked for this transaction, created empty when missing; a folder is an error (SF002).
CREATE FUNCTION ${s}.open_file(p text) RETURNS ${s}.entries LANGUAGE plpgsql AS $$
DECLARE e ${s}.entries;
BEGIN
  FOR attempt IN 1 .. 2 LOOP
    SELECT * INTO e FROM ${s}.entries WHERE path = p FOR UPDATE;
    IF FOUND THEN
      IF e.file_id IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'SF002', MESSAGE = format('%s is a folder, not a file', p);
      END IF;
      RETURN e;
    END IF;
    PERFORM ${s}.ensure_parents(p);
    INSERT INTO ${s}.entries (path, parent, name, file_id)
      VALUES (p, ${s}.parent_of(p), ${s}.name_of(p), nextval('${s}.file_ids'))
      ON CONFLICT (path) DO NOTHING RETURNING * INTO e;
    IF FOUND THEN RETURN e; END IF;
  END LOOP;
  RAISE EXCEPTION USING ERRCODE = 'SF003', MESSAGE = format('%s changed while it was opened', p);
END $$;

-- The common case first: the file exists, and one UPDATE both locks its row and moves its size.
CREATE FUNCTION ${s}.append(p text, b bytea) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  fid bigint;
  new_size bigint;
BEGIN
  IF length(b) = 0 THEN PERFORM ${s}.open_file(p); RETURN; END IF;
  UPDATE ${s}.entries SET size = size + length(b) WHERE path = p AND file_id IS NOT NULL RETURNING file_id, size INTO fid, new_size;
  IF NOT FOUND THEN
    fid := (${s}.open_file(p)).file_id;
    UPDATE ${s}.entries SET size = size + length(b) WHERE path = p RETURNING size INTO new_size;
  END IF;
  INSERT INTO ${s}.chunks VALUES (fid, new_size, b);
END $$;

CREATE FUNCTION ${s}.replace(p text, b bytea) RETURNS void LANGUAGE plpgsql AS $$
DECLARE fid bigint;
BEGIN
  UPDATE ${s}.entries SET size = length(b) WHERE path = p AND file_id IS NOT NULL RETURNING file_id INTO fid;
  IF NOT FOUND THEN
    fid := (${s}.open_file(p)).file_id;
    UPDATE ${s}.entries SET size = length(b) WHERE path = p;
  END IF;
  DELETE FROM ${s}.chunks WHERE file_id = fid;
  IF length(b) > 0 THEN INSERT INTO ${s}.chunks VALUES (fid, length(b), b); END IF;
END $$;

CREATE FUNCTION ${s}.create_exclusive(p text, b bytea) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE fid bigint;
BEGIN
  IF EXISTS (SELECT 1 FROM ${s}.entries WHERE path = p) THEN RETURN false; END IF;
  PERFORM ${s}.ensure_parents(p);
  INSERT INTO ${s}.entries (path, parent, name, file_id, size)
    VALUES (p, ${s}.parent_of(p), ${s}.name_of(p), nextval('${s}.file_ids'), length(b))
    ON CONFLICT (path) DO NOTHING RETURNING file_id INTO fid;
  IF NOT FOUND THEN RETURN false; END IF;
  IF length(b) > 0 THEN INSERT INTO ${s}.chunks VALUES (fid, length(b), b); END IF;
  RETURN true;
END $$;

CREATE FUNCTION ${s}.truncate(p text, len bigint) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  e ${s}.entries;
  c ${s}.chunks;
  start bigint;
BEGIN
  SELECT * INTO e FROM ${s}.entries WHERE path = p AND file_id IS NOT NULL FOR UPDATE;
  len := greatest(len, 0);
  IF NOT FOUND OR len >= e.size THEN RETURN; END IF;
  SELECT * INTO c FROM ${s}.chunks WHERE file_id = e.file_id AND end_offset > len ORDER BY end_offset LIMIT 1;
  DELETE FROM ${s}.chunks WHERE file_id = e.file_id AND end_offset > len;
  start := c.end_offset - length(c.bytes);
  IF len > start THEN INSERT INTO ${s}.chunks VALUES (e.file_id, len, substring(c.bytes FROM 1 FOR (len - start)::int)); END IF;
  UPDATE ${s}.entries SET size = len WHERE path = p;
END $$;

-- A file or a folder with everything below it ('/' + 1 is '0': the range of p's descendants).
CREATE FUNCTION ${s}.remove(p text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM ${s}.chunks WHERE file_id IN (
    SELECT file_id FROM ${s}.entries
    WHERE (path = p OR (path >= p || '/' AND path < p || '0')) AND file_id IS NOT NULL);
  DELETE FROM ${s}.entries WHERE path = p OR (path >= p || '/' AND path < p || '0');
END $$;

CREATE FUNCTION ${s}.move(f text, t text) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  IF t = f OR starts_with(t, f || '/') THEN RETURN false; END IF;
  PERFORM 1 FROM ${s}.entries WHERE path = f OR (path >= f || '/' AND path < f || '0') FOR UPDATE;
  IF NOT FOUND THEN RETURN false; END IF;
  IF EXISTS (SELECT 1 FROM ${s}.entries WHERE path = t) THEN RETURN false; END IF;
  PERFORM ${s}.ensure_parents(t);
  UPDATE ${s}.entries SET
    path = t || substr(path, length(f) + 1),
    parent = CASE WHEN path = f THEN ${s}.parent_of(t) ELSE t || substr(parent, length(f) + 1) END,
    name = CASE WHEN path = f THEN ${s}.name_of(t) ELSE name END
  WHERE path = f OR (path >= f || '/' AND path < f || '0');
  RETURN true;
END $$;

-- The revision in the document at p: NULL when missing or blank, -1 when this function
-- cannot tell (then the caller checks it with the core's own parser).
CREATE FUNCTION ${s}.revision_of(p text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  doc bytea;
  j jsonb;
BEGIN
  SELECT coalesce(string_agg(c.bytes, ''::bytea ORDER BY c.end_offset), ''::bytea) INTO doc
    FROM ${s}.entries e LEFT JOIN ${s}.chunks c ON c.file_id = e.file_id
    WHERE e.path = p AND e.file_id IS NOT NULL GROUP BY e.path;
  IF NOT FOUND OR rtrim(doc, '\\x00200a0d09'::bytea) = ''::bytea THEN RETURN NULL; END IF;
  j := convert_from(doc, 'UTF8')::jsonb;
  IF jsonb_typeof(j) <> 'object' OR jsonb_typeof(j -> 'revision') IS DISTINCT FROM 'number' THEN RETURN -1; END IF;
  RETURN (j ->> 'revision')::bigint;
EXCEPTION WHEN others THEN
  RETURN -1;
END $$;

-- Removes the writer.lock at p only if it carries lock_id.
CREATE FUNCTION ${s}.remove_lock_record(p text, lock_id text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE doc bytea;
BEGIN
  SELECT coalesce(string_agg(c.bytes, ''::bytea ORDER BY c.end_offset), ''::bytea) INTO doc
    FROM ${s}.entries e LEFT JOIN ${s}.chunks c ON c.file_id = e.file_id
    WHERE e.path = p AND e.file_id IS NOT NULL GROUP BY e.path;
  IF FOUND AND (convert_from(doc, 'UTF8')::jsonb ->> 'lock_id') IS NOT DISTINCT FROM lock_id THEN
    PERFORM ${s}.remove(p);
  END IF;
EXCEPTION WHEN others THEN
  RETURN;
END $$;

-- A whole commit plan in one statement (one transaction). The writer lock is the advisory
-- lock lock_key: a transaction-level one for a plan that does not hold it (freed by the
-- commit itself, so nobody takes it before the writes are visible), a session-level one
-- with hold (freed by release_key's plan, or by the server when the connection dies).
-- Returns 'committed', 'locked', 'conflict:<revision|null>' or 'check' (the revision is
-- not one this function can read: nothing was written, the caller runs the plan itself).
CREATE FUNCTION ${s}.run_plan(
  lock_key bigint, hold boolean, lock_path text, lock_bytes bytea,
  expect_path text, expect_revision bigint,
  ops text[], paths text[], datas bytea[],
  release_key bigint, release_path text, release_lock_id text
) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  found_revision bigint;
BEGIN
  IF lock_key IS NOT NULL THEN
    IF hold THEN
      IF NOT pg_try_advisory_lock(lock_key) THEN RETURN 'locked'; END IF;
    ELSIF NOT pg_try_advisory_xact_lock(lock_key) THEN
      RETURN 'locked';
    END IF;
  END IF;
  IF expect_path IS NOT NULL THEN
    found_revision := ${s}.revision_of(expect_path);
    IF found_revision = -1 OR found_revision IS DISTINCT FROM expect_revision THEN
      IF lock_key IS NOT NULL AND hold THEN PERFORM pg_advisory_unlock(lock_key); END IF;
      RETURN CASE WHEN found_revision = -1 THEN 'check' ELSE 'conflict:' || coalesce(found_revision::text, 'null') END;
    END IF;
  END IF;
  IF lock_key IS NOT NULL THEN
    -- The lock record: written when it is held on, else only a dead holder's stale one is dropped.
    IF hold THEN
      PERFORM ${s}.replace(lock_path, lock_bytes);
    ELSIF EXISTS (SELECT 1 FROM ${s}.entries WHERE path = lock_path) THEN
      PERFORM ${s}.remove(lock_path);
    END IF;
  END IF;
  FOR i IN 1 .. coalesce(array_length(ops, 1), 0) LOOP
    IF ops[i] = 'append' THEN PERFORM ${s}.append(paths[i], datas[i]);
    ELSE PERFORM ${s}.replace(paths[i], datas[i]);
    END IF;
  END LOOP;
  IF release_key IS NOT NULL THEN
    PERFORM ${s}.remove_lock_record(release_path, release_lock_id);
    -- Hand the session lock over to a transaction lock, so it is free only once this commits.
    PERFORM pg_advisory_xact_lock(release_key);
    PERFORM pg_advisory_unlock(release_key);
  END IF;
  RETURN 'committed';
END $$;
`;
}

/**
 * Migration 2: a commit checks `meta.json`'s revision without parsing it.
 * - `entries.revision`: the revision of the file read as a `meta.json` document, given by
 *   the commit that wrote it (the client reads it from the bytes it sends); `NULL` when not
 *   known. Every other write of the file (`append`, `truncate`, a `replace` without one)
 *   sets it to `NULL`, so it is never stale; a `NULL` is read the old way (`revision_of`,
 *   which parses the document inside an exception block, a subtransaction).
 * - `run_plan` takes the writes' bytes as one `bytea` (sent in binary) with their lengths,
 *   instead of a `bytea[]` (sent as hex text and parsed back), and each write's revision.
 */
function migration2(s: string): string {
  return `
ALTER TABLE ${s}.entries ADD COLUMN revision bigint;
COMMENT ON COLUMN ${s}.entries.revision IS 'the revision of this file as a meta.json document, given by the commit that wrote it; NULL when not known';

CREATE OR REPLACE FUNCTION ${s}.append(p text, b bytea) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  fid bigint;
  new_size bigint;
BEGIN
  IF length(b) = 0 THEN PERFORM ${s}.open_file(p); RETURN; END IF;
  UPDATE ${s}.entries SET size = size + length(b), revision = NULL WHERE path = p AND file_id IS NOT NULL RETURNING file_id, size INTO fid, new_size;
  IF NOT FOUND THEN
    fid := (${s}.open_file(p)).file_id;
    UPDATE ${s}.entries SET size = size + length(b), revision = NULL WHERE path = p RETURNING size INTO new_size;
  END IF;
  INSERT INTO ${s}.chunks VALUES (fid, new_size, b);
END $$;

DROP FUNCTION ${s}.replace(text, bytea);
CREATE FUNCTION ${s}.replace(p text, b bytea, rev bigint DEFAULT NULL) RETURNS void LANGUAGE plpgsql AS $$
DECLARE fid bigint;
BEGIN
  UPDATE ${s}.entries SET size = length(b), revision = rev WHERE path = p AND file_id IS NOT NULL RETURNING file_id INTO fid;
  IF NOT FOUND THEN
    fid := (${s}.open_file(p)).file_id;
    UPDATE ${s}.entries SET size = length(b), revision = rev WHERE path = p;
  END IF;
  DELETE FROM ${s}.chunks WHERE file_id = fid;
  IF length(b) > 0 THEN INSERT INTO ${s}.chunks VALUES (fid, length(b), b); END IF;
END $$;

CREATE OR REPLACE FUNCTION ${s}.truncate(p text, len bigint) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  e ${s}.entries;
  c ${s}.chunks;
  start bigint;
BEGIN
  SELECT * INTO e FROM ${s}.entries WHERE path = p AND file_id IS NOT NULL FOR UPDATE;
  len := greatest(len, 0);
  IF NOT FOUND OR len >= e.size THEN RETURN; END IF;
  SELECT * INTO c FROM ${s}.chunks WHERE file_id = e.file_id AND end_offset > len ORDER BY end_offset LIMIT 1;
  DELETE FROM ${s}.chunks WHERE file_id = e.file_id AND end_offset > len;
  start := c.end_offset - length(c.bytes);
  IF len > start THEN INSERT INTO ${s}.chunks VALUES (e.file_id, len, substring(c.bytes FROM 1 FOR (len - start)::int)); END IF;
  UPDATE ${s}.entries SET size = len, revision = NULL WHERE path = p;
END $$;

DROP FUNCTION ${s}.run_plan(bigint, boolean, text, bytea, text, bigint, text[], text[], bytea[], bigint, text, text);
-- As in version 1, with the writes' bytes as one value (data, cut by lengths) and the
-- revision each write carries (revisions, for a meta.json; else NULL); the revision check
-- reads entries.revision and parses the document only when that is NULL.
CREATE FUNCTION ${s}.run_plan(
  lock_key bigint, hold boolean, lock_path text, lock_bytes bytea,
  expect_path text, expect_revision bigint,
  ops text[], paths text[], data bytea, lengths integer[], revisions bigint[],
  release_key bigint, release_path text, release_lock_id text
) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  found_revision bigint;
  at integer := 1;
BEGIN
  IF lock_key IS NOT NULL THEN
    IF hold THEN
      IF NOT pg_try_advisory_lock(lock_key) THEN RETURN 'locked'; END IF;
    ELSIF NOT pg_try_advisory_xact_lock(lock_key) THEN
      RETURN 'locked';
    END IF;
  END IF;
  IF expect_path IS NOT NULL THEN
    SELECT revision INTO found_revision FROM ${s}.entries WHERE path = expect_path AND file_id IS NOT NULL;
    IF FOUND AND found_revision IS NULL THEN found_revision := ${s}.revision_of(expect_path); END IF;
    IF found_revision = -1 OR found_revision IS DISTINCT FROM expect_revision THEN
      IF lock_key IS NOT NULL AND hold THEN PERFORM pg_advisory_unlock(lock_key); END IF;
      RETURN CASE WHEN found_revision = -1 THEN 'check' ELSE 'conflict:' || coalesce(found_revision::text, 'null') END;
    END IF;
  END IF;
  IF lock_key IS NOT NULL THEN
    -- The lock record: written when it is held on, else only a dead holder's stale one is dropped.
    IF hold THEN
      PERFORM ${s}.replace(lock_path, lock_bytes);
    ELSIF EXISTS (SELECT 1 FROM ${s}.entries WHERE path = lock_path) THEN
      PERFORM ${s}.remove(lock_path);
    END IF;
  END IF;
  FOR i IN 1 .. coalesce(array_length(ops, 1), 0) LOOP
    IF ops[i] = 'append' THEN PERFORM ${s}.append(paths[i], substring(data FROM at FOR lengths[i]));
    ELSE PERFORM ${s}.replace(paths[i], substring(data FROM at FOR lengths[i]), revisions[i]);
    END IF;
    at := at + lengths[i];
  END LOOP;
  IF release_key IS NOT NULL THEN
    PERFORM ${s}.remove_lock_record(release_path, release_lock_id);
    -- Hand the session lock over to a transaction lock, so it is free only once this commits.
    PERFORM pg_advisory_xact_lock(release_key);
    PERFORM pg_advisory_unlock(release_key);
  END IF;
  RETURN 'committed';
END $$;
`;
}

/**
 * Migration 3: the catalog a listing reads (docs/FORMAT.md "The catalog"), on the rows of the
 * `meta.json` files themselves, so it is written in the same statement as the file and can
 * never disagree with it.
 * - `entries.listing`: the listing fields of the file read as a `meta.json` document, as JSON
 *   text, given by the writer (the client reads them from the bytes it sends, as it does the
 *   revision); `NULL` when not known (a document that is not one, a store migrated from
 *   version 2 until the file is written again: the reader then derives them from the bytes).
 * - `entries.listed_at`: its `updated_at`, and the index `entries_by_activity` on (the folder
 *   of sessions, `listed_at` newest first, the session folder), so a page of a listing by last
 *   activity reads its rows and no others. Filled for the `meta.json` files already stored.
 * - `replace`, `create_exclusive` and `run_plan` take the two per write; `append` and
 *   `truncate` make them unknown.
 */
function migration3(s: string): string {
  return `
ALTER TABLE ${s}.entries ADD COLUMN listing text, ADD COLUMN listed_at text COLLATE "C";
COMMENT ON COLUMN ${s}.entries.listing IS 'the listing fields of this file as a meta.json document (JSON), given by its writer; NULL when not known';
COMMENT ON COLUMN ${s}.entries.listed_at IS 'the updated_at of this file as a meta.json document; NULL when not known';
CREATE INDEX entries_by_activity ON ${s}.entries (${s}.parent_of(parent), listed_at DESC, parent) WHERE name = 'meta.json';

CREATE FUNCTION ${s}.updated_at_of(p text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE doc bytea;
BEGIN
  SELECT coalesce(string_agg(c.bytes, ''::bytea ORDER BY c.end_offset), ''::bytea) INTO doc
    FROM ${s}.entries e LEFT JOIN ${s}.chunks c ON c.file_id = e.file_id
    WHERE e.path = p AND e.file_id IS NOT NULL GROUP BY e.path;
  RETURN convert_from(doc, 'UTF8')::jsonb ->> 'updated_at';
EXCEPTION WHEN others THEN
  RETURN NULL;
END $$;
UPDATE ${s}.entries SET listed_at = ${s}.updated_at_of(path) WHERE name = 'meta.json' AND file_id IS NOT NULL;

CREATE OR REPLACE FUNCTION ${s}.append(p text, b bytea) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  fid bigint;
  new_size bigint;
BEGIN
  IF length(b) = 0 THEN PERFORM ${s}.open_file(p); RETURN; END IF;
  UPDATE ${s}.entries SET size = size + length(b), revision = NULL, listing = NULL, listed_at = NULL
    WHERE path = p AND file_id IS NOT NULL RETURNING file_id, size INTO fid, new_size;
  IF NOT FOUND THEN
    fid := (${s}.open_file(p)).file_id;
    UPDATE ${s}.entries SET size = size + length(b), revision = NULL, listing = NULL, listed_at = NULL WHERE path = p RETURNING size INTO new_size;
  END IF;
  INSERT INTO ${s}.chunks VALUES (fid, new_size, b);
END $$;

DROP FUNCTION ${s}.replace(text, bytea, bigint);
CREATE FUNCTION ${s}.replace(p text, b bytea, rev bigint DEFAULT NULL, lst text DEFAULT NULL, lat text DEFAULT NULL) RETURNS void LANGUAGE plpgsql AS $$
DECLARE fid bigint;
BEGIN
  UPDATE ${s}.entries SET size = length(b), revision = rev, listing = lst, listed_at = lat WHERE path = p AND file_id IS NOT NULL RETURNING file_id INTO fid;
  IF NOT FOUND THEN
    fid := (${s}.open_file(p)).file_id;
    UPDATE ${s}.entries SET size = length(b), revision = rev, listing = lst, listed_at = lat WHERE path = p;
  END IF;
  DELETE FROM ${s}.chunks WHERE file_id = fid;
  IF length(b) > 0 THEN INSERT INTO ${s}.chunks VALUES (fid, length(b), b); END IF;
END $$;

DROP FUNCTION ${s}.create_exclusive(text, bytea);
CREATE FUNCTION ${s}.create_exclusive(p text, b bytea, lst text DEFAULT NULL, lat text DEFAULT NULL) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE fid bigint;
BEGIN
  IF EXISTS (SELECT 1 FROM ${s}.entries WHERE path = p) THEN RETURN false; END IF;
  PERFORM ${s}.ensure_parents(p);
  INSERT INTO ${s}.entries (path, parent, name, file_id, size, listing, listed_at)
    VALUES (p, ${s}.parent_of(p), ${s}.name_of(p), nextval('${s}.file_ids'), length(b), lst, lat)
    ON CONFLICT (path) DO NOTHING RETURNING file_id INTO fid;
  IF NOT FOUND THEN RETURN false; END IF;
  IF length(b) > 0 THEN INSERT INTO ${s}.chunks VALUES (fid, length(b), b); END IF;
  RETURN true;
END $$;

CREATE OR REPLACE FUNCTION ${s}.truncate(p text, len bigint) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  e ${s}.entries;
  c ${s}.chunks;
  start bigint;
BEGIN
  SELECT * INTO e FROM ${s}.entries WHERE path = p AND file_id IS NOT NULL FOR UPDATE;
  len := greatest(len, 0);
  IF NOT FOUND OR len >= e.size THEN RETURN; END IF;
  SELECT * INTO c FROM ${s}.chunks WHERE file_id = e.file_id AND end_offset > len ORDER BY end_offset LIMIT 1;
  DELETE FROM ${s}.chunks WHERE file_id = e.file_id AND end_offset > len;
  start := c.end_offset - length(c.bytes);
  IF len > start THEN INSERT INTO ${s}.chunks VALUES (e.file_id, len, substring(c.bytes FROM 1 FOR (len - start)::int)); END IF;
  UPDATE ${s}.entries SET size = len, revision = NULL, listing = NULL, listed_at = NULL WHERE path = p;
END $$;

DROP FUNCTION ${s}.run_plan(bigint, boolean, text, bytea, text, bigint, text[], text[], bytea, integer[], bigint[], bigint, text, text);
-- As in version 2, with each write's listing fields and updated_at (for a meta.json; else NULL).
CREATE FUNCTION ${s}.run_plan(
  lock_key bigint, hold boolean, lock_path text, lock_bytes bytea,
  expect_path text, expect_revision bigint,
  ops text[], paths text[], data bytea, lengths integer[], revisions bigint[],
  release_key bigint, release_path text, release_lock_id text,
  listings text[], listed_ats text[]
) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  found_revision bigint;
  at integer := 1;
BEGIN
  IF lock_key IS NOT NULL THEN
    IF hold THEN
      IF NOT pg_try_advisory_lock(lock_key) THEN RETURN 'locked'; END IF;
    ELSIF NOT pg_try_advisory_xact_lock(lock_key) THEN
      RETURN 'locked';
    END IF;
  END IF;
  IF expect_path IS NOT NULL THEN
    SELECT revision INTO found_revision FROM ${s}.entries WHERE path = expect_path AND file_id IS NOT NULL;
    IF FOUND AND found_revision IS NULL THEN found_revision := ${s}.revision_of(expect_path); END IF;
    IF found_revision = -1 OR found_revision IS DISTINCT FROM expect_revision THEN
      IF lock_key IS NOT NULL AND hold THEN PERFORM pg_advisory_unlock(lock_key); END IF;
      RETURN CASE WHEN found_revision = -1 THEN 'check' ELSE 'conflict:' || coalesce(found_revision::text, 'null') END;
    END IF;
  END IF;
  IF lock_key IS NOT NULL THEN
    -- The lock record: written when it is held on, else only a dead holder's stale one is dropped.
    IF hold THEN
      PERFORM ${s}.replace(lock_path, lock_bytes);
    ELSIF EXISTS (SELECT 1 FROM ${s}.entries WHERE path = lock_path) THEN
      PERFORM ${s}.remove(lock_path);
    END IF;
  END IF;
  FOR i IN 1 .. coalesce(array_length(ops, 1), 0) LOOP
    IF ops[i] = 'append' THEN PERFORM ${s}.append(paths[i], substring(data FROM at FOR lengths[i]));
    ELSE PERFORM ${s}.replace(paths[i], substring(data FROM at FOR lengths[i]), revisions[i], listings[i], listed_ats[i]);
    END IF;
    at := at + lengths[i];
  END LOOP;
  IF release_key IS NOT NULL THEN
    PERFORM ${s}.remove_lock_record(release_path, release_lock_id);
    -- Hand the session lock over to a transaction lock, so it is free only once this commits.
    PERFORM pg_advisory_xact_lock(release_key);
    PERFORM pg_advisory_unlock(release_key);
  END IF;
  RETURN 'committed';
END $$;
`;
}

/**
 * Migration 4: `run_plan` does a commit's writes itself instead of calling `append` and
 * `replace` per write (docs/POSTGRES.md "Writer ownership and commits"): a nested PL/pgSQL
 * call is an executor run and a function start of its own. The common case is one statement
 * per append (the size moved and the chunk inserted together) and three per replace, whose
 * chunk is updated in place when the size is unchanged (no new index entry); a write to a file
 * that does not exist yet, or an empty append, still goes through `append` and `replace`,
 * which create it. The revision check and the stale lock record are read in one statement.
 * Same signature, same stored bytes.
 */
function migration4(s: string): string {
  return `
CREATE OR REPLACE FUNCTION ${s}.run_plan(
  lock_key bigint, hold boolean, lock_path text, lock_bytes bytea,
  expect_path text, expect_revision bigint,
  ops text[], paths text[], data bytea, lengths integer[], revisions bigint[],
  release_key bigint, release_path text, release_lock_id text,
  listings text[], listed_ats text[]
) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  meta_found boolean;
  found_revision bigint;
  stale_lock boolean;
  at integer := 1;
  len integer;
  fid bigint;
BEGIN
  IF lock_key IS NOT NULL THEN
    IF hold THEN
      IF NOT pg_try_advisory_lock(lock_key) THEN RETURN 'locked'; END IF;
    ELSIF NOT pg_try_advisory_xact_lock(lock_key) THEN
      RETURN 'locked';
    END IF;
  END IF;
  -- Read after the lock is taken (a statement of its own, so a snapshot that sees the last holder's commit).
  SELECT m.path IS NOT NULL, m.revision, EXISTS (SELECT 1 FROM ${s}.entries WHERE path = lock_path AND NOT hold)
    INTO meta_found, found_revision, stale_lock
    FROM (SELECT 1) one LEFT JOIN ${s}.entries m ON m.path = expect_path AND m.file_id IS NOT NULL;
  IF expect_path IS NOT NULL THEN
    IF meta_found AND found_revision IS NULL THEN found_revision := ${s}.revision_of(expect_path); END IF;
    IF found_revision = -1 OR found_revision IS DISTINCT FROM expect_revision THEN
      IF lock_key IS NOT NULL AND hold THEN PERFORM pg_advisory_unlock(lock_key); END IF;
      RETURN CASE WHEN found_revision = -1 THEN 'check' ELSE 'conflict:' || coalesce(found_revision::text, 'null') END;
    END IF;
  END IF;
  IF lock_key IS NOT NULL THEN
    -- The lock record: written when it is held on, else only a dead holder's stale one is dropped.
    IF hold THEN
      PERFORM ${s}.replace(lock_path, lock_bytes);
    ELSIF stale_lock THEN
      PERFORM ${s}.remove(lock_path);
    END IF;
  END IF;
  FOR i IN 1 .. coalesce(array_length(ops, 1), 0) LOOP
    len := lengths[i];
    IF ops[i] = 'append' THEN
      -- As append(): the size moved (the row locked) and the chunk inserted, in one statement.
      IF len > 0 THEN
        WITH moved AS (
          UPDATE ${s}.entries SET size = size + len, revision = NULL, listing = NULL, listed_at = NULL
          WHERE path = paths[i] AND file_id IS NOT NULL RETURNING file_id, size)
        INSERT INTO ${s}.chunks SELECT file_id, size, substring(data FROM at FOR len) FROM moved;
      END IF;
      IF len = 0 OR NOT FOUND THEN PERFORM ${s}.append(paths[i], substring(data FROM at FOR len)); END IF;
    ELSE
      -- As replace().
      UPDATE ${s}.entries SET size = len, revision = revisions[i], listing = listings[i], listed_at = listed_ats[i]
        WHERE path = paths[i] AND file_id IS NOT NULL RETURNING file_id INTO fid;
      IF FOUND THEN
        -- Its one chunk kept in place when the size did not change (meta.json's usually does
        -- not): an update of the bytes, no new index entry.
        DELETE FROM ${s}.chunks WHERE file_id = fid AND end_offset <> len;
        IF len > 0 THEN
          INSERT INTO ${s}.chunks VALUES (fid, len, substring(data FROM at FOR len))
            ON CONFLICT (file_id, end_offset) DO UPDATE SET bytes = excluded.bytes;
        END IF;
      ELSE
        PERFORM ${s}.replace(paths[i], substring(data FROM at FOR len), revisions[i], listings[i], listed_ats[i]);
      END IF;
    END IF;
    at := at + len;
  END LOOP;
  IF release_key IS NOT NULL THEN
    PERFORM ${s}.remove_lock_record(release_path, release_lock_id);
    -- Hand the session lock over to a transaction lock, so it is free only once this commits.
    PERFORM pg_advisory_xact_lock(release_key);
    PERFORM pg_advisory_unlock(release_key);
  END IF;
  RETURN 'committed';
END $$;
`;
}

/**
 * Migration 5: a commit's usual writes (its lines appended, `meta.json` replaced) in one
 * statement, after the read of the revision. A file whose `revision` column is known was last
 * written whole by a commit (every other write sets it to `NULL`), so it is exactly one chunk,
 * ending at its size: `run_plan` reads the row's size and file id with the revision, and
 * updates that row and that chunk where they are, in the statement that moves the lines' row
 * and inserts their chunk (data-modifying CTEs, each finding its rows by key). The row's update
 * holds only while the row is still what was read (its size, a known revision); when a write
 * outside a commit came between, the replace runs as version 4's three statements, and a file
 * that does not exist yet is still created by `append`/`replace`. The unique index on
 * `entries.file_id`, which no statement uses, is dropped. Same signature, same stored bytes.
 */
function migration5(s: string): string {
  return `
-- No statement looks a row up by its file id (they come from a sequence): one index less to
-- update each time a row moves, as meta.json's does at every commit.
ALTER TABLE ${s}.entries DROP CONSTRAINT entries_file_id_key;

CREATE OR REPLACE FUNCTION ${s}.run_plan(
  lock_key bigint, hold boolean, lock_path text, lock_bytes bytea,
  expect_path text, expect_revision bigint,
  ops text[], paths text[], data bytea, lengths integer[], revisions bigint[],
  release_key bigint, release_path text, release_lock_id text,
  listings text[], listed_ats text[]
) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  meta_found boolean;
  found_revision bigint;
  meta_id bigint;
  meta_size bigint;
  one_chunk boolean;
  stale_lock boolean;
  appended boolean;
  replaced boolean;
  first integer := 1;
  at integer := 1;
  len integer;
  fid bigint;
BEGIN
  IF lock_key IS NOT NULL THEN
    IF hold THEN
      IF NOT pg_try_advisory_lock(lock_key) THEN RETURN 'locked'; END IF;
    ELSIF NOT pg_try_advisory_xact_lock(lock_key) THEN
      RETURN 'locked';
    END IF;
  END IF;
  -- Read after the lock is taken (a statement of its own, so a snapshot that sees the last holder's commit).
  SELECT m.path IS NOT NULL, m.revision, m.file_id, m.size, EXISTS (SELECT 1 FROM ${s}.entries WHERE path = lock_path AND NOT hold)
    INTO meta_found, found_revision, meta_id, meta_size, stale_lock
    FROM (SELECT 1) one LEFT JOIN ${s}.entries m ON m.path = expect_path AND m.file_id IS NOT NULL;
  -- A known revision: the file is the one chunk a commit wrote (see migration 5).
  one_chunk := found_revision IS NOT NULL AND meta_size > 0;
  IF expect_path IS NOT NULL THEN
    IF meta_found AND found_revision IS NULL THEN found_revision := ${s}.revision_of(expect_path); END IF;
    IF found_revision = -1 OR found_revision IS DISTINCT FROM expect_revision THEN
      IF lock_key IS NOT NULL AND hold THEN PERFORM pg_advisory_unlock(lock_key); END IF;
      RETURN CASE WHEN found_revision = -1 THEN 'check' ELSE 'conflict:' || coalesce(found_revision::text, 'null') END;
    END IF;
  END IF;
  IF lock_key IS NOT NULL THEN
    -- The lock record: written when it is held on, else only a dead holder's stale one is dropped.
    IF hold THEN
      PERFORM ${s}.replace(lock_path, lock_bytes);
    ELSIF stale_lock THEN
      PERFORM ${s}.remove(lock_path);
    END IF;
  END IF;
  -- A commit's usual writes (its lines appended, meta.json replaced) in one statement: each
  -- half that found nothing to update (a file to create, a row that changed) is done below.
  IF one_chunk AND array_length(ops, 1) = 2 AND ops[1] = 'append' AND ops[2] = 'replace' AND paths[2] = expect_path
     AND paths[1] <> expect_path AND lengths[1] > 0 AND lengths[2] > 0 THEN
    WITH moved AS (
      UPDATE ${s}.entries SET size = size + lengths[1], revision = NULL, listing = NULL, listed_at = NULL
      WHERE path = paths[1] AND file_id IS NOT NULL RETURNING file_id, size),
    added AS (INSERT INTO ${s}.chunks SELECT file_id, size, substring(data FROM 1 FOR lengths[1]) FROM moved RETURNING 1),
    kept AS (
      UPDATE ${s}.entries SET size = lengths[2], revision = revisions[2], listing = listings[2], listed_at = listed_ats[2]
      WHERE path = paths[2] AND file_id = meta_id AND size = meta_size AND revision IS NOT NULL RETURNING 1),
    rewritten AS (
      UPDATE ${s}.chunks SET end_offset = lengths[2], bytes = substring(data FROM 1 + lengths[1] FOR lengths[2])
      WHERE file_id = meta_id AND end_offset = meta_size AND EXISTS (SELECT 1 FROM kept) RETURNING 1)
    SELECT EXISTS (SELECT 1 FROM added), EXISTS (SELECT 1 FROM rewritten) INTO appended, replaced;
    IF NOT appended THEN PERFORM ${s}.append(paths[1], substring(data FROM 1 FOR lengths[1])); END IF;
    first := CASE WHEN replaced THEN 3 ELSE 2 END;
    at := 1 + lengths[1];
    one_chunk := false;
  END IF;
  FOR i IN first .. coalesce(array_length(ops, 1), 0) LOOP
    len := lengths[i];
    IF ops[i] = 'append' THEN
      -- As append(): the size moved (the row locked) and the chunk inserted, in one statement.
      IF len > 0 THEN
        WITH moved AS (
          UPDATE ${s}.entries SET size = size + len, revision = NULL, listing = NULL, listed_at = NULL
          WHERE path = paths[i] AND file_id IS NOT NULL RETURNING file_id, size)
        INSERT INTO ${s}.chunks SELECT file_id, size, substring(data FROM at FOR len) FROM moved;
      END IF;
      IF len = 0 OR NOT FOUND THEN PERFORM ${s}.append(paths[i], substring(data FROM at FOR len)); END IF;
      IF paths[i] = expect_path THEN one_chunk := false; END IF;
    ELSE
      -- The file read above, still one chunk: its row and its chunk in one statement. The
      -- row is updated only while it is what was read; else nothing is, and the steps below run.
      IF one_chunk AND len > 0 AND paths[i] = expect_path THEN
        WITH kept AS (
          UPDATE ${s}.entries SET size = len, revision = revisions[i], listing = listings[i], listed_at = listed_ats[i]
          WHERE path = paths[i] AND file_id = meta_id AND size = meta_size AND revision IS NOT NULL RETURNING 1)
        UPDATE ${s}.chunks SET end_offset = len, bytes = substring(data FROM at FOR len)
          WHERE file_id = meta_id AND end_offset = meta_size AND EXISTS (SELECT 1 FROM kept);
        one_chunk := false;
        IF FOUND THEN
          at := at + len;
          CONTINUE;
        END IF;
      END IF;
      -- As replace().
      UPDATE ${s}.entries SET size = len, revision = revisions[i], listing = listings[i], listed_at = listed_ats[i]
        WHERE path = paths[i] AND file_id IS NOT NULL RETURNING file_id INTO fid;
      IF FOUND THEN
        -- Its one chunk kept in place when the size did not change: an update of the bytes.
        DELETE FROM ${s}.chunks WHERE file_id = fid AND end_offset <> len;
        IF len > 0 THEN
          INSERT INTO ${s}.chunks VALUES (fid, len, substring(data FROM at FOR len))
            ON CONFLICT (file_id, end_offset) DO UPDATE SET bytes = excluded.bytes;
        END IF;
      ELSE
        PERFORM ${s}.replace(paths[i], substring(data FROM at FOR len), revisions[i], listings[i], listed_ats[i]);
      END IF;
    END IF;
    at := at + len;
  END LOOP;
  IF release_key IS NOT NULL THEN
    PERFORM ${s}.remove_lock_record(release_path, release_lock_id);
    -- Hand the session lock over to a transaction lock, so it is free only once this commits.
    PERFORM pg_advisory_xact_lock(release_key);
    PERFORM pg_advisory_unlock(release_key);
  END IF;
  RETURN 'committed';
END $$;
`;
}

/**
 * Migration 6: `run_append`, a per-operation commit of an append (its lines appended,
 * `meta.json` replaced, under a transaction-level lock) with scalar arguments, in one
 * statement after the lock (docs/POSTGRES.md "Writer ownership and commits"). `run_plan`
 * spent about as long in PL/pgSQL as in its statements: a second statement for the revision
 * read, a dozen expressions set up anew in each transaction, and seven array arguments
 * expanded at every call. Here the revision check, the stale lock record's absence and
 * `meta.json`'s one chunk are conditions of the write statement itself (its snapshot is taken
 * after the lock, so it sees the last holder's commit), and every write is conditioned on the
 * one before it. Whatever it did not write is done the general way in the same transaction:
 * nothing written (a revision that differs or is not known, a stale lock record, a file to
 * create) runs `run_plan` with the same writes; the lines written but not `meta.json` (a
 * write outside a commit changed its row in between) replaces `meta.json` whole.
 */
function migration6(s: string): string {
  return `
CREATE FUNCTION ${s}.run_append(
  lock_key bigint, lock_path text, meta_path text, expect_revision bigint,
  lines_path text, lines bytea, meta bytea, meta_revision bigint, meta_listing text, meta_listed_at text
) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  appended boolean;
  replaced boolean;
BEGIN
  IF NOT pg_try_advisory_xact_lock(lock_key) THEN RETURN 'locked'; END IF;
  -- One statement after the lock: meta.json still at the expected revision, known, so one chunk
  -- ending at its size (see migration 5); no stale lock record; then each write only if the one
  -- before it was done, each finding its rows by key.
  WITH m AS (
    SELECT file_id, size FROM ${s}.entries
    WHERE path = meta_path AND file_id IS NOT NULL AND revision = expect_revision AND size > 0
      AND length(lines) > 0 AND length(meta) > 0 AND lines_path <> meta_path
      AND NOT EXISTS (SELECT 1 FROM ${s}.entries WHERE path = lock_path)),
  moved AS (
    UPDATE ${s}.entries SET size = size + length(lines), revision = NULL, listing = NULL, listed_at = NULL
    WHERE path = lines_path AND file_id IS NOT NULL AND EXISTS (SELECT 1 FROM m) RETURNING file_id, size),
  added AS (INSERT INTO ${s}.chunks SELECT file_id, size, lines FROM moved RETURNING 1),
  kept AS (
    UPDATE ${s}.entries SET size = length(meta), revision = meta_revision, listing = meta_listing, listed_at = meta_listed_at
    WHERE path = meta_path AND file_id = (SELECT file_id FROM m) AND size = (SELECT size FROM m) AND revision IS NOT NULL
      AND EXISTS (SELECT 1 FROM added) RETURNING file_id),
  rewritten AS (
    UPDATE ${s}.chunks SET end_offset = length(meta), bytes = meta
    WHERE file_id = (SELECT file_id FROM kept) AND end_offset = (SELECT size FROM m) RETURNING 1)
  SELECT EXISTS (SELECT 1 FROM added), EXISTS (SELECT 1 FROM rewritten) INTO appended, replaced;
  IF replaced THEN RETURN 'committed'; END IF;
  IF appended THEN
    -- meta.json's row changed after the statement's snapshot (the row's update re-checked it).
    PERFORM ${s}.replace(meta_path, meta, meta_revision, meta_listing, meta_listed_at);
    RETURN 'committed';
  END IF;
  -- Nothing written: the general way, which reports a conflict, reads a revision not known,
  -- drops a stale lock record and creates missing files (the lock is taken again: it stacks).
  RETURN ${s}.run_plan(lock_key, false, lock_path, NULL, meta_path, expect_revision,
    ARRAY['append', 'replace'], ARRAY[lines_path, meta_path], lines || meta, ARRAY[length(lines), length(meta)],
    ARRAY[NULL, meta_revision]::bigint[], NULL, NULL, NULL, ARRAY[NULL, meta_listing], ARRAY[NULL, meta_listed_at]);
END $$;
`;
}

/**
 * Creates the schema `schema` or brings it to {@linkcode SCHEMA_VERSION} (`version`: an
 * older one, for the tests of a migration), in one transaction under an advisory lock
 * (hosts that start together wait for one another).
 *
 * @throws {Error} when the store was written by a newer version of this code.
 */
export async function migrate(client: PoolClient | Client, schema: string, lockKey: string, version = SCHEMA_VERSION): Promise<void> {
  const s = quoteIdent(schema);
  await client.query("BEGIN");
  try {
    await client.query("SELECT pg_advisory_xact_lock($1)", [lockKey]);
    // Created only when missing: the server checks the right to create before it looks for the
    // name, so `IF NOT EXISTS` alone would refuse a role that owns its schema but may not create
    // schemas in the database (docs/POSTGRES.md "Roles and privileges").
    const present = await client.query<{ schema: boolean; table: boolean; role: string }>(
      "SELECT to_regnamespace($1) IS NOT NULL AS schema, to_regclass($2) IS NOT NULL AS table, current_user AS role",
      [s, `${s}.schema_version`],
    );
    const { schema: schemaFound, table: tableFound, role } = present.rows[0]!;
    if (!schemaFound) await createSchema(client, schema, role);
    if (!tableFound) await client.query(`CREATE TABLE IF NOT EXISTS ${s}.schema_version (version integer NOT NULL)`);
    const found = await client.query<{ version: number }>(`SELECT version FROM ${s}.schema_version`);
    const current = found.rows[0]?.version ?? 0;
    if (current > SCHEMA_VERSION) {
      throw new Error(`schema ${schema} is at version ${current}; this code knows versions up to ${SCHEMA_VERSION}`);
    }
    for (let n = current + 1; n <= version; n++) await client.query(migrationSql(n, s));
    if (current === 0) await client.query(`INSERT INTO ${s}.schema_version VALUES ($1)`, [version]);
    else if (current < version) await client.query(`UPDATE ${s}.schema_version SET version = $1`, [version]);
    await client.query("COMMIT");
  } catch (error) {
    await client.query("ROLLBACK").catch(() => undefined);
    throw error;
  }
}

/**
 * Creates the missing schema `schema`; a role that may not (SQLSTATE 42501) is told what to do
 * instead, with the server's own error as the cause.
 */
async function createSchema(client: PoolClient | Client, schema: string, role: string): Promise<void> {
  try {
    await client.query(`CREATE SCHEMA IF NOT EXISTS ${quoteIdent(schema)}`);
  } catch (error) {
    const { code, message } = error as { code?: unknown; message?: unknown };
    if (code !== "42501") throw error;
    throw Object.assign(
      new Error(
        `schema ${schema} does not exist and role ${role} may not create it (${String(message)}); ` +
          `create it first as an administrator (CREATE SCHEMA ${quoteIdent(schema)} AUTHORIZATION ${
            quoteIdent(role)
          }) or grant the role CREATE on the database`,
        { cause: error },
      ),
      { code },
    );
  }
}
