-- 0005_messages.sql — the messages producers send (SEND_MESSAGE 10 / 310,
-- SEND_BATCH_MESSAGE 320) and consumers pull, one row per message, in the
-- same file and the same batches as everything else. queue_offset numbers
-- a queue's messages 0, 1, 2, ... with no gaps (retention removes a prefix
-- and keeps each queue's newest message, so a queue's next offset is its
-- max + 1 across restarts). physical_id is the daemon's own increasing id,
-- what the offset message id carries as the "physical offset";
-- AUTOINCREMENT so an id is never handed out twice, even after the rows
-- holding the highest ids are gone. size is the stored record's TOTALSIZE
-- (common/proto/message_record.h), what pull byte limits and retention
-- count; body last so reading the small columns never touches its pages.
CREATE TABLE messages (
    physical_id     INTEGER PRIMARY KEY AUTOINCREMENT,
    topic           TEXT NOT NULL,
    queue_id        INTEGER NOT NULL CHECK (queue_id >= 0),
    queue_offset    INTEGER NOT NULL CHECK (queue_offset >= 0),
    size            INTEGER NOT NULL CHECK (size > 0),
    born_ms         INTEGER NOT NULL,
    store_ms        INTEGER NOT NULL,
    flag            INTEGER NOT NULL,
    sys_flag        INTEGER NOT NULL,
    tags_code       INTEGER NOT NULL,
    reconsume_times INTEGER NOT NULL,
    body_crc        INTEGER NOT NULL,
    deliver_ms      INTEGER,            -- a delayed message: not before this; NULL: at once
    uniq_key        TEXT,               -- the UNIQ_KEY property, for lookups by message id
    born_host       BLOB NOT NULL CHECK (length(born_host) IN (8, 20)),   -- address bytes + 4-byte port
    store_host      BLOB NOT NULL CHECK (length(store_host) IN (8, 20)),
    properties      BLOB NOT NULL,      -- name \x01 value \x02 ..., as stored in the record
    body            BLOB NOT NULL,
    UNIQUE (topic, queue_id, queue_offset)
);
CREATE INDEX messages_by_uniq_key ON messages (uniq_key) WHERE uniq_key IS NOT NULL;
CREATE INDEX messages_delayed ON messages (deliver_ms) WHERE deliver_ms IS NOT NULL;

-- The KEYS property split at spaces, one row per key and message, for
-- QUERY_MESSAGE-style lookups; rows go with their message.
CREATE TABLE message_keys (
    key         TEXT NOT NULL,
    physical_id INTEGER NOT NULL,
    PRIMARY KEY (key, physical_id)
) WITHOUT ROWID;
CREATE INDEX message_keys_by_id ON message_keys (physical_id);

-- Per queue, how many messages and how many bytes of size it holds, kept
-- by the triggers below so the start reads one row per queue instead of
-- every message.
CREATE TABLE message_queues (
    topic    TEXT NOT NULL,
    queue_id INTEGER NOT NULL,
    messages INTEGER NOT NULL,
    bytes    INTEGER NOT NULL,
    PRIMARY KEY (topic, queue_id)
) WITHOUT ROWID;
CREATE TRIGGER messages_in AFTER INSERT ON messages
BEGIN
    INSERT INTO message_queues (topic, queue_id, messages, bytes) VALUES (new.topic, new.queue_id, 1, new.size)
    ON CONFLICT (topic, queue_id) DO UPDATE SET messages = messages + 1, bytes = bytes + excluded.bytes;
END;
CREATE TRIGGER messages_out AFTER DELETE ON messages
BEGIN
    DELETE FROM message_keys WHERE physical_id = old.physical_id;
    UPDATE message_queues SET messages = messages - 1, bytes = bytes - old.size
    WHERE topic = old.topic AND queue_id = old.queue_id;
END;
