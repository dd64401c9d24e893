// The PostgreSQL money schema, as numbered migrations held in code (so `npm run build` needs
// nothing beyond tsc). migrate.ts applies the ones a database lacks, in order, each in its own
// transaction. Everything lives in the `cpgw` schema: finance can query cpgw.ledger with SQL.
//
// Every money operation is one plpgsql function (one round trip, one transaction). Lock order,
// the same in every function, so concurrent replicas never deadlock: the charge key's advisory
// lock, the pending entry, the claim, budget counters sorted by key, the company's window row,
// the ledger head last (it serialises appends, so it is held for the shortest time). Hold and
// row expiry use the database clock (now()); leases and windows compare the caller's times.
//
// Must never: edit a migration once released (add a new one), or hold a lock across statements
// of different operations.

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

const V1_TABLES = `
CREATE TABLE cpgw.ledger (
  ms bigint NOT NULL,
  seq integer NOT NULL,
  id text NOT NULL UNIQUE,
  at timestamptz NOT NULL,
  at_ms bigint NOT NULL,
  app text,
  operation text,
  kind text,
  inn text,
  amount_minor bigint,
  request_id text,
  upstream_request_id text,
  idempotency_key text,
  reconciled boolean NOT NULL DEFAULT false,
  record jsonb NOT NULL,
  written_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (ms, seq)
);
CREATE INDEX ledger_at ON cpgw.ledger (at);
CREATE INDEX ledger_app_at ON cpgw.ledger (app, at);
CREATE INDEX ledger_idempotency_key ON cpgw.ledger (idempotency_key);
COMMENT ON TABLE cpgw.ledger IS 'cpgw: one row per charge the upstream made (append-only; id <ms>-<seq> is time-ordered)';
COMMENT ON COLUMN cpgw.ledger.amount_minor IS 'kopecks charged (X-Charged-Minor)';
COMMENT ON COLUMN cpgw.ledger.record IS 'the entry as the gateway wrote it (every field)';

CREATE TABLE cpgw.ledger_head (
  one boolean PRIMARY KEY DEFAULT true CHECK (one),
  ms bigint NOT NULL,
  seq integer NOT NULL
);
INSERT INTO cpgw.ledger_head (one, ms, seq) VALUES (true, -1, -1);

CREATE TABLE cpgw.counters (
  key text PRIMARY KEY,
  spent_minor bigint NOT NULL DEFAULT 0,
  expires_at timestamptz NOT NULL
);
CREATE INDEX counters_expires_at ON cpgw.counters (expires_at);
COMMENT ON TABLE cpgw.counters IS 'cpgw: budget spend per counter (app:NAME:day:DATE, global:month:MONTH, ...)';

CREATE TABLE cpgw.holds (
  counter_key text NOT NULL,
  id text NOT NULL,
  amount_minor bigint NOT NULL,
  expires_at timestamptz NOT NULL,
  PRIMARY KEY (counter_key, id)
);
COMMENT ON TABLE cpgw.holds IS 'cpgw: estimates held on a counter by calls in flight (reserved = their sum)';

CREATE TABLE cpgw.pending_charges (
  key text PRIMARY KEY,
  body jsonb NOT NULL,
  at_ms bigint NOT NULL,
  app text NOT NULL,
  kind text NOT NULL,
  inn text NOT NULL,
  estimate_minor bigint NOT NULL,
  counters text[] NOT NULL,
  owner text NOT NULL,
  lease_until bigint NOT NULL,
  attempts integer NOT NULL DEFAULT 0,
  replay_key text,
  holds_written boolean NOT NULL,
  opened_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX pending_charges_at ON cpgw.pending_charges (at_ms, key COLLATE "C");
COMMENT ON TABLE cpgw.pending_charges IS 'cpgw: paid calls sent or about to be sent upstream whose outcome is not recorded yet';

CREATE TABLE cpgw.claims (
  key text PRIMARY KEY,
  request_id text,
  expires_at timestamptz NOT NULL
);
CREATE INDEX claims_expires_at ON cpgw.claims (expires_at);
COMMENT ON TABLE cpgw.claims IS 'cpgw: idempotency keys already recorded (one ledger row each)';

CREATE TABLE cpgw.windows (
  inn text PRIMARY KEY,
  dossier_until bigint NOT NULL,
  requisites_until bigint NOT NULL,
  ends_at bigint NOT NULL,
  expires_at timestamptz NOT NULL
);
CREATE INDEX windows_ends_at ON cpgw.windows (ends_at);
CREATE INDEX windows_expires_at ON cpgw.windows (expires_at);
COMMENT ON TABLE cpgw.windows IS 'cpgw: free re-read windows per company (ms epoch), never shortened by a charge';
`;

const V1_FUNCTIONS = `
CREATE FUNCTION cpgw.json_int(v jsonb) RETURNS bigint LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN jsonb_typeof(v) = 'number' AND (v #>> '{}') ~ '^-?[0-9]{1,18}$'
    THEN (v #>> '{}')::bigint END
$$;

CREATE FUNCTION cpgw.ms(n bigint) RETURNS interval LANGUAGE sql IMMUTABLE AS $$
  SELECT n * interval '1 millisecond'
$$;

-- Creates the missing counters (as already expired: invisible until written), locks them in key
-- order, and starts an expired counter again from nothing (its spend and holds gone), dropping
-- expired holds.
CREATE FUNCTION cpgw.lock_counters(p_keys text[], p_create boolean, t timestamptz) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  IF p_create THEN
    INSERT INTO cpgw.counters (key, spent_minor, expires_at)
      SELECT k, 0, t FROM (SELECT DISTINCT unnest(p_keys) AS k) s ORDER BY k COLLATE "C"
      ON CONFLICT (key) DO NOTHING;
  END IF;
  PERFORM 1 FROM cpgw.counters WHERE key = ANY (p_keys) ORDER BY key COLLATE "C" FOR UPDATE;
  DELETE FROM cpgw.holds h USING cpgw.counters c
    WHERE c.key = ANY (p_keys) AND c.expires_at <= t AND h.counter_key = c.key;
  UPDATE cpgw.counters SET spent_minor = 0
    WHERE key = ANY (p_keys) AND expires_at <= t AND spent_minor <> 0;
  DELETE FROM cpgw.holds WHERE counter_key = ANY (p_keys) AND expires_at <= t;
END $$;

-- BudgetStore.reserve: {1, wrote 0|1} or {0, refusing index (1-based), spent, held}.
CREATE FUNCTION cpgw.reserve(p_id text, p_amount bigint, p_hold_ms bigint,
  p_keys text[], p_limits bigint[], p_ttls bigint[]) RETURNS bigint[]
LANGUAGE plpgsql AS $$
DECLARE
  t timestamptz := now();
  n integer := coalesce(array_length(p_keys, 1), 0);
  s bigint;
  h bigint;
  mine bigint;
  wrote bigint := 0;
BEGIN
  IF n = 0 THEN RETURN ARRAY[1, 0]; END IF;
  PERFORM cpgw.lock_counters(p_keys, true, t);
  FOR i IN 1..n LOOP
    IF p_limits[i] IS NOT NULL THEN
      SELECT c.spent_minor INTO s FROM cpgw.counters c WHERE c.key = p_keys[i];
      SELECT coalesce(sum(amount_minor), 0), coalesce(sum(amount_minor) FILTER (WHERE id = p_id), 0)
        INTO h, mine FROM cpgw.holds WHERE counter_key = p_keys[i];
      IF s + h - mine + p_amount > p_limits[i] THEN RETURN ARRAY[0, i, s, h]; END IF;
    END IF;
  END LOOP;
  FOR i IN 1..n LOOP
    -- A hold of 0 with none before it (a read an open window covers) changes no counter.
    IF p_amount <> 0 OR EXISTS (SELECT 1 FROM cpgw.holds WHERE counter_key = p_keys[i] AND id = p_id) THEN
      wrote := 1;
      INSERT INTO cpgw.holds (counter_key, id, amount_minor, expires_at)
        VALUES (p_keys[i], p_id, p_amount, t + cpgw.ms(p_hold_ms))
        ON CONFLICT (counter_key, id)
        DO UPDATE SET amount_minor = EXCLUDED.amount_minor, expires_at = EXCLUDED.expires_at;
      UPDATE cpgw.counters SET expires_at = t + cpgw.ms(p_ttls[i]) WHERE key = p_keys[i];
    END IF;
  END LOOP;
  RETURN ARRAY[1, wrote];
END $$;

-- settle / addSpend / release: p_id NULL = no hold; p_amount NULL = release only (no spend).
CREATE FUNCTION cpgw.settle(p_id text, p_keys text[], p_amount bigint, p_ttl_ms bigint) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE t timestamptz := now();
BEGIN
  IF coalesce(array_length(p_keys, 1), 0) = 0 THEN RETURN; END IF;
  PERFORM cpgw.lock_counters(p_keys, p_amount IS NOT NULL, t);
  IF p_id IS NOT NULL THEN
    DELETE FROM cpgw.holds WHERE counter_key = ANY (p_keys) AND id = p_id;
  END IF;
  IF p_amount IS NOT NULL THEN
    UPDATE cpgw.counters SET spent_minor = spent_minor + p_amount, expires_at = t + cpgw.ms(p_ttl_ms)
      WHERE key = ANY (p_keys);
  END IF;
END $$;

-- Appends a ledger row; its id's time is max(at, the last id's time), so ids follow commit order.
CREATE FUNCTION cpgw.append_ledger(p_at bigint, p_record jsonb) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
  m bigint;
  s integer;
  rid text;
BEGIN
  UPDATE cpgw.ledger_head
    SET ms = greatest(ms, p_at), seq = CASE WHEN p_at > ms THEN 0 ELSE seq + 1 END
    RETURNING ms, seq INTO m, s;
  rid := m::text || '-' || s::text;
  INSERT INTO cpgw.ledger (ms, seq, id, at, at_ms, app, operation, kind, inn, amount_minor,
      request_id, upstream_request_id, idempotency_key, reconciled, record)
    VALUES (m, s, rid, to_timestamp(p_at / 1000.0), p_at, p_record ->> 'app', p_record ->> 'operation',
      p_record ->> 'kind', p_record ->> 'inn', cpgw.json_int(p_record -> 'amountMinor'),
      p_record ->> 'requestId', p_record ->> 'upstreamRequestId', p_record ->> 'idempotencyKey',
      coalesce(p_record -> 'reconciled' = 'true'::jsonb, false), p_record);
  RETURN rid;
END $$;

-- Max-merges a company's window (caller's times); the row lives until its last window ends.
CREATE FUNCTION cpgw.merge_window(p_inn text, p_kind text, p_until bigint, p_now bigint, t timestamptz)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  d bigint;
  r bigint;
  e bigint;
BEGIN
  INSERT INTO cpgw.windows (inn, dossier_until, requisites_until, ends_at, expires_at)
    VALUES (p_inn, 0, 0, 0, t) ON CONFLICT (inn) DO NOTHING;
  SELECT CASE WHEN expires_at > t THEN dossier_until ELSE 0 END,
         CASE WHEN expires_at > t THEN requisites_until ELSE 0 END
    INTO d, r FROM cpgw.windows WHERE inn = p_inn FOR UPDATE;
  IF p_kind = 'dossier' THEN
    d := greatest(d, p_until);
  ELSE
    r := greatest(r, p_until);
    -- A requisites check's data ends an open dossier window (charge-store.ts, WindowOpening).
    IF p_kind = 'requisites_check' THEN d := least(d, p_now); END IF;
  END IF;
  e := greatest(d, r);
  IF e - p_now <= 0 THEN RETURN; END IF;
  UPDATE cpgw.windows
    SET dossier_until = d, requisites_until = r, ends_at = e, expires_at = t + cpgw.ms(e - p_now)
    WHERE inn = p_inn;
END $$;

CREATE FUNCTION cpgw.read_window(p_inn text) RETURNS bigint[] LANGUAGE sql STABLE AS $$
  SELECT coalesce((SELECT ARRAY[dossier_until, requisites_until] FROM cpgw.windows
    WHERE inn = p_inn AND expires_at > now()), ARRAY[0, 0]::bigint[])
$$;

CREATE FUNCTION cpgw.open_window(p_inn text, p_kind text, p_until bigint, p_now bigint) RETURNS bigint[]
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM cpgw.merge_window(p_inn, p_kind, p_until, p_now, now());
  RETURN cpgw.read_window(p_inn);
END $$;

-- ChargeStore.openCharge: reserve()'s answer; the pending entry is written only when it held.
CREATE FUNCTION cpgw.open_charge(p_key text, p_amount bigint, p_hold_ms bigint,
  p_keys text[], p_limits bigint[], p_ttls bigint[], p_body jsonb, p_owner text, p_lease_until bigint)
RETURNS bigint[] LANGUAGE plpgsql AS $$
DECLARE res bigint[];
BEGIN
  PERFORM pg_advisory_xact_lock(7011, hashtext(p_key));
  res := cpgw.reserve(p_key, p_amount, p_hold_ms, p_keys, p_limits, p_ttls);
  IF res[1] <> 1 THEN RETURN res; END IF;
  INSERT INTO cpgw.pending_charges (key, body, at_ms, app, kind, inn, estimate_minor, counters,
      owner, lease_until, attempts, replay_key, holds_written)
    VALUES (p_key, p_body, (p_body ->> 'at')::bigint, p_body ->> 'app', p_body ->> 'kind',
      p_body ->> 'inn', p_amount, ARRAY(SELECT jsonb_array_elements_text(p_body -> 'counters')),
      p_owner, p_lease_until, 0, NULL, res[2] = 1)
    ON CONFLICT (key) DO UPDATE SET body = EXCLUDED.body, at_ms = EXCLUDED.at_ms, app = EXCLUDED.app,
      kind = EXCLUDED.kind, inn = EXCLUDED.inn, estimate_minor = EXCLUDED.estimate_minor,
      counters = EXCLUDED.counters, owner = EXCLUDED.owner, lease_until = EXCLUDED.lease_until,
      attempts = 0, replay_key = NULL, holds_written = EXCLUDED.holds_written, opened_at = now();
  RETURN res;
END $$;

-- ChargeStore.recordCharge: {recorded 0|1, dossierUntil, requisitesUntil}.
CREATE FUNCTION cpgw.record_charge(p_key text, p_amount bigint, p_ttl_ms bigint, p_request_id text,
  p_claim_ms bigint, p_at bigint, p_entry jsonb, p_counters text[], p_window_kind text,
  p_window_until bigint, p_inn text) RETURNS bigint[]
LANGUAGE plpgsql AS $$
DECLARE
  t timestamptz := now();
  held text[];
  recorded boolean;
  w bigint[];
BEGIN
  PERFORM pg_advisory_xact_lock(7011, hashtext(p_key));
  SELECT counters INTO held FROM cpgw.pending_charges WHERE key = p_key FOR UPDATE;
  INSERT INTO cpgw.claims (key, request_id, expires_at) VALUES (p_key, p_request_id, t + cpgw.ms(p_claim_ms))
    ON CONFLICT (key) DO UPDATE SET request_id = EXCLUDED.request_id, expires_at = EXCLUDED.expires_at
    WHERE cpgw.claims.expires_at <= t;
  recorded := FOUND;
  IF recorded THEN
    IF coalesce(array_length(p_counters, 1), 0) > 0 THEN
      PERFORM cpgw.lock_counters(p_counters, true, t);
      DELETE FROM cpgw.holds WHERE counter_key = ANY (p_counters) AND id = p_key;
      UPDATE cpgw.counters SET spent_minor = spent_minor + p_amount, expires_at = t + cpgw.ms(p_ttl_ms)
        WHERE key = ANY (p_counters);
    END IF;
    IF p_window_kind IS NOT NULL THEN
      PERFORM cpgw.merge_window(p_inn, p_window_kind, p_window_until, p_at, t);
    END IF;
  END IF;
  DELETE FROM cpgw.holds WHERE id = p_key AND counter_key = ANY (coalesce(held, '{}') || p_counters);
  DELETE FROM cpgw.pending_charges WHERE key = p_key;
  IF recorded THEN PERFORM cpgw.append_ledger(p_at, p_entry); END IF;
  w := CASE WHEN p_inn IS NULL THEN ARRAY[0, 0]::bigint[] ELSE cpgw.read_window(p_inn) END;
  RETURN ARRAY[CASE WHEN recorded THEN 1 ELSE 0 END, w[1], w[2]];
END $$;

-- ChargeStore.releaseCharge: drops the entry and its holds (a no-op when gone).
CREATE FUNCTION cpgw.release_charge(p_key text) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  held text[];
  wrote boolean;
BEGIN
  PERFORM pg_advisory_xact_lock(7011, hashtext(p_key));
  DELETE FROM cpgw.pending_charges WHERE key = p_key RETURNING counters, holds_written INTO held, wrote;
  IF FOUND AND wrote THEN
    DELETE FROM cpgw.holds WHERE id = p_key AND counter_key = ANY (held);
  END IF;
END $$;

-- Drops what expired: claims, windows, holds, and counters an hour after they expired (the hour
-- keeps a sweep off a counter that a reserve has just found and is about to lock).
CREATE FUNCTION cpgw.sweep() RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM cpgw.claims WHERE expires_at <= now();
  DELETE FROM cpgw.windows WHERE expires_at <= now() - interval '1 hour';
  DELETE FROM cpgw.holds WHERE expires_at <= now();
  WITH gone AS (
    DELETE FROM cpgw.counters WHERE expires_at <= now() - interval '1 hour' RETURNING key
  ) DELETE FROM cpgw.holds h USING gone WHERE h.counter_key = gone.key;
END $$;
`;

// Version 2: the same operations in fewer statements (bench/money-steps.ts: each plpgsql
// statement costs ~10-30 us; v1 ran ~25 per openCharge and ~20 per recordCharge). Set-based
// reserve (one query finds the first refusing counter, one writes the holds, one extends the
// counters); expired holds are ignored where they are summed instead of deleted on every lock
// (the sweep drops them); a counter's expiry cleanup runs only when one of them expired; the
// pending entry is deleted (and so locked) as the first step of a record; the window merge is
// one read and one write and answers the window, so record_charge no longer reads it again.
// Two planner settings on the functions that read holds: holds are inserted and deleted by
// every call, so their index fills with entries of dead rows until a vacuum; a bitmap scan
// cannot mark those as dead and re-reads all of them on every sum (1,000 calls after a vacuum:
// 0.45 ms per reserve), a plain index scan marks them once and skips them after (0.004 ms); and a
// generic plan, as these statements' plans hardly depend on their arguments (a custom plan was
// planned again on each call: 0.13-0.6 ms). Measured: both steps p50 1.84 -> 1.2 ms.
// The top-level functions keep their names, arguments and answers (a replica of the previous
// version keeps working during a rolling upgrade).
const V2_FUNCTIONS = `
CREATE OR REPLACE FUNCTION cpgw.lock_counters(p_keys text[], p_create boolean, t timestamptz) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  found_n integer;
  stale boolean;
BEGIN
  SELECT count(*), coalesce(bool_or(expires_at <= t), false) INTO found_n, stale FROM (
    SELECT expires_at FROM cpgw.counters WHERE key = ANY (p_keys) ORDER BY key COLLATE "C" FOR UPDATE
  ) l;
  IF p_create AND found_n < (SELECT count(DISTINCT k) FROM unnest(p_keys) k) THEN
    -- New counters (once per period): created as already expired, then all locked in key order.
    INSERT INTO cpgw.counters (key, spent_minor, expires_at)
      SELECT k, 0, t FROM (SELECT DISTINCT unnest(p_keys) AS k) s ORDER BY k COLLATE "C"
      ON CONFLICT (key) DO NOTHING;
    SELECT coalesce(bool_or(expires_at <= t), false) INTO stale FROM (
      SELECT expires_at FROM cpgw.counters WHERE key = ANY (p_keys) ORDER BY key COLLATE "C" FOR UPDATE
    ) l;
  END IF;
  IF stale THEN
    DELETE FROM cpgw.holds h USING cpgw.counters c
      WHERE c.key = ANY (p_keys) AND c.expires_at <= t AND h.counter_key = c.key;
    UPDATE cpgw.counters SET spent_minor = 0
      WHERE key = ANY (p_keys) AND expires_at <= t AND spent_minor <> 0;
  END IF;
END $$;

CREATE OR REPLACE FUNCTION cpgw.reserve(p_id text, p_amount bigint, p_hold_ms bigint,
  p_keys text[], p_limits bigint[], p_ttls bigint[]) RETURNS bigint[]
LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan SET enable_bitmapscan = off AS $$
DECLARE
  t timestamptz := now();
  bad record;
  wrote integer;
BEGIN
  IF coalesce(array_length(p_keys, 1), 0) = 0 THEN RETURN ARRAY[1, 0]; END IF;
  PERFORM cpgw.lock_counters(p_keys, true, t);
  SELECT k.i, c.spent_minor AS s, h.held INTO bad
    FROM unnest(p_keys, p_limits) WITH ORDINALITY AS k(key, lim, i)
    JOIN cpgw.counters c ON c.key = k.key
    CROSS JOIN LATERAL (
      SELECT coalesce(sum(x.amount_minor), 0) AS held,
             coalesce(sum(x.amount_minor) FILTER (WHERE x.id = p_id), 0) AS mine
        FROM cpgw.holds x WHERE x.counter_key = k.key AND x.expires_at > t) h
    WHERE k.lim IS NOT NULL AND c.spent_minor + h.held - h.mine + p_amount > k.lim
    ORDER BY k.i LIMIT 1;
  IF FOUND THEN RETURN ARRAY[0, bad.i, bad.s, bad.held]; END IF;
  -- A hold of 0 with none before it (a read an open window covers) changes no counter.
  WITH w AS (
    INSERT INTO cpgw.holds (counter_key, id, amount_minor, expires_at)
      SELECT DISTINCT k, p_id, p_amount, t + cpgw.ms(p_hold_ms) FROM unnest(p_keys) k
        WHERE p_amount <> 0 OR EXISTS (SELECT 1 FROM cpgw.holds x
          WHERE x.counter_key = k AND x.id = p_id AND x.expires_at > t)
      ON CONFLICT (counter_key, id)
      DO UPDATE SET amount_minor = EXCLUDED.amount_minor, expires_at = EXCLUDED.expires_at
      RETURNING counter_key
  )
  UPDATE cpgw.counters c SET expires_at = t + cpgw.ms(u.ttl)
    FROM (SELECT DISTINCT ON (key) key, ttl FROM unnest(p_keys, p_ttls) AS u(key, ttl)) u
    WHERE c.key = u.key AND u.key IN (SELECT counter_key FROM w);
  GET DIAGNOSTICS wrote = ROW_COUNT;
  RETURN ARRAY[1, CASE WHEN wrote > 0 THEN 1 ELSE 0 END];
END $$;

-- Max-merges a company's window (caller's times) and answers it as read_window would after.
CREATE FUNCTION cpgw.merge_window_read(p_inn text, p_kind text, p_until bigint, p_now bigint,
  t timestamptz) RETURNS bigint[]
LANGUAGE plpgsql AS $$
DECLARE
  d bigint := 0;
  r bigint := 0;
  d0 bigint;
  r0 bigint;
  e bigint;
  had boolean;
BEGIN
  SELECT CASE WHEN expires_at > t THEN dossier_until ELSE 0 END,
         CASE WHEN expires_at > t THEN requisites_until ELSE 0 END
    INTO d, r FROM cpgw.windows WHERE inn = p_inn FOR UPDATE;
  had := FOUND;
  IF NOT had THEN d := 0; r := 0; END IF;
  d0 := d;
  r0 := r;
  IF p_kind = 'dossier' THEN
    d := greatest(d, p_until);
  ELSE
    r := greatest(r, p_until);
    -- A requisites check's data ends an open dossier window (charge-store.ts, WindowOpening).
    IF p_kind = 'requisites_check' THEN d := least(d, p_now); END IF;
  END IF;
  e := greatest(d, r);
  IF e - p_now <= 0 THEN RETURN ARRAY[d0, r0]; END IF;
  IF had THEN
    UPDATE cpgw.windows
      SET dossier_until = d, requisites_until = r, ends_at = e, expires_at = t + cpgw.ms(e - p_now)
      WHERE inn = p_inn;
  ELSE
    INSERT INTO cpgw.windows (inn, dossier_until, requisites_until, ends_at, expires_at)
      VALUES (p_inn, d, r, e, t + cpgw.ms(e - p_now))
      ON CONFLICT (inn) DO NOTHING;
    -- Another transaction created the row first: merge into it (it is committed and lockable now).
    IF NOT FOUND THEN RETURN cpgw.merge_window_read(p_inn, p_kind, p_until, p_now, t); END IF;
  END IF;
  RETURN ARRAY[d, r];
END $$;

CREATE OR REPLACE FUNCTION cpgw.open_window(p_inn text, p_kind text, p_until bigint, p_now bigint) RETURNS bigint[]
LANGUAGE plpgsql AS $$
BEGIN
  RETURN cpgw.merge_window_read(p_inn, p_kind, p_until, p_now, now());
END $$;

CREATE OR REPLACE FUNCTION cpgw.record_charge(p_key text, p_amount bigint, p_ttl_ms bigint, p_request_id text,
  p_claim_ms bigint, p_at bigint, p_entry jsonb, p_counters text[], p_window_kind text,
  p_window_until bigint, p_inn text) RETURNS bigint[]
LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan SET enable_bitmapscan = off AS $$
DECLARE
  t timestamptz := now();
  held text[];
  recorded boolean;
  w bigint[];
BEGIN
  PERFORM pg_advisory_xact_lock(7011, hashtext(p_key));
  DELETE FROM cpgw.pending_charges WHERE key = p_key RETURNING counters INTO held;
  INSERT INTO cpgw.claims (key, request_id, expires_at) VALUES (p_key, p_request_id, t + cpgw.ms(p_claim_ms))
    ON CONFLICT (key) DO UPDATE SET request_id = EXCLUDED.request_id, expires_at = EXCLUDED.expires_at
    WHERE cpgw.claims.expires_at <= t;
  recorded := FOUND;
  IF recorded AND coalesce(array_length(p_counters, 1), 0) > 0 THEN
    PERFORM cpgw.lock_counters(p_counters, true, t);
    UPDATE cpgw.counters SET spent_minor = spent_minor + p_amount, expires_at = t + cpgw.ms(p_ttl_ms)
      WHERE key = ANY (p_counters);
  END IF;
  DELETE FROM cpgw.holds WHERE id = p_key AND counter_key = ANY (coalesce(held, '{}') || p_counters);
  IF recorded AND p_window_kind IS NOT NULL THEN
    w := cpgw.merge_window_read(p_inn, p_window_kind, p_window_until, p_at, t);
  ELSIF p_inn IS NOT NULL THEN
    w := cpgw.read_window(p_inn);
  ELSE
    w := ARRAY[0, 0]::bigint[];
  END IF;
  IF recorded THEN PERFORM cpgw.append_ledger(p_at, p_entry); END IF;
  RETURN ARRAY[CASE WHEN recorded THEN 1 ELSE 0 END, w[1], w[2]];
END $$;

DROP FUNCTION cpgw.merge_window(text, text, bigint, bigint, timestamptz);
ALTER FUNCTION cpgw.settle(text, text[], bigint, bigint)
  SET plan_cache_mode = force_generic_plan SET enable_bitmapscan = off;
ALTER FUNCTION cpgw.release_charge(text)
  SET plan_cache_mode = force_generic_plan SET enable_bitmapscan = off;
`;

// Version 3: what finance sets at run time (src/finance/pg-finance-store.ts): budget overrides
// set through PUT /admin/budgets, the settings version every budget write bumps, and the admin
// audit trail, so PostgreSQL is the system of record for them as it is for the ledger. A budget
// write is one function (one transaction): lock the settings row (it serialises budget writes,
// the first write of a budget included, when there is no row yet to lock), lock the budget row,
// compare its version, upsert it, append the audit row, bump the settings version. Audit ids
// `<ms>-<seq>` come from cpgw.audit_head, locked by each append until it commits (as the
// ledger's). Lock order: finance_settings, budget_settings, audit_head.
const V3_FINANCE = `
CREATE TABLE cpgw.budget_settings (
  scope text NOT NULL,
  period text NOT NULL,
  source text NOT NULL CHECK (source IN ('admin', 'config')),
  limit_minor bigint,
  soft_minor bigint,
  version integer NOT NULL,
  updated_by text NOT NULL,
  updated_at bigint NOT NULL,
  reason text NOT NULL,
  PRIMARY KEY (scope, period)
);
COMMENT ON TABLE cpgw.budget_settings IS 'cpgw: budgets set by finance (PUT /admin/budgets); source admin wins over the config';

CREATE TABLE cpgw.finance_settings (
  one boolean PRIMARY KEY DEFAULT true CHECK (one),
  version bigint NOT NULL
);
INSERT INTO cpgw.finance_settings (one, version) VALUES (true, 0);

CREATE TABLE cpgw.audit (
  ms bigint NOT NULL,
  seq integer NOT NULL,
  id text NOT NULL UNIQUE,
  at bigint NOT NULL,
  actor text NOT NULL,
  action text NOT NULL,
  target text NOT NULL,
  record jsonb NOT NULL,
  PRIMARY KEY (ms, seq)
);
COMMENT ON TABLE cpgw.audit IS 'cpgw: every admin mutation (append-only; id <ms>-<seq> is commit-ordered; kept 400 days)';

CREATE TABLE cpgw.audit_head (
  one boolean PRIMARY KEY DEFAULT true CHECK (one),
  ms bigint NOT NULL,
  seq integer NOT NULL
);
INSERT INTO cpgw.audit_head (one, ms, seq) VALUES (true, -1, -1);

-- Appends an audit row; its id's time is max(at, the last id's time), so ids follow commit
-- order; drops rows older than p_keep ms behind it. "0-0" is never an id (as on Redis).
CREATE FUNCTION cpgw.append_audit(p_at bigint, p_record jsonb, p_keep bigint) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
  m bigint;
  s integer;
  rid text;
BEGIN
  UPDATE cpgw.audit_head
    SET ms = greatest(ms, p_at),
        seq = CASE WHEN p_at > ms THEN (CASE WHEN p_at = 0 THEN 1 ELSE 0 END) ELSE seq + 1 END
    RETURNING ms, seq INTO m, s;
  rid := m::text || '-' || s::text;
  INSERT INTO cpgw.audit (ms, seq, id, at, actor, action, target, record)
    VALUES (m, s, rid, p_at, p_record ->> 'actor', p_record ->> 'action', p_record ->> 'target', p_record);
  DELETE FROM cpgw.audit WHERE ms < m - p_keep;
  RETURN rid;
END $$;

CREATE FUNCTION cpgw.budget_json(b cpgw.budget_settings) RETURNS jsonb LANGUAGE sql IMMUTABLE AS $$
  SELECT jsonb_build_object('scope', b.scope, 'period', b.period, 'source', b.source,
    'limitMinor', b.limit_minor, 'softMinor', b.soft_minor, 'version', b.version,
    'updatedBy', b.updated_by, 'updatedAt', b.updated_at, 'reason', b.reason)
$$;

-- Compare-and-set of one budget plus its audit row plus the settings version, in one
-- transaction: {"ok": true, "settingsVersion", "auditId"} or {"ok": false, "current"}.
CREATE FUNCTION cpgw.write_budget(p_budget jsonb, p_expect integer, p_at bigint, p_audit jsonb,
    p_keep bigint) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
  cur cpgw.budget_settings;
  v bigint;
  rid text;
BEGIN
  PERFORM 1 FROM cpgw.finance_settings WHERE one FOR UPDATE;
  SELECT * INTO cur FROM cpgw.budget_settings
    WHERE scope = p_budget ->> 'scope' AND period = p_budget ->> 'period' FOR UPDATE;
  IF coalesce(cur.version, 0) <> p_expect THEN
    RETURN jsonb_build_object('ok', false,
      'current', CASE WHEN cur.scope IS NULL THEN NULL ELSE cpgw.budget_json(cur) END);
  END IF;
  INSERT INTO cpgw.budget_settings AS b (scope, period, source, limit_minor, soft_minor, version,
      updated_by, updated_at, reason)
    VALUES (p_budget ->> 'scope', p_budget ->> 'period', p_budget ->> 'source',
      cpgw.json_int(p_budget -> 'limitMinor'), cpgw.json_int(p_budget -> 'softMinor'),
      (p_budget ->> 'version')::integer, p_budget ->> 'updatedBy',
      cpgw.json_int(p_budget -> 'updatedAt'), p_budget ->> 'reason')
    ON CONFLICT (scope, period) DO UPDATE SET source = excluded.source,
      limit_minor = excluded.limit_minor, soft_minor = excluded.soft_minor,
      version = excluded.version, updated_by = excluded.updated_by,
      updated_at = excluded.updated_at, reason = excluded.reason;
  rid := cpgw.append_audit(p_at, p_audit, p_keep);
  UPDATE cpgw.finance_settings SET version = version + 1 WHERE one RETURNING version INTO v;
  RETURN jsonb_build_object('ok', true, 'settingsVersion', v, 'auditId', rid);
END $$;
`;

// Version 4: the release of a pending entry that held nothing (a read an open window covered:
// estimated 0 and holds_written false; an entry estimated above 0 that held nothing because
// the app has no budget counters still waits) commits without waiting for the WAL flush
// (synchronous_commit off for that transaction only; every other step, this function's release
// of an entry that held money included, still waits). Such a release only deletes the entry; it
// changes no counter, hold, claim, ledger row or window. Lost (the server's crash or power loss
// within ~3 x wal_writer_delay of it, before any later durable commit flushed the WAL past it),
// the entry is back with the lease it had: the reconciler of a live replica takes it over once
// that lease ends and replays its idempotency key within the key's lifetime (what the
// reconciler rests on for every entry), the upstream answers what it answered (charged 0), and
// the entry is released again. It holds 0 meanwhile and is never recorded twice (a record
// claims the key). Why: each in-window read opened and released one such entry, two durable
// commits (two fsyncs) for a read that costs nothing. The release comes after the answer
// (ChargeBook.releaseLater), so this takes one fsync per in-window read off the disk that the
// next call's open_charge waits for, not off this answer. The open stays durable: it is what
// finds a charge the upstream made against the estimate after a crash of both.
// Same name, arguments and answer: a replica of version 3 keeps working during a rolling upgrade.
const V4_RELEASE = `
CREATE OR REPLACE FUNCTION cpgw.release_charge(p_key text) RETURNS void
LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan SET enable_bitmapscan = off AS $$
DECLARE
  held text[];
  wrote boolean;
  estimate bigint;
BEGIN
  PERFORM pg_advisory_xact_lock(7011, hashtext(p_key));
  DELETE FROM cpgw.pending_charges WHERE key = p_key
    RETURNING counters, holds_written, estimate_minor INTO held, wrote, estimate;
  IF FOUND AND wrote THEN
    DELETE FROM cpgw.holds WHERE id = p_key AND counter_key = ANY (held);
  ELSIF FOUND AND estimate = 0 THEN
    -- Estimated 0 and held nothing: this commit need not wait for the WAL flush (see above).
    PERFORM set_config('synchronous_commit', 'off', true);
  END IF;
END $$;
`;

// Version 5: a hold of 0 with none of its id before it (an in-window read's open_charge) is
// checked against the committed counters without locking them. It writes no counter and no hold
// (it never did: versions 2-4 locked the counters, found nothing to write, and wrote nothing), so
// there is no update for the lock to protect; its answer (refused only when a counter is already
// past its cap, the spend of a charge above its estimate) is the one it would give a moment
// earlier or later. The locks did cost: every paid call holds the shared counters (the global
// day and month ones too) locked until its commit, fsync included, so an in-window read queued
// behind every paid call in flight on any replica (bench/money-steps.ts, 4 callers making paid
// calls on the same counters: the open of 0 p50 3.7 ms alone, 18.4 ms beside them). An expired
// counter counts as nothing spent and nothing held, as lock_counters would have reset it; a
// missing one as 0 (not created: the next paid hold creates it). Any other hold, a hold of 0
// that replaces one of its id included, takes the locked path of version 2 unchanged.
// Same name, arguments and answers (a replica of version 4 keeps working during a rolling upgrade).
const V5_RESERVE = `
CREATE OR REPLACE FUNCTION cpgw.reserve(p_id text, p_amount bigint, p_hold_ms bigint,
  p_keys text[], p_limits bigint[], p_ttls bigint[]) RETURNS bigint[]
LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan SET enable_bitmapscan = off AS $$
DECLARE
  t timestamptz := now();
  bad record;
  wrote integer;
BEGIN
  IF coalesce(array_length(p_keys, 1), 0) = 0 THEN RETURN ARRAY[1, 0]; END IF;
  IF p_amount = 0 AND NOT EXISTS (SELECT 1 FROM cpgw.holds x
      WHERE x.counter_key = ANY (p_keys) AND x.id = p_id AND x.expires_at > t) THEN
    -- Writes nothing: checked without locking (see above).
    SELECT k.i, c.spent_minor AS s, h.held INTO bad
      FROM unnest(p_keys, p_limits) WITH ORDINALITY AS k(key, lim, i)
      JOIN cpgw.counters c ON c.key = k.key AND c.expires_at > t
      CROSS JOIN LATERAL (
        SELECT coalesce(sum(x.amount_minor), 0) AS held
          FROM cpgw.holds x WHERE x.counter_key = k.key AND x.expires_at > t) h
      WHERE k.lim IS NOT NULL AND c.spent_minor + h.held > k.lim
      ORDER BY k.i LIMIT 1;
    IF FOUND THEN RETURN ARRAY[0, bad.i, bad.s, bad.held]; END IF;
    RETURN ARRAY[1, 0];
  END IF;
  PERFORM cpgw.lock_counters(p_keys, true, t);
  SELECT k.i, c.spent_minor AS s, h.held INTO bad
    FROM unnest(p_keys, p_limits) WITH ORDINALITY AS k(key, lim, i)
    JOIN cpgw.counters c ON c.key = k.key
    CROSS JOIN LATERAL (
      SELECT coalesce(sum(x.amount_minor), 0) AS held,
             coalesce(sum(x.amount_minor) FILTER (WHERE x.id = p_id), 0) AS mine
        FROM cpgw.holds x WHERE x.counter_key = k.key AND x.expires_at > t) h
    WHERE k.lim IS NOT NULL AND c.spent_minor + h.held - h.mine + p_amount > k.lim
    ORDER BY k.i LIMIT 1;
  IF FOUND THEN RETURN ARRAY[0, bad.i, bad.s, bad.held]; END IF;
  -- A hold of 0 with none before it (a read an open window covers) changes no counter.
  WITH w AS (
    INSERT INTO cpgw.holds (counter_key, id, amount_minor, expires_at)
      SELECT DISTINCT k, p_id, p_amount, t + cpgw.ms(p_hold_ms) FROM unnest(p_keys) k
        WHERE p_amount <> 0 OR EXISTS (SELECT 1 FROM cpgw.holds x
          WHERE x.counter_key = k AND x.id = p_id AND x.expires_at > t)
      ON CONFLICT (counter_key, id)
      DO UPDATE SET amount_minor = EXCLUDED.amount_minor, expires_at = EXCLUDED.expires_at
      RETURNING counter_key
  )
  UPDATE cpgw.counters c SET expires_at = t + cpgw.ms(u.ttl)
    FROM (SELECT DISTINCT ON (key) key, ttl FROM unnest(p_keys, p_ttls) AS u(key, ttl)) u
    WHERE c.key = u.key AND u.key IN (SELECT counter_key FROM w);
  GET DIAGNOSTICS wrote = ROW_COUNT;
  RETURN ARRAY[1, CASE WHEN wrote > 0 THEN 1 ELSE 0 END];
END $$;
`;

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'money: ledger, counters, holds, pending charges, claims, windows',
    sql: `${V1_TABLES}${V1_FUNCTIONS}`,
  },
  {
    version: 2,
    name: 'money: the same steps in fewer statements (set-based reserve, lazy hold expiry)',
    sql: V2_FUNCTIONS,
  },
  {
    version: 3,
    name: 'finance: budget settings, settings version, admin audit trail',
    sql: V3_FINANCE,
  },
  {
    version: 4,
    name: 'money: the release of an entry that held nothing commits without waiting for the WAL flush',
    sql: V4_RELEASE,
  },
  {
    version: 5,
    name: 'money: a hold of 0 with none before it is checked without locking the counters',
    sql: V5_RESERVE,
  },
];

/** The newest schema version this code knows. */
export const SCHEMA_VERSION = MIGRATIONS[MIGRATIONS.length - 1]!.version;
