"""The served TLS identity, renewed while the listener runs.

gRPC asks for the certificate configuration on every new connection
(``dynamic_ssl_server_credentials``); a renewed identity is handed over once and from then
on every new connection gets it. Connections already open keep theirs. Collectors trust
the CA, which renewal keeps, so they need no change.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import cast

import grpc

from tuneplane.common.gateway.tls import TlsIdentity

log = logging.getLogger("tuneplane.listener")


def configuration(identity: TlsIdentity) -> grpc.ServerCertificateConfiguration:
    return grpc.ssl_server_certificate_configuration(
        [(identity.private_key_pem, identity.certificate_pem)])


class LiveIdentity:
    def __init__(self, identity: TlsIdentity) -> None:
        self.current = identity
        self._handover: grpc.ServerCertificateConfiguration | None = None

    def credentials(self) -> grpc.ServerCredentials:
        # gRPC documents None from the fetcher as "unchanged"; its type stubs omit that.
        fetch = cast("Callable[[], grpc.ServerCertificateConfiguration]", self._fetch)
        return grpc.dynamic_ssl_server_credentials(configuration(self.current), fetch)

    def _fetch(self) -> grpc.ServerCertificateConfiguration | None:
        # Called by gRPC's core on its own threads: only hand over what update() prepared.
        handover, self._handover = self._handover, None
        return handover

    def update(self, identity: TlsIdentity) -> bool:
        """Serve ``identity`` to new connections from now on; False when nothing changed."""
        if identity.certificate_pem == self.current.certificate_pem:
            return False
        self.current = identity
        self._handover = configuration(identity)
        return True

    async def keep_renewed(self, load: Callable[[], Awaitable[TlsIdentity]],
                           every_seconds: float) -> None:
        """Re-read the shared identity every so often (renewing it when it is due)."""
        while True:
            await asyncio.sleep(every_seconds)
            try:
                renewed = self.update(await load())
            except Exception as exc:  # keep serving the current one; say why
                log.warning("could not re-read the shared gateway TLS identity: %s", exc)
                continue
            if renewed:
                log.info("serving the renewed gateway TLS certificate to new connections")
