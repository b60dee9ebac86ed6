-- A bulk write (database/bulk_write.py) lists the consumers whose rules it changed beside its
-- one change in the feed: the first of its statements that changes rules records the change
-- and remembers its id for the rest of the transaction; each statement adds its consumers
-- (from its transition tables) to orchestration_bulkchangeconsumer. Readers then read again
-- only those consumers' rules (orchestration/snapshot/state.py).

CREATE OR REPLACE FUNCTION orchestration_feed_bulk_change() RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    recorded bigint;
BEGIN
    IF current_setting('serviceorchestration.bulk_write', true) IS DISTINCT FROM 'on' THEN
        RETURN NULL;
    END IF;
    recorded := NULLIF(current_setting('serviceorchestration.bulk_change', true), '')::bigint;
    IF recorded IS NULL THEN
        INSERT INTO orchestration_snapshotchange (xid) VALUES (pg_current_xact_id()::text::bigint)
            RETURNING id INTO recorded;
        PERFORM set_config('serviceorchestration.bulk_change', recorded::text, true);
    END IF;
    RETURN recorded;
END $$;

CREATE OR REPLACE FUNCTION orchestration_snapshot_rules() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    bulk bigint := orchestration_feed_bulk_change();
BEGIN
    IF bulk IS NOT NULL THEN
        IF TG_OP = 'INSERT' THEN
            INSERT INTO orchestration_bulkchangeconsumer (change_id, consumer)
                SELECT DISTINCT bulk, consumer FROM new_rows ON CONFLICT DO NOTHING;
        ELSIF TG_OP = 'DELETE' THEN
            INSERT INTO orchestration_bulkchangeconsumer (change_id, consumer)
                SELECT DISTINCT bulk, consumer FROM old_rows ON CONFLICT DO NOTHING;
        ELSE
            INSERT INTO orchestration_bulkchangeconsumer (change_id, consumer)
                SELECT bulk, consumer FROM (
                    SELECT consumer FROM new_rows UNION SELECT consumer FROM old_rows) AS changed
                ON CONFLICT DO NOTHING;
        END IF;
        RETURN NULL;
    END IF;
    IF TG_OP = 'INSERT' THEN
        INSERT INTO orchestration_snapshotchange (xid, consumer) SELECT DISTINCT pg_current_xact_id()::text::bigint, consumer FROM new_rows;
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO orchestration_snapshotchange (xid, consumer) SELECT DISTINCT pg_current_xact_id()::text::bigint, consumer FROM old_rows;
    ELSE
        INSERT INTO orchestration_snapshotchange (xid, consumer) SELECT pg_current_xact_id()::text::bigint, consumer FROM (
            SELECT consumer FROM new_rows UNION SELECT consumer FROM old_rows) AS changed;
    END IF;
    RETURN NULL;
END $$;

DROP FUNCTION IF EXISTS orchestration_feed_bulk_write();
