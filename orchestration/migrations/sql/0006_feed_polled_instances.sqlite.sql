-- See 0006_feed_polled_instances.postgresql.sql.

CREATE TRIGGER feed_polled_instance_insert AFTER INSERT ON serviceregistry_polledinstance
BEGIN
    INSERT INTO orchestration_snapshotchange (service_instance_id) VALUES (NEW.instance_id);
END;

CREATE TRIGGER feed_polled_instance_update AFTER UPDATE ON serviceregistry_polledinstance
WHEN NEW.fingerprint IS NOT OLD.fingerprint OR NEW.instance_id <> OLD.instance_id
BEGIN
    INSERT INTO orchestration_snapshotchange (service_instance_id) VALUES (NEW.instance_id);
END;
