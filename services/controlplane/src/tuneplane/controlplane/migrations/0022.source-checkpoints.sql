-- Where each member's source files were read to, by the batches the read models hold: a
-- batch carries its file's position when it was sealed, and the projector keeps, per member
-- and file, that of the batch it projected last (a later spool epoch's, or a higher
-- sequence of the same epoch). A collector beginning a new spool for the member asks ingest
-- for these (GetCheckpoints) and resumes after them, so a destroyed spool doubles nothing.
-- depends: 0021.chunk-walls-read

CREATE TABLE readmodel.source_checkpoints (
    run_id      text    NOT NULL,
    attempt     integer NOT NULL,
    member      text    NOT NULL,
    source      text    NOT NULL,
    file        text    NOT NULL,
    spool_epoch text    NOT NULL,
    sequence    bigint  NOT NULL,
    fingerprint text    NOT NULL,
    generation  bigint  NOT NULL,
    "offset"    bigint  NOT NULL,
    line        bigint  NOT NULL,
    state       text    NOT NULL,
    PRIMARY KEY (run_id, attempt, member, source, file)
);

-- Each spool a member's batches came from (its epoch), with what it delivered: a member of
-- more than one had its spool replaced (a host re-imaged, a spool directory lost), and the
-- run page says so.
CREATE TABLE readmodel.member_spools (
    run_id         text        NOT NULL,
    attempt        integer     NOT NULL,
    member         text        NOT NULL,
    spool_epoch    text        NOT NULL,
    batches        bigint      NOT NULL,
    points         bigint      NOT NULL,
    first_batch_at timestamptz NOT NULL,
    PRIMARY KEY (run_id, attempt, member, spool_epoch)
);

INSERT INTO readmodel.member_spools
SELECT run_id, attempt, member, coalesce(substring(batch_id from '^(.*)-[0-9]+$'), batch_id),
       count(*), sum(points),
       min(projected_at)
FROM readmodel.batch_ledger GROUP BY 1, 2, 3, 4;
