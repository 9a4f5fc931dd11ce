-- 0004_subscription_groups.sql — subscription-group configs set by admin
-- tools (UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, 200), one JSON object per
-- group, kept as the tool sent it: RocketMQ 4.9 and 5.x tools write
-- different field sets, and GET_ALL_SUBSCRIPTIONGROUP_CONFIG (201) gives
-- them back. Deleted by DELETE_SUBSCRIPTIONGROUP (207). Groups known only
-- from heartbeats have no row (201 answers a default config for them).
CREATE TABLE subscription_groups (
    group_name  TEXT PRIMARY KEY NOT NULL,
    config_json TEXT NOT NULL
                CHECK (CASE WHEN json_valid(config_json) THEN json_type(config_json) = 'object' ELSE 0 END),
    updated_ms  INTEGER NOT NULL
) WITHOUT ROWID;
