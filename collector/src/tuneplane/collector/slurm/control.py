"""A Slurm job's collector's calls to control (``SlurmJobControl``), and the credentials it
holds: the job credential and its members' workload tokens, in this process's memory only.

Transient failures (control restarting, Slurm slow to answer it) are retried with backoff;
a refusal is final and its reason is what the job reports.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass

import grpc
from tenacity import (
    Retrying,
    before_sleep_log,
    retry_if_exception,
    stop_after_delay,
    wait_exponential_jitter,
)

from tuneplane.collector.settings import CollectorSettings
from tuneplane.contract.errors import BROKEN_CALL_CODES, RETRYABLE_CODES
from tuneplane.node.v1 import slurm_pb2 as spb
from tuneplane.node.v1 import slurm_pb2_grpc as spb_grpc

log = logging.getLogger("tuneplane.collector.slurm")
TRANSIENT = RETRYABLE_CODES | BROKEN_CALL_CODES


class JobRefused(RuntimeError):
    """Control refused the call for good; the message says why."""


def job_start(ticket: str, settings: CollectorSettings) -> spb.JobStart:
    """This node and start of the job, from what Slurm sets in a step's environment."""
    if settings.slurm_job_id is None or settings.slurm_node_id is None:
        raise JobRefused("not run as a Slurm job step (SLURM_JOB_ID or SLURM_NODEID unset)")
    return spb.JobStart(ticket=ticket, job_id=settings.slurm_job_id,
                        restart=settings.slurm_restart_count,
                        node_index=settings.slurm_node_id, hostname=socket.gethostname())


def transient(exc: BaseException) -> bool:
    return isinstance(exc, grpc.RpcError) and exc.code() in TRANSIENT


class JobControl:
    def __init__(self, address: str, ca_pem: bytes, server_name: str = "", *,
                 timeout: float = 30.0, patience: float = 120.0) -> None:
        credentials = grpc.ssl_channel_credentials(root_certificates=ca_pem or None)
        options = [("grpc.ssl_target_name_override", server_name)] if server_name else []
        self._channel = grpc.secure_channel(address, credentials, options=options)
        self._stub = spb_grpc.SlurmJobControlStub(self._channel)
        self._timeout = timeout
        self._patience = patience

    def _call(self, name: str, request: object, credential: str | None = None) -> object:
        metadata = (("authorization", f"Bearer {credential}"),) if credential else ()
        method = getattr(self._stub, name)
        try:
            for attempt in Retrying(retry=retry_if_exception(transient),
                                    wait=wait_exponential_jitter(initial=0.5, max=10),
                                    stop=stop_after_delay(self._patience), reraise=True,
                                    before_sleep=before_sleep_log(log, logging.WARNING)):
                with attempt:
                    return method(request, timeout=self._timeout, metadata=metadata)
        except grpc.RpcError as exc:
            raise JobRefused(f"control refused {name}: {exc.code().name}: {exc.details()}"
                             ) from None
        raise AssertionError("unreachable")

    def redeem(self, start: spb.JobStart) -> spb.RedeemReply:
        reply = self._call("Redeem", spb.RedeemRequest(start=start))
        assert isinstance(reply, spb.RedeemReply)
        return reply

    def refuse(self, start: spb.JobStart, reason: str) -> None:
        self._call("Refuse", spb.RefuseRequest(start=start, reason=reason))

    def renew(self, credential: str) -> spb.JobCredentials:
        reply = self._call("Renew", spb.RenewJobRequest(), credential)
        assert isinstance(reply, spb.JobCredentials)
        return reply

    def report(self, credential: str, left: Mapping[str, int], detail: str) -> str:
        """Say how the drain ended: ``left`` batches in each member's spool."""
        reply = self._call("Report", spb.JobNodeReport(
            undelivered_batches=sum(left.values()), detail=detail,
            undelivered_by_member=dict(left)), credential)
        assert isinstance(reply, spb.JobNodeReportReply)
        return reply.attempt_state

    def close(self) -> None:
        self._channel.close()


@dataclass(slots=True)
class Held:
    credential: str
    expires_at: float
    received: float
    tokens: dict[str, str]


class Credentials:
    """The job credential and the members' workload tokens; renewed at half their life."""

    def __init__(self, first: spb.JobCredentials) -> None:
        self._lock = threading.Lock()
        self._held = self._hold(first)

    @staticmethod
    def _hold(credentials: spb.JobCredentials) -> Held:
        return Held(credentials.credential, float(credentials.expires_at), time.time(),
                    {m.member: m.token.token for m in credentials.members})

    @property
    def members(self) -> list[str]:
        with self._lock:
            return sorted(self._held.tokens, key=lambda m: (len(m), m))

    @property
    def credential(self) -> str:
        with self._lock:
            return self._held.credential

    def token(self, member: str) -> str:
        with self._lock:
            return self._held.tokens[member]

    def keep_fresh(self, control: JobControl, stopping: threading.Event) -> None:
        """Renew at half the credentials' life until ``stopping``; a failed renewal is
        retried in a few seconds while the current credentials still serve."""
        while not stopping.is_set():
            with self._lock:
                held = self._held
            due = held.received + (held.expires_at - held.received) / 2
            if stopping.wait(max(0.0, due - time.time())):
                return
            try:
                fresh = control.renew(held.credential)
            except JobRefused as exc:
                log.warning("credentials not renewed: %s", exc)
                stopping.wait(5.0)
                continue
            with self._lock:
                self._held = self._hold(fresh)
            log.info("credentials renewed (until %d)", fresh.expires_at)
