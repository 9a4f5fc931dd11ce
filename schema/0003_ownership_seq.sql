-- 0003_ownership_seq.sql — the file says it is an rmqcoord store, and each
-- group's events are numbered.
--
-- application_id "RMQC" (0x524D5143): store_open checks it (or, for files
-- made before this migration, user_version and the tables) before it
-- switches the journal mode or migrates, so another application's SQLite
-- file is refused untouched.
--
-- group_seq: 1, 2, 3, ... per group in id order (the writer computes it
-- from the group's latest event). A delta event (0002) is rebuilt from the
-- full row before it and every delta in between; a missing row would give
-- a wrong list, so store_read checks the numbers are contiguous since the
-- full row and answers null lists when they are not. Rows written before
-- this migration are numbered here as they stand.
PRAGMA application_id = 1380798787;
ALTER TABLE events ADD COLUMN group_seq INTEGER CHECK (group_seq IS NULL OR group_seq >= 1);
UPDATE events SET group_seq = n.seq
  FROM (SELECT id, row_number() OVER (PARTITION BY group_name ORDER BY id) AS seq FROM events) AS n
  WHERE n.id = events.id;
