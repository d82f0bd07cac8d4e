"""Kubernetes launches: a run's attempt as one Indexed Job of ``indexes`` pods.

Completion index ``i`` is member ``rank-<i>`` (or as the run's integration artifact names
ranks). Each pod runs the user's training container beside the collector as a native sidecar,
in the project's namespace, which the operator maps (control's ``--kubernetes-namespace``),
never the request, and so is where its spools live (control's ``--kubernetes-spool``). The
launch is kept with the Slurm launches (``slurm_launches``, scheduler
``kubernetes``: a Job is a job of ``indexes`` nodes of one task each), so it is queued,
submitted, followed and ended as they are (``job_follow.follow``), and its sidecars
redeem the launch's ticket once per index as a Slurm node's collector does
(``slurm_nodes``). A Job whose pod was preempted or evicted (its ``DisruptionTarget``) ends
its attempt ``preempted``, and the launch is queued again as a new launch, the run's next
attempt (``job_follow.follow``), unless the request said ``requeue: false``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from tuneplane.common.db import Connection
from tuneplane.controlplane import slurm_launches
from tuneplane.controlplane.errors import InvalidLaunch
from tuneplane.controlplane.slurm_launches import ENVIRONMENT_NAME, Queued, member

SCHEDULER = "kubernetes"
MAX_INDEXES = 1024
#: An image reference: [registry/]path[:tag][@sha256:digest], as the kubelet takes it.
IMAGE = re.compile(r"^[a-z0-9][a-z0-9._/:-]{0,254}(@sha256:[0-9a-f]{64})?$")
#: A resource name (cpu, memory, nvidia.com/gpu) and a quantity (500m, 2Gi, 1).
RESOURCE = re.compile(r"^([a-z0-9.-]{1,63}/)?[a-z0-9]([a-z0-9._-]{0,61}[a-z0-9])?$")
QUANTITY = re.compile(r"^[0-9]{1,12}(\.[0-9]{1,6})?([numkMGTPE]|[KMGTPE]i)?$")
#: Set by Tuneplane or by Kubernetes in every training container.
RESERVED = ("TUNEPLANE_", "JOB_COMPLETION_INDEX")
#: The command and environment of one pod, in bytes: every pod of the Job carries them, and
#: control lists the Jobs' pods.
MAX_SPEC_BYTES = 64 * 1024


@dataclass(frozen=True, slots=True)
class PodSpec:
    """What the user chooses of each pod: the training image, and its requests and limits."""

    image: str
    requests: Mapping[str, str] = field(default_factory=dict)
    limits: Mapping[str, str] = field(default_factory=dict)
    #: A Job whose pod was preempted or evicted is followed by a new Job, the next attempt.
    requeue: bool = True

    def check(self) -> None:
        if not IMAGE.fullmatch(self.image):
            raise InvalidLaunch(f"image {self.image!r} is not an image reference "
                                "([registry/]name[:tag][@sha256:digest], lower case)")
        for what, given in (("requests", self.requests), ("limits", self.limits)):
            for name, quantity in given.items():
                if not RESOURCE.fullmatch(name) or not QUANTITY.fullmatch(quantity):
                    raise InvalidLaunch(f"resource {what} {name}={quantity!r}: want a resource "
                                        "name (cpu, memory, nvidia.com/gpu) and a quantity "
                                        "(500m, 2Gi, 1)")

    def options(self) -> dict[str, object]:
        return {"image": self.image, "requests": dict(self.requests),
                "limits": dict(self.limits), "requeue": self.requeue}


def check_environment(environment: Mapping[str, str]) -> None:
    for name, value in environment.items():
        if not ENVIRONMENT_NAME.fullmatch(name) or "\0" in value:
            raise InvalidLaunch(f"environment variable {name!r} needs a name of letters, "
                                "digits and _ and a value without NUL")
        if name.startswith(RESERVED):
            raise InvalidLaunch(f"environment variable {name} is set by Tuneplane or "
                                "Kubernetes")


async def create(conn: Connection, run_id: str, *, indexes: int, pod: PodSpec,
                 command: list[str], environment: Mapping[str, str]) -> Queued:
    """Queue the run's next attempt as an Indexed Job of ``indexes`` pods."""
    if not 1 <= indexes <= MAX_INDEXES:
        raise InvalidLaunch(f"a Kubernetes launch has 1 .. {MAX_INDEXES} indexes "
                            f"(asked {indexes})")
    if not command or any("\0" in arg for arg in command):
        raise InvalidLaunch("a launch needs a command to run (without NUL characters)")
    check_environment(environment)
    pod.check()
    size = len(json.dumps([command, dict(environment)]).encode())
    if size > MAX_SPEC_BYTES:
        raise InvalidLaunch(f"the command and environment take {size} bytes; a Kubernetes "
                            f"launch's are at most {MAX_SPEC_BYTES} (64 KiB), copied into "
                            "every pod")
    async with conn.transaction():
        attempt, template = await slurm_launches.next_attempt(conn, run_id, indexes, 1)
        launch_id = int(await conn.fetchval(
            "INSERT INTO slurm_launches (run_id, attempt, nodes, tasks_per_node, command, "
            "environment, options, spool_root, member_template, scheduler) VALUES ($1, $2, "
            "$3, 1, $4::jsonb, $5::jsonb, $6::jsonb, '', $7, $8) RETURNING launch_id",
            run_id, attempt, indexes, json.dumps(command), json.dumps(dict(environment)),
            json.dumps(pod.options()), template, SCHEDULER))
    return Queued(attempt, launch_id, [member(index, template) for index in range(indexes)])
