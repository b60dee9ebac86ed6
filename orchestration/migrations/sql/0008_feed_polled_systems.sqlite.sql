-- See 0008_feed_polled_systems.postgresql.sql.

CREATE TRIGGER feed_polled_system_insert AFTER INSERT ON serviceregistry_polledsystem
BEGIN
    INSERT INTO orchestration_snapshotchange (consumer) VALUES (NEW.name);
END;

CREATE TRIGGER feed_polled_system_update AFTER UPDATE ON serviceregistry_polledsystem
WHEN NEW.fingerprint IS NOT OLD.fingerprint OR NEW.name <> OLD.name
BEGIN
    INSERT INTO orchestration_snapshotchange (consumer) VALUES (NEW.name);
END;
