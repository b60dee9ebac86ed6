-- The change feed (orchestration_snapshotchange), written in the changing transaction by
-- statement triggers: a row per consumer whose rules changed, per instance whose catalog
-- entry, interfaces or reservation changed, and one with neither for a TRUNCATE
-- (everything). `xid` is the writing transaction: a reader finds the rows of transactions
-- that were running at its last read by it (orchestration/snapshot/changes.py). A trigger
-- with transition tables handles one event, hence one per event. An interface update that
-- only records a latency measurement changes nothing pull offers and is not recorded.


CREATE OR REPLACE FUNCTION orchestration_snapshot_rules() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
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

CREATE OR REPLACE FUNCTION orchestration_snapshot_instances() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO orchestration_snapshotchange (xid, service_instance_id)
        SELECT DISTINCT pg_current_xact_id()::text::bigint, service_instance_id FROM new_rows;
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO orchestration_snapshotchange (xid, service_instance_id)
        SELECT DISTINCT pg_current_xact_id()::text::bigint, service_instance_id FROM old_rows;
    ELSE
        INSERT INTO orchestration_snapshotchange (xid, service_instance_id)
        SELECT pg_current_xact_id()::text::bigint, service_instance_id FROM (
            SELECT service_instance_id FROM new_rows
            UNION SELECT service_instance_id FROM old_rows) AS changed;
    END IF;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION orchestration_snapshot_interfaces() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO orchestration_snapshotchange (xid, service_instance_id)
        SELECT pg_current_xact_id()::text::bigint, service_instance_id FROM store_serviceinstance
        WHERE id IN (SELECT instance_id FROM new_rows);
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO orchestration_snapshotchange (xid, service_instance_id)
        SELECT pg_current_xact_id()::text::bigint, service_instance_id FROM store_serviceinstance
        WHERE id IN (SELECT instance_id FROM old_rows);
    ELSE
        INSERT INTO orchestration_snapshotchange (xid, service_instance_id)
        SELECT pg_current_xact_id()::text::bigint, service_instance_id FROM store_serviceinstance WHERE id IN (
            SELECT n.instance_id FROM new_rows AS n JOIN old_rows AS o ON o.id = n.id
            WHERE (n.instance_id, n.position, n.template_name, n.protocol, n.policy, n.properties) IS DISTINCT FROM
                  (o.instance_id, o.position, o.template_name, o.protocol, o.policy, o.properties)
            UNION
            SELECT o.instance_id FROM new_rows AS n JOIN old_rows AS o ON o.id = n.id
            WHERE n.instance_id <> o.instance_id);
    END IF;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION orchestration_snapshot_locks() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO orchestration_snapshotchange (xid, service_instance_id)
        SELECT DISTINCT pg_current_xact_id()::text::bigint, service_instance_id FROM new_rows;
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO orchestration_snapshotchange (xid, service_instance_id)
        SELECT DISTINCT pg_current_xact_id()::text::bigint, service_instance_id FROM old_rows;
    ELSE
        INSERT INTO orchestration_snapshotchange (xid, service_instance_id)
        SELECT pg_current_xact_id()::text::bigint, service_instance_id FROM (
            SELECT service_instance_id FROM new_rows
            UNION SELECT service_instance_id FROM old_rows) AS changed;
    END IF;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION orchestration_snapshot_truncate() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO orchestration_snapshotchange (xid) VALUES (pg_current_xact_id()::text::bigint);
    RETURN NULL;
END $$;

CREATE TRIGGER snapshot_rules_insert AFTER INSERT ON store_rule
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION orchestration_snapshot_rules();
CREATE TRIGGER snapshot_rules_update AFTER UPDATE ON store_rule
    REFERENCING NEW TABLE AS new_rows OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION orchestration_snapshot_rules();
CREATE TRIGGER snapshot_rules_delete AFTER DELETE ON store_rule
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION orchestration_snapshot_rules();
CREATE TRIGGER snapshot_rules_truncate AFTER TRUNCATE ON store_rule
    FOR EACH STATEMENT EXECUTE FUNCTION orchestration_snapshot_truncate();
CREATE TRIGGER snapshot_instances_insert AFTER INSERT ON store_serviceinstance
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION orchestration_snapshot_instances();
CREATE TRIGGER snapshot_instances_update AFTER UPDATE ON store_serviceinstance
    REFERENCING NEW TABLE AS new_rows OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION orchestration_snapshot_instances();
CREATE TRIGGER snapshot_instances_delete AFTER DELETE ON store_serviceinstance
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION orchestration_snapshot_instances();
CREATE TRIGGER snapshot_instances_truncate AFTER TRUNCATE ON store_serviceinstance
    FOR EACH STATEMENT EXECUTE FUNCTION orchestration_snapshot_truncate();
CREATE TRIGGER snapshot_interfaces_insert AFTER INSERT ON store_serviceinterface
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION orchestration_snapshot_interfaces();
CREATE TRIGGER snapshot_interfaces_update AFTER UPDATE ON store_serviceinterface
    REFERENCING NEW TABLE AS new_rows OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION orchestration_snapshot_interfaces();
CREATE TRIGGER snapshot_interfaces_delete AFTER DELETE ON store_serviceinterface
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION orchestration_snapshot_interfaces();
CREATE TRIGGER snapshot_interfaces_truncate AFTER TRUNCATE ON store_serviceinterface
    FOR EACH STATEMENT EXECUTE FUNCTION orchestration_snapshot_truncate();
CREATE TRIGGER snapshot_locks_insert AFTER INSERT ON orchestration_orchestrationlock
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION orchestration_snapshot_locks();
CREATE TRIGGER snapshot_locks_update AFTER UPDATE ON orchestration_orchestrationlock
    REFERENCING NEW TABLE AS new_rows OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION orchestration_snapshot_locks();
CREATE TRIGGER snapshot_locks_delete AFTER DELETE ON orchestration_orchestrationlock
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION orchestration_snapshot_locks();
CREATE TRIGGER snapshot_locks_truncate AFTER TRUNCATE ON orchestration_orchestrationlock
    FOR EACH STATEMENT EXECUTE FUNCTION orchestration_snapshot_truncate();
