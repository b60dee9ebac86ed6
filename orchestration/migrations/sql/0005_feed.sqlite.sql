-- The change feed on SQLite (see 0005_feed.postgresql.sql): row triggers only, and no
-- transaction ids (SQLite commits one writer at a time, so the ids grow in commit order).

CREATE TRIGGER snapshot_rule_insert AFTER INSERT ON store_rule
BEGIN
    INSERT INTO orchestration_snapshotchange (consumer) VALUES (NEW.consumer);
END;

CREATE TRIGGER snapshot_rule_update AFTER UPDATE ON store_rule
BEGIN
    INSERT INTO orchestration_snapshotchange (consumer) VALUES (OLD.consumer);
    INSERT INTO orchestration_snapshotchange (consumer) SELECT NEW.consumer WHERE NEW.consumer <> OLD.consumer;
END;

CREATE TRIGGER snapshot_rule_delete AFTER DELETE ON store_rule
BEGIN
    INSERT INTO orchestration_snapshotchange (consumer) VALUES (OLD.consumer);
END;

CREATE TRIGGER snapshot_instance_insert AFTER INSERT ON store_serviceinstance
BEGIN
    INSERT INTO orchestration_snapshotchange (service_instance_id) VALUES (NEW.service_instance_id);
END;

CREATE TRIGGER snapshot_instance_update AFTER UPDATE ON store_serviceinstance
BEGIN
    INSERT INTO orchestration_snapshotchange (service_instance_id) VALUES (OLD.service_instance_id);
    INSERT INTO orchestration_snapshotchange (service_instance_id) SELECT NEW.service_instance_id WHERE NEW.service_instance_id <> OLD.service_instance_id;
END;

CREATE TRIGGER snapshot_instance_delete AFTER DELETE ON store_serviceinstance
BEGIN
    INSERT INTO orchestration_snapshotchange (service_instance_id) VALUES (OLD.service_instance_id);
END;

CREATE TRIGGER snapshot_interface_insert AFTER INSERT ON store_serviceinterface
BEGIN
    INSERT INTO orchestration_snapshotchange (service_instance_id) VALUES ((SELECT service_instance_id FROM store_serviceinstance WHERE id = NEW.instance_id));
END;

CREATE TRIGGER snapshot_interface_update AFTER UPDATE OF instance_id, position, template_name, protocol, policy, properties ON store_serviceinterface
BEGIN
    INSERT INTO orchestration_snapshotchange (service_instance_id) VALUES ((SELECT service_instance_id FROM store_serviceinstance WHERE id = OLD.instance_id));
    INSERT INTO orchestration_snapshotchange (service_instance_id) SELECT (SELECT service_instance_id FROM store_serviceinstance WHERE id = NEW.instance_id) WHERE NEW.instance_id <> OLD.instance_id;
END;

CREATE TRIGGER snapshot_interface_delete AFTER DELETE ON store_serviceinterface
BEGIN
    INSERT INTO orchestration_snapshotchange (service_instance_id) VALUES ((SELECT service_instance_id FROM store_serviceinstance WHERE id = OLD.instance_id));
END;

CREATE TRIGGER snapshot_lock_insert AFTER INSERT ON orchestration_orchestrationlock
BEGIN
    INSERT INTO orchestration_snapshotchange (service_instance_id) VALUES (NEW.service_instance_id);
END;

CREATE TRIGGER snapshot_lock_update AFTER UPDATE ON orchestration_orchestrationlock
BEGIN
    INSERT INTO orchestration_snapshotchange (service_instance_id) VALUES (OLD.service_instance_id);
    INSERT INTO orchestration_snapshotchange (service_instance_id) SELECT NEW.service_instance_id WHERE NEW.service_instance_id <> OLD.service_instance_id;
END;

CREATE TRIGGER snapshot_lock_delete AFTER DELETE ON orchestration_orchestrationlock
BEGIN
    INSERT INTO orchestration_snapshotchange (service_instance_id) VALUES (OLD.service_instance_id);
END;

