"""The error families every client of the project's gRPC services shares.

A caller decides by family, never by message text: retry the same call later, or give up
on it (the request itself was refused). Database errors are the services' business and
live with their adapter (``tuneplane.common.db``); this package ships to training hosts.
"""

from __future__ import annotations

from typing import Final

import grpc

#: The server is restarting, overloaded or slow: the same call may succeed later.
RETRYABLE_CODES: Final = frozenset({grpc.StatusCode.UNAVAILABLE,
                                    grpc.StatusCode.DEADLINE_EXCEEDED,
                                    grpc.StatusCode.RESOURCE_EXHAUSTED,
                                    grpc.StatusCode.ABORTED})
#: The call broke midway (a proxy, a killed server): clients that reconnect retry it too.
BROKEN_CALL_CODES: Final = frozenset({grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN})
#: A token that is expired or bound elsewhere: passes once the platform rewrites the
#: token file, so the call waits for that instead of being given up.
TOKEN_CODES: Final = frozenset({grpc.StatusCode.UNAUTHENTICATED,
                                grpc.StatusCode.PERMISSION_DENIED})


def retryable(exc: BaseException, codes: frozenset[grpc.StatusCode] = RETRYABLE_CODES) -> bool:
    """True when ``exc`` is a gRPC error whose code is one of ``codes``."""
    return isinstance(exc, grpc.RpcError) and exc.code() in codes
