// The catalog's tables. Created on first connection by whichever process gets there
// first (an advisory lock serialises concurrent starts); `create … if not exists` keeps it
// idempotent. Money is double precision: sums of a few thousand ledger rows stay exact to
// the cent, and JSON carries it without string conversion.
export const SCHEMA_LOCK = 0x61_67_66_6c; // "agfl"

export const SCHEMA = `
create table if not exists fleet_batches (
  id               text primary key,
  created_at       timestamptz not null default now(),
  prompt           text not null,
  profile          text not null,
  config_source    text not null,
  config_name      text not null,
  headless_ask     text not null,
  task_budget_usd  double precision,
  budget_usd       double precision,
  max_attempts     integer not null,
  concurrency      integer,
  task_count       integer not null,
  status           text not null default 'running',
  spent_usd        double precision not null default 0,
  reserved_usd     double precision not null default 0,
  labels           jsonb not null default '{}'
);
create table if not exists fleet_tasks (
  id               text primary key,
  batch_id         text not null references fleet_batches(id) on delete cascade,
  idx              integer not null,
  target           jsonb not null,
  prompt           text not null,
  status           text not null default 'queued',
  attempt          integer not null default 0,
  worker           text,
  heartbeat_at     timestamptz,
  session_id       text,
  base_tree        text,
  work_diff        text,
  exit_code        integer,
  session_status   text,
  detail           text,
  final_message    text,
  cost_usd         double precision not null default 0,
  input_tokens     bigint not null default 0,
  output_tokens    bigint not null default 0,
  turns            integer not null default 0,
  denials          integer not null default 0,
  reserved_usd     double precision not null default 0,
  resumed_from     integer,
  overhead_ms      double precision,
  started_at       timestamptz,
  finished_at      timestamptz,
  unique (batch_id, idx)
);
alter table fleet_tasks add column if not exists overhead_ms double precision;
create index if not exists fleet_tasks_batch on fleet_tasks (batch_id, status);
create table if not exists fleet_session_files (
  session_id       text primary key,
  task_id          text not null references fleet_tasks(id) on delete cascade,
  batch_id         text not null,
  is_root          boolean not null,
  attempt          integer not null,
  turn             integer not null,
  bytes            bytea not null,
  uploaded_at      timestamptz not null default now()
);
create index if not exists fleet_session_files_batch on fleet_session_files (batch_id);
create table if not exists fleet_attempts (
  task_id          text not null references fleet_tasks(id) on delete cascade,
  attempt          integer not null,
  worker           text not null,
  started_at       timestamptz not null default now(),
  ended_at         timestamptz,
  outcome          text,
  primary key (task_id, attempt)
);
`;
