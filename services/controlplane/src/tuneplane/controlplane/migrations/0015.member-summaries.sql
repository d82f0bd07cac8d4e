-- A read model of what each member's telemetry amounts to (points, batches, first and last
-- projected), kept by the projector in the transaction that adds each batch to the ledger:
-- the runs table reads one row per member instead of summing every batch.
-- depends: 0014.series-run-path

CREATE TABLE readmodel.member_summaries (
    run_id         text        NOT NULL,
    attempt        integer     NOT NULL,
    member         text        NOT NULL,
    points         bigint      NOT NULL,
    batches        bigint      NOT NULL,
    first_batch_at timestamptz NOT NULL,
    last_batch_at  timestamptz NOT NULL,
    PRIMARY KEY (run_id, attempt, member)
);

INSERT INTO readmodel.member_summaries
SELECT run_id, attempt, member, sum(points), count(*), min(projected_at), max(projected_at)
FROM readmodel.batch_ledger GROUP BY run_id, attempt, member;
