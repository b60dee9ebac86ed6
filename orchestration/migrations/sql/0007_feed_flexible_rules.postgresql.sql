-- Flexible store rules (store_flexiblerule, docs/flexible-store.md) in the change feed (see
-- 0005_feed.postgresql.sql): a rule naming its consumer is a change of that consumer's rules;
-- a rule selecting consumers by metadata may concern any consumer of its service definition,
-- and is written as a change of the pseudo instance `*|<serviceDefinition>|*`, which no
-- catalog or ServiceRegistry instance has: the subscriptions of that service definition are
-- evaluated again (subscriptions/services/evaluation.py).

CREATE OR REPLACE FUNCTION orchestration_feed_flexible_rules() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        INSERT INTO orchestration_snapshotchange (xid, consumer, service_instance_id)
        SELECT DISTINCT pg_current_xact_id()::text::bigint, consumer,
               CASE WHEN consumer IS NULL THEN '*|' || service_definition || '|*' END
        FROM new_rows;
    END IF;
    IF TG_OP IN ('DELETE', 'UPDATE') THEN
        INSERT INTO orchestration_snapshotchange (xid, consumer, service_instance_id)
        SELECT DISTINCT pg_current_xact_id()::text::bigint, consumer,
               CASE WHEN consumer IS NULL THEN '*|' || service_definition || '|*' END
        FROM old_rows;
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER feed_flexible_rules_insert AFTER INSERT ON store_flexiblerule
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION orchestration_feed_flexible_rules();
CREATE TRIGGER feed_flexible_rules_update AFTER UPDATE ON store_flexiblerule
    REFERENCING NEW TABLE AS new_rows OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION orchestration_feed_flexible_rules();
CREATE TRIGGER feed_flexible_rules_delete AFTER DELETE ON store_flexiblerule
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION orchestration_feed_flexible_rules();
CREATE TRIGGER feed_flexible_rules_truncate AFTER TRUNCATE ON store_flexiblerule
    FOR EACH STATEMENT EXECUTE FUNCTION orchestration_snapshot_truncate();
