-- Bulk writes (database/bulk_write.py): a transaction that declares itself one
-- (`serviceorchestration.bulk_write` set to on, for the transaction) records one change
-- meaning everything, the first time one of its statements changes rules, instead of a row
-- per consumer. Readers handle many changes at once as everything anyway; the rows
-- themselves, uncommitted while a long import runs, slowed every pull's read of the feed.

CREATE OR REPLACE FUNCTION orchestration_feed_bulk_write() RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('serviceorchestration.bulk_write', true) IS DISTINCT FROM 'on' THEN
        RETURN false;
    END IF;
    IF current_setting('serviceorchestration.bulk_write_recorded', true) IS DISTINCT FROM 'on' THEN
        INSERT INTO orchestration_snapshotchange (xid) VALUES (pg_current_xact_id()::text::bigint);
        PERFORM set_config('serviceorchestration.bulk_write_recorded', 'on', true);
    END IF;
    RETURN true;
END $$;

CREATE OR REPLACE FUNCTION orchestration_snapshot_rules() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF orchestration_feed_bulk_write() THEN
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
