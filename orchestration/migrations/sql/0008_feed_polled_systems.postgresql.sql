-- The system metadata of live subscriptions' consumers, polled under the flexible store
-- (serviceregistry/polling.py `systems_poll`): a consumer seen for the first time, or whose
-- metadata changed, is a change of that consumer in the feed (see 0005_feed.postgresql.sql),
-- committed with the fingerprint that records it. A row deleted is not.

CREATE OR REPLACE FUNCTION orchestration_feed_polled_systems() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO orchestration_snapshotchange (xid, consumer)
        SELECT pg_current_xact_id()::text::bigint, name FROM new_rows;
    ELSE
        INSERT INTO orchestration_snapshotchange (xid, consumer)
        SELECT pg_current_xact_id()::text::bigint, n.name
        FROM new_rows AS n JOIN old_rows AS o ON o.id = n.id
        WHERE n.fingerprint IS DISTINCT FROM o.fingerprint OR n.name <> o.name;
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER feed_polled_systems_insert AFTER INSERT ON serviceregistry_polledsystem
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION orchestration_feed_polled_systems();
CREATE TRIGGER feed_polled_systems_update AFTER UPDATE ON serviceregistry_polledsystem
    REFERENCING NEW TABLE AS new_rows OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION orchestration_feed_polled_systems();
