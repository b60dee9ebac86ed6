-- The job counts (orchestration/history/job_counts.py): statement triggers on the job table
-- add a row (type, status, ±n) to orchestration_jobcountdelta per statement that changes
-- jobs, in the changing transaction; a TRUNCATE empties it. Installed by migration 0004.

CREATE OR REPLACE FUNCTION orchestration_job_count_insert() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO orchestration_jobcountdelta (type, status, n)
    SELECT type, status, count(*) FROM new_rows GROUP BY type, status;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION orchestration_job_count_update() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO orchestration_jobcountdelta (type, status, n)
    SELECT type, status, sum(n) FROM (
        SELECT type, status, 1 AS n FROM new_rows
        UNION ALL
        SELECT type, status, -1 AS n FROM old_rows
    ) AS changes GROUP BY type, status HAVING sum(n) <> 0;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION orchestration_job_count_delete() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO orchestration_jobcountdelta (type, status, n)
    SELECT type, status, -count(*) FROM old_rows GROUP BY type, status;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION orchestration_job_count_truncate() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM orchestration_jobcountdelta;
    RETURN NULL;
END $$;

CREATE TRIGGER job_count_insert AFTER INSERT ON orchestration_orchestrationjob
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION orchestration_job_count_insert();
CREATE TRIGGER job_count_update AFTER UPDATE ON orchestration_orchestrationjob
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION orchestration_job_count_update();
CREATE TRIGGER job_count_delete AFTER DELETE ON orchestration_orchestrationjob
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION orchestration_job_count_delete();
CREATE TRIGGER job_count_truncate AFTER TRUNCATE ON orchestration_orchestrationjob
    FOR EACH STATEMENT EXECUTE FUNCTION orchestration_job_count_truncate();

-- The jobs already there (creating the triggers locked out writers until this commits).
INSERT INTO orchestration_jobcountdelta (type, status, n)
SELECT type, status, count(*) FROM orchestration_orchestrationjob GROUP BY type, status;
