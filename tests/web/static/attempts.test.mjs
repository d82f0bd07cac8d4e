// attempts.js: a run's attempts from its managed record, telemetry and launches, a Slurm
// job's starts as its members' launches, and an attempt's members.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { asLaunches, attemptsOf, eventsOf, jobLaunches, lostOf, membersOf, undeliveredOf } from
  "../../../services/web/src/tuneplane/web/static/attempts.js";

// A Slurm job on 2 nodes of 2 tasks each, started twice: node 0 reported both starts, node 1
// only the first; the second start runs.
const job = {
  backend: "slurm", job_id: "77", attempt: 2, attempt_state: "running", nodes: 2, tasks_per_node: 2,
  member_template: "worker{rank}", detail: "",
  collectors: [
    { attempt: 1, node: 0, hostname: "n0", refused: null, undelivered_by_member: { worker1: 3 } },
    { attempt: 1, node: 1, hostname: "", refused: null },
    { attempt: 2, node: 0, hostname: "n0", refused: null },
  ],
};

describe("jobLaunches", () => {
  const states = new Map([[1, "preempted"], [2, "running"]]);
  const launches = jobLaunches(job, (n) => states.get(n));

  test("one launch per member of each start a collector told of; ranks by node and task", () => {
    assert.deepEqual(launches.map((l) => `${l.attempt}:${l.member}`),
      ["1:worker0", "1:worker1", "1:worker2", "1:worker3", "2:worker0", "2:worker1", "2:worker2", "2:worker3"]);
  });

  test("where each ran, what it left undelivered, and an earlier start said to have run again", () => {
    const first = launches.find((l) => l.attempt === 1 && l.member === "worker1");
    assert.deepEqual(first, { attempt: 1, member: "worker1", state: "preempted", node: "n0 · job 77", exit_code: null,
      undelivered: 3, lost: false, detail: "this start of job 77 was preempted; the job ran again" });
    assert.equal(launches.find((l) => l.attempt === 1 && l.member === "worker2").node, "node 1 · job 77");
  });

  test("members of this start no collector told of yet: from the job alone", () => {
    const waiting = launches.filter((l) => l.attempt === 2 && ["worker2", "worker3"].includes(l.member));
    assert.deepEqual(waiting.map((l) => [l.state, l.node, l.undelivered, l.detail]),
      [["running", "job 77", 0, null], ["running", "job 77", 0, null]]);
  });

  test("a job not yet given an id is queued; a refused collector says why", () => {
    const queued = jobLaunches({ ...job, job_id: null, collectors: [], nodes: 1, tasks_per_node: 1 }, () => undefined);
    assert.deepEqual(queued.map((l) => [l.member, l.node, l.state]), [["worker0", "queued", "running"]]);
    const refused = jobLaunches({ ...job, collectors: [{ attempt: 2, node: 0, hostname: "n0", refused: "checksum differs" }],
      nodes: 1, tasks_per_node: 1 }, () => "running");
    assert.deepEqual(refused.map((l) => [l.state, l.detail]), [["refused", "checksum differs"]]);
  });
});

// A Kubernetes Job of 2 indexes that failed: index 0's sidecar reported, index 1's pod was
// deleted with no grace (its emptyDir spool with it).
const kubeJob = {
  backend: "kubernetes", launch_id: 5, job_id: "0c1d-uid", attempt: 1, attempt_state: "failed",
  state: "ended", spool: "emptyDir", nodes: 2, tasks_per_node: 1, member_template: "rank-{rank}",
  detail: "job failed",
  collectors: [
    { attempt: 1, node: 0, hostname: "tuneplane-launch-5-0-ab", refused: null, reported: true,
      undelivered_by_member: {} },
    { attempt: 1, node: 1, hostname: "tuneplane-launch-5-1-cd", refused: null, reported: false },
  ],
  events: [
    { at: "2026-01-01T00:00:09Z", type: "Warning", reason: "Evicted", object: "pod/p", message: "m", count: 1 },
    { at: "2026-01-01T00:00:01Z", type: "Normal", reason: "SuccessfulCreate", object: "job/j", message: "m", count: 1 },
  ],
};

describe("a Kubernetes Job's launches", () => {
  const launches = jobLaunches(kubeJob, () => "failed");

  test("each index's pod and Job are where it ran", () => {
    assert.deepEqual(launches.map((l) => [l.member, l.node]), [
      ["rank-0", "pod tuneplane-launch-5-0-ab"], ["rank-1", "pod tuneplane-launch-5-1-cd"]]);
  });

  test("a sidecar that never reported lost its emptyDir spool, and says so", () => {
    assert.deepEqual(launches.map((l) => l.lost), [false, true]);
    assert.match(launches[1].detail, /spool \(an emptyDir\) was destroyed with it/);
    assert.equal(lostOf(launches), 1);
    assert.equal(lostOf(jobLaunches({ ...kubeJob, spool: "hostPath" }, () => "failed")), 0);
    assert.match(jobLaunches({ ...kubeJob, spool: "hostPath" }, () => "failed")[1].detail,
      /^its collector never reported its drain; job failed$/);
  });

  test("what Kubernetes said of an attempt's Job, oldest first; nothing of another attempt", () => {
    assert.deepEqual(eventsOf([kubeJob], 1).map((e) => e.reason), ["SuccessfulCreate", "Evicted"]);
    assert.deepEqual(eventsOf([kubeJob, { backend: "node", attempt: 2 }], 2), []);
  });

  test("listed among launches as its members", () => {
    assert.deepEqual(asLaunches([kubeJob], null).map((l) => l.member), ["rank-0", "rank-1"]);
  });
});

describe("asLaunches and attemptsOf", () => {
  const managed = { attempts: [{ attempt: 1, state: "preempted" }, { attempt: 2, state: "running" }] };
  const node = { backend: "node", attempt: 10, member: "rank-0", node: "host-1", undelivered: 2 };

  test("node launches as they are; Slurm jobs as their members' launches, with the run's attempt states", () => {
    const launches = asLaunches([node, job], managed);
    assert.equal(launches[0], node);
    assert.equal(launches.length, 1 + 8);
    assert.equal(launches.find((l) => l.attempt === 1).state, "preempted");
  });

  test("attempts by number (10 after 9), each with its managed record, telemetry and launches", () => {
    const telemetry = [{ attempt: 9, points: 5 }, { attempt: 1, points: 7 }];
    const attempts = attemptsOf(managed, telemetry, [node]);
    assert.deepEqual(attempts.map((a) => a.attempt), [1, 2, 9, 10]);
    assert.deepEqual(attempts[0], { attempt: 1, launches: [], telemetry: { attempt: 1, points: 7 }, managed: managed.attempts[0] });
    assert.deepEqual(attempts[3].launches, [node]);
    assert.equal(attempts[2].managed, null);
  });

  test("a run known by its telemetry alone", () => {
    assert.deepEqual(attemptsOf(null, [{ attempt: 1 }], []), [{ attempt: 1, launches: [], telemetry: { attempt: 1 }, managed: null }]);
  });
});

describe("membersOf and undeliveredOf", () => {
  test("those with telemetry and those launched, by name, each with its latest launch", () => {
    const launches = [{ member: "b", state: "failed" }, { member: "c", state: "running" }, { member: "b", state: "running" }];
    const members = membersOf({ launches }, [{ member: "a", points: 1 }, { member: "b", points: 2 }]);
    assert.deepEqual(members.map((m) => m.name), ["a", "b", "c"]);
    assert.deepEqual(members[0], { name: "a", telemetry: { member: "a", points: 1 }, launch: null });
    assert.equal(members[1].launch.state, "running");
    assert.equal(members[2].telemetry, null);
  });

  test("no attempt: no members", () => {
    assert.deepEqual(membersOf(undefined, []), []);
  });

  test("undelivered batches together; none without a launch", () => {
    assert.equal(undeliveredOf([{ undelivered: 2 }, { undelivered: 0 }, { undelivered: 5 }]), 7);
    assert.equal(undeliveredOf([]), null);
  });
});
