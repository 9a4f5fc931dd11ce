-- 0001_init.sql — the initial schema of the rmqcoord store.
--
-- Applied by store.c inside its own transaction (so a migration file must not
-- BEGIN or COMMIT itself), after which PRAGMA user_version is 1.
-- Never edit a released migration: add schema/NNNN_name.sql instead.
-- Times are Unix epoch milliseconds (INTEGER). "group" and "offset" are SQL
-- keywords, so the columns are group_name and queue_offset, and the groups
-- table is consumer_groups. Foreign keys are enforced (PRAGMA foreign_keys is
-- set by store.c after migrations run), so the writer must create a channel
-- and a group before a member row that references them.

-- One row per store_open; id is store_run_id(). AUTOINCREMENT so an id is
-- never reused even if old runs are pruned: channel ids are derived from it.
CREATE TABLE runs (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    started_ms     INTEGER NOT NULL,
    schema_version INTEGER NOT NULL
);

CREATE TABLE topics (
    name       TEXT PRIMARY KEY NOT NULL,
    updated_ms INTEGER NOT NULL
);

-- The brokers that serve a topic; replaced as a set by store_put_topic.
CREATE TABLE topic_brokers (
    topic            TEXT NOT NULL REFERENCES topics (name) ON DELETE CASCADE,
    broker_name      TEXT NOT NULL,
    read_queue_nums  INTEGER NOT NULL CHECK (read_queue_nums >= 0),
    write_queue_nums INTEGER NOT NULL CHECK (write_queue_nums >= 0),
    perm             INTEGER NOT NULL,
    PRIMARY KEY (topic, broker_name)
) WITHOUT ROWID;

CREATE TABLE clients (
    client_id         TEXT PRIMARY KEY NOT NULL,
    language          TEXT,
    version           INTEGER,
    first_seen_ms     INTEGER NOT NULL,
    last_heartbeat_ms INTEGER NOT NULL
);

-- One row per TCP connection ever accepted. closed_ms is NULL while open.
CREATE TABLE channels (
    id           INTEGER PRIMARY KEY,
    run_id       INTEGER NOT NULL REFERENCES runs (id),
    remote_addr  TEXT NOT NULL,
    opened_ms    INTEGER NOT NULL,
    closed_ms    INTEGER,
    close_reason TEXT
);
CREATE INDEX channels_open ON channels (run_id) WHERE closed_ms IS NULL;

CREATE TABLE consumer_groups (
    name               TEXT PRIMARY KEY NOT NULL,
    consume_type       TEXT,
    message_model      TEXT,
    consume_from_where TEXT,
    created_ms         INTEGER NOT NULL,
    updated_ms         INTEGER NOT NULL
);

-- Membership history: a row per (group, channel) stint. left_ms is NULL
-- while the member is live; at most one live row per (group, channel).
CREATE TABLE members (
    id                INTEGER PRIMARY KEY,
    group_name        TEXT NOT NULL REFERENCES consumer_groups (name),
    channel_id        INTEGER NOT NULL REFERENCES channels (id),
    client_id         TEXT NOT NULL,
    joined_ms         INTEGER NOT NULL,
    last_heartbeat_ms INTEGER NOT NULL,
    left_ms           INTEGER,
    leave_reason      TEXT
);
CREATE UNIQUE INDEX members_live ON members (group_name, channel_id) WHERE left_ms IS NULL;
CREATE INDEX members_channel ON members (channel_id);

-- A group's current subscription set; replaced whole by store_put_subscriptions.
CREATE TABLE subscriptions (
    group_name      TEXT NOT NULL REFERENCES consumer_groups (name),
    topic           TEXT NOT NULL,
    sub_string      TEXT NOT NULL,
    expression_type TEXT,
    tags_json       TEXT NOT NULL DEFAULT '[]'
                    CHECK (CASE WHEN json_valid(tags_json) THEN json_type(tags_json) = 'array' ELSE 0 END),
    sub_version     INTEGER NOT NULL,
    updated_ms      INTEGER NOT NULL,
    PRIMARY KEY (group_name, topic)
) WITHOUT ROWID;

-- Committed consumer offsets. No foreign key to consumer_groups: admin tools
-- commit offsets for groups that never sent a heartbeat.
CREATE TABLE offsets (
    group_name   TEXT NOT NULL,
    topic        TEXT NOT NULL,
    queue_id     INTEGER NOT NULL CHECK (queue_id >= 0),
    queue_offset INTEGER NOT NULL,
    updated_ms   INTEGER NOT NULL,
    PRIMARY KEY (group_name, topic, queue_id)
) WITHOUT ROWID;

-- Append-only membership history, paged by id (AUTOINCREMENT: ids only grow,
-- so "since id" paging never skips or repeats). before/after are JSON
-- arrays of client ids; the CHECKs keep store_read's parse from ever failing
-- on well-formed writes.
CREATE TABLE events (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    ts_ms       INTEGER NOT NULL,
    group_name  TEXT NOT NULL,
    kind        TEXT NOT NULL,
    client_id   TEXT,
    channel_id  INTEGER,
    before_json TEXT NOT NULL DEFAULT '[]'
                CHECK (CASE WHEN json_valid(before_json) THEN json_type(before_json) = 'array' ELSE 0 END),
    after_json  TEXT NOT NULL DEFAULT '[]'
                CHECK (CASE WHEN json_valid(after_json) THEN json_type(after_json) = 'array' ELSE 0 END)
);
CREATE INDEX events_group_id ON events (group_name, id);
