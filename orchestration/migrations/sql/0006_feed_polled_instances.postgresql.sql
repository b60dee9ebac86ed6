-- ServiceRegistry instances behind live subscriptions (serviceregistry/polling.py): one seen
-- for the first time, or whose fingerprint changed at a poll, is a change in the feed too
-- (see 0005_feed.postgresql.sql). A row deleted (no subscription behind it) is not.

CREATE OR REPLACE FUNCTION orchestration_feed_polled_instances() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO orchestration_snapshotchange (xid, service_instance_id)
        SELECT pg_current_xact_id()::text::bigint, instance_id FROM new_rows;
    ELSE
        INSERT INTO orchestration_snapshotchange (xid, service_instance_id)
        SELECT pg_current_xact_id()::text::bigint, n.instance_id
        FROM new_rows AS n JOIN old_rows AS o ON o.id = n.id
        WHERE n.fingerprint IS DISTINCT FROM o.fingerprint OR n.instance_id <> o.instance_id;
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER feed_polled_instances_insert AFTER INSERT ON serviceregistry_polledinstance
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION orchestration_feed_polled_instances();
CREATE TRIGGER feed_polled_instances_update AFTER UPDATE ON serviceregistry_polledinstance
    REFERENCING NEW TABLE AS new_rows OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION orchestration_feed_polled_instances();
