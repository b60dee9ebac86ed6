-- See 0007_feed_flexible_rules.postgresql.sql.

CREATE TRIGGER feed_flexible_rule_insert AFTER INSERT ON store_flexiblerule
BEGIN
    INSERT INTO orchestration_snapshotchange (consumer, service_instance_id) VALUES (
        NEW.consumer,
        CASE WHEN NEW.consumer IS NULL THEN '*|' || NEW.service_definition || '|*' END);
END;

CREATE TRIGGER feed_flexible_rule_update AFTER UPDATE ON store_flexiblerule
BEGIN
    INSERT INTO orchestration_snapshotchange (consumer, service_instance_id) VALUES (
        OLD.consumer,
        CASE WHEN OLD.consumer IS NULL THEN '*|' || OLD.service_definition || '|*' END);
    INSERT INTO orchestration_snapshotchange (consumer, service_instance_id) VALUES (
        NEW.consumer,
        CASE WHEN NEW.consumer IS NULL THEN '*|' || NEW.service_definition || '|*' END);
END;

CREATE TRIGGER feed_flexible_rule_delete AFTER DELETE ON store_flexiblerule
BEGIN
    INSERT INTO orchestration_snapshotchange (consumer, service_instance_id) VALUES (
        OLD.consumer,
        CASE WHEN OLD.consumer IS NULL THEN '*|' || OLD.service_definition || '|*' END);
END;
